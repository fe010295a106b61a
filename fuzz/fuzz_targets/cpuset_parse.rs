//! Parses arbitrary UTF-8 as a Linux cpulist (`"0-3,8,10-11"`), the format
//! of every cpuset annotation kolo reads. Nothing may panic; every error
//! quotes (the start of) its input; whatever parses prints in canonical form
//! and parses back to the same set.
#![no_main]

use kolo_core::cpuset::{CpuSet, MAX_CPU_ID};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let set = match CpuSet::parse(text) {
        Ok(set) => set,
        Err(err) => {
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("invalid cpuset {:?}: ", err.input)),
                "{message}"
            );
            return;
        }
    };
    assert!(set.iter().all(|cpu| cpu <= MAX_CPU_ID), "{text:?}");
    assert_eq!(set.iter().count(), set.len());
    let printed = set.to_string();
    let reparsed = CpuSet::parse(&printed)
        .unwrap_or_else(|err| panic!("{text:?} printed as {printed:?}, which fails: {err}"));
    assert_eq!(reparsed, set, "{text:?} printed as {printed:?}");
    assert_eq!(reparsed.to_string(), printed, "canonical form is a fixed point");
});
