//! `kolo agent plan` on `examples/agent/node-state.yaml`.
//!
//! By hand: 16 cores, suppression threshold 65 %, the LS pod uses 6 cores,
//! system = node 11 − pods (6 + 3 + 1) = 1 core (= reserved 1 core):
//! BE budget = 16 × 0.65 − 6 − 1 = 3.4 cores → cfs quota 340000 (cfsQuota
//! policy). Memory: 60 GiB of 64 GiB = 93 % ≥ 70 %; lower 68 %; release
//! 64 GiB × 25 % = 16 GiB: spark-2 (priority 5100, 10 GiB) first, then
//! spark-1 (5500, 22 GiB). BE isolation: `cpu.idle = 1` on the BE QoS
//! dir; batch limits: spark-1's 2000m batch-cpu request → 2048 shares. The
//! LS pod is never touched.

mod common;
use common::{json, run_kolo};

const STATE: &str = "examples/agent/node-state.yaml";

#[test]
fn plans_suppression_and_memory_eviction_of_be_pods_only() {
    let report = json(&run_kolo(&["agent", "plan", "--state", STATE, "-o", "json"], None));
    let writes = report["writes"].as_array().unwrap();
    let quota = writes
        .iter()
        .find(|w| w["strategy"] == "cpuSuppress" && w["file"] == "cpu.cfs_quota_us")
        .expect("a quota write");
    assert_eq!(quota["cgroup"], "kubepods/besteffort");
    let idle = writes.iter().find(|w| w["file"] == "cpu.idle").expect("BE isolation");
    assert_eq!(
        (idle["cgroup"].as_str(), idle["value"].as_str()),
        (Some("kubepods/besteffort"), Some("1"))
    );
    // spark-1's batch-cpu request 2000 → shares 2048; its batch-memory limit 24Gi.
    let shares = writes
        .iter()
        .find(|w| {
            w["file"] == "cpu.shares" && w["cgroup"].as_str().unwrap().ends_with("000000000002")
        })
        .expect("batch shares");
    assert_eq!(shares["value"], "2048");
    assert_eq!(quota["value"], "340000");
    assert!(quota["reason"].as_str().unwrap().contains("3400m"), "{quota}");
    let evicted: Vec<&str> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    assert_eq!(evicted, ["batch/spark-2", "batch/spark-1"]);
    for w in writes {
        assert!(!w["cgroup"].as_str().unwrap().contains("burstable"), "LS pod touched: {w}");
    }
}

#[test]
fn text_output_and_bad_state_files() {
    let out = run_kolo(&["agent", "plan", "--state", STATE], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("write  kubepods/besteffort/cpu.cfs_quota_us = 340000   [cpuSuppress]"),
        "{text}"
    );
    assert!(text.contains("evict  batch/spark-2   [memoryEvict]"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("state.yaml");
    let original = std::fs::read_to_string(common::workspace_root().join(STATE)).unwrap();
    std::fs::write(&bad, original.replace("containers: {nginx:", "containers: {sidecar:")).unwrap();
    let out = run_kolo(&["agent", "plan", "--state", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("$.pods[0].containers.sidecar: no such container in the pod"), "{err}");
}
