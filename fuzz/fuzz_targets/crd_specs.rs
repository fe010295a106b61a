//! Feeds arbitrary text to the readers of NodeSLO and NodeMetric objects:
//! the API server's JSON (as the agent's and the manager's watches decode
//! it) and the agent's `--node-slo` file (YAML or JSON, an object or just
//! its spec). The first byte picks the reader. Nothing may panic; a decoded
//! NodeMetric goes through the agent's collect policy and kolo-core's usage
//! report, a NodeSLO spec serializes back. (The strategies' reading of a spec is
//! fuzzed by `agent_state`, whose state file carries one.)
#![no_main]

use kolo_agent::nodemetric::CollectPolicy;
use kolo_api::crd::{NodeMetric, NodeMetricSpec, NodeSLO, NodeSLOSpec};
use kolo_core::usage_report::NodeUsageReport;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match selector % 4 {
        0 => {
            if let Ok(slo) = serde_json::from_str::<NodeSLO>(text) {
                check_slo(&slo.spec);
            }
        }
        1 => {
            // `kolo agent --node-slo FILE`: YAML or JSON, object or spec.
            if let Ok(spec) = kolo_agent::qos::state_file::node_slo_spec(text) {
                check_slo(&spec);
            }
        }
        2 => {
            if let Ok(metric) = serde_json::from_str::<NodeMetric>(text) {
                let policy = CollectPolicy::from_spec(&metric.spec);
                assert!(policy.report_interval.as_secs() >= 30);
                let report = NodeUsageReport::read(&metric);
                let _ = report.errors.len();
            }
        }
        _ => {
            if let Ok(spec) = serde_json::from_str::<NodeMetricSpec>(text) {
                let policy = CollectPolicy::from_spec(&spec);
                assert!(policy.durations.iter().all(|d| !d.duration.is_zero()));
            }
        }
    }
});

/// A decoded spec serializes (the agent reports what it follows).
fn check_slo(spec: &NodeSLOSpec) {
    let _ = kolo_agent::qos::batch_resource::cfs_quota_suppressed(spec);
    serde_json::to_string(spec).expect("a spec serializes");
}
