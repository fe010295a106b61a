//! Feeds arbitrary text to every key of the `slo-controller-config`
//! ConfigMap. Whatever the text, the store must not panic, must keep the
//! previous good value of a key it rejects, and every error must name its
//! key and a JSON path.
#![no_main]

use std::collections::BTreeMap;

use kolo_manager::config::SloConfigStore;
use kolo_manager::nodeslo::render_node_slo;
use libfuzzer_sys::fuzz_target;

const KEYS: [&str; 6] = [
    "colocation-config",
    "resource-threshold-config",
    "resource-qos-config",
    "cpu-burst-config",
    "system-config",
    "host-application-config",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut store = SloConfigStore::new();
    let good: BTreeMap<String, String> =
        BTreeMap::from([("colocation-config".to_string(), r#"{"enable":true}"#.to_string())]);
    store.update(Some(&good));
    let before = store.config();
    // The first byte picks the key, the rest is its value.
    let key = KEYS[text.len() % KEYS.len()];
    let config_map = BTreeMap::from([(key.to_string(), text.to_string())]);
    store.update(Some(&config_map));
    for error in &store.status().errors {
        assert!(error.starts_with(&format!("{key}: $")), "{error}");
    }
    if !store.status().errors.is_empty() && key == "colocation-config" {
        assert_eq!(store.config().colocation, before.colocation, "last good value kept");
    }
    let labels = BTreeMap::from([("pool".to_string(), text.chars().take(8).collect::<String>())]);
    let _ = render_node_slo(&store.config().slo, "node", &labels, &labels);
});
