//! Feeds arbitrary text to `kolo agent plan` as its node state file (YAML or
//! JSON: the node's capacity and usage, Pod objects with their annotations,
//! the BE cgroup's values and a NodeSLO spec). Nothing may panic, neither
//! reading the file nor planning a round from what it read: every QoS
//! strategy reads the NodeSLO spec and the pods' annotations
//! (resource-status, Katalyst QoS level, ...).
#![no_main]

use kolo_agent::qos::state_file::parse_state;
use kolo_core::clock::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let now = Timestamp::from_second(1_795_000_000).expect("a fixed time");
    let Ok(mut input) = parse_state(text, now) else { return };
    let _ = input.plan();
});
