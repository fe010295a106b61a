//! Feeds arbitrary UTF-8 to the snapshot loader (`kolo ... --snapshot`): JSON
//! (a single object, a `List`, a bare array) or YAML (documents, list
//! documents, the block-YAML fast path and serde-saphyr). Nothing may panic;
//! every error names the input; loading is deterministic (pieces decode on
//! several threads).
#![no_main]

use kolo_core::snapshot::Snapshot;
use libfuzzer_sys::fuzz_target;

const SOURCE: &str = "fuzz-input";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Snapshot::parse(text, SOURCE) {
        Ok(snapshot) => {
            let again = Snapshot::parse(text, SOURCE).expect("a second load of the same text");
            assert_eq!(snapshot.object_count(), again.object_count(), "{text:?}");
        }
        Err(err) => {
            let message = err.to_string();
            assert!(message.contains(SOURCE), "error does not name the input: {message}");
        }
    }
});
