//! Feeds arbitrary UTF-8 to kolo's block-style YAML reader, the loader's fast
//! path. It may refuse anything, but whatever it reads must be exactly what
//! serde-saphyr (the slow path) reads from the same text.
#![no_main]

use kolo_core::snapshot::parse_block_yaml;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(ours) = parse_block_yaml(text) else {
        return;
    };
    match serde_saphyr::from_str::<serde_json::Value>(text) {
        Ok(theirs) => assert_eq!(ours, theirs, "{text:?}"),
        Err(err) => panic!("{text:?} reads as {ours}, but serde-saphyr fails: {err}"),
    }
});
