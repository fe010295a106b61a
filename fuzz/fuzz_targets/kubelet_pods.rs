//! Feeds arbitrary bytes to the agent as the kubelet's `/pods` HTTP
//! response (status line, headers, chunked or sized body, PodList JSON).
//! Nothing may panic; a body over the limit is refused as too large.
#![no_main]

use kolo_agent::pods::kubelet::{KubeletErrorKind, parse_pods_response};
use libfuzzer_sys::fuzz_target;

/// A small limit, so the fuzzer reaches the too-large paths.
const MAX_BODY: usize = 4096;

fuzz_target!(|data: &[u8]| {
    match parse_pods_response(data, MAX_BODY) {
        Ok(pods) => assert!(pods.len() <= data.len(), "more pods than bytes"),
        Err(KubeletErrorKind::TooLarge { limit }) => assert_eq!(limit, MAX_BODY),
        Err(_) => {}
    }
});
