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

#[test]
fn json_has_the_numbers_and_the_owner_of_each_write() {
    let report = json(&run_kolo(&["agent", "plan", "--state", STATE, "-o", "json"], None));
    assert_eq!(report["probe"], "slow");
    let writes = report["writes"].as_array().unwrap();
    // The budget worked out by hand in the module docs, as numbers.
    let quota = writes.iter().find(|w| w["file"] == "cpu.cfs_quota_us" && w["pod"].is_null());
    let budget = &quota.expect("the BE quota")["figures"];
    assert_eq!(budget["kind"], "beBudget");
    let milli = |k: &str| budget[k].as_i64().unwrap();
    let terms = (milli("budgetMilli"), milli("nonBeMilli"), milli("systemMilli"));
    assert_eq!(terms, (3400, 6000, 1000));
    assert_eq!(budget["thresholdPercent"], 65);
    // Writes name the pod and container whose cgroup they go to.
    let spark1 = "kubepods/besteffort/pod0000bbbb-0000-4000-8000-000000000002";
    for w in writes.iter().filter(|w| w["cgroup"].as_str().unwrap().starts_with(spark1)) {
        assert_eq!(w["pod"], "batch/spark-1", "{w}");
        let container = w["cgroup"].as_str().unwrap() != spark1;
        assert_eq!(w["container"].as_str(), container.then_some("executor"), "{w}");
    }
    assert!(
        writes.iter().filter(|w| w["pod"].is_null()).all(|w| w["cgroup"] == "kubepods/besteffort")
    );
    // Memory eviction: 93 % ≥ 70 %, down to 68 %: 25 % of 64 GiB; each
    // pod releases its usage.
    let evictions = report["evictions"].as_array().unwrap();
    let gib = 1i64 << 30;
    for (e, pod_gib) in evictions.iter().zip([10, 22]) {
        let f = &e["figures"];
        assert_eq!(f["kind"], "memoryRelease", "{e}");
        let n = |k: &str| f[k].as_i64().unwrap();
        assert_eq!((n("usagePercent"), n("thresholdPercent"), n("lowerPercent")), (93, 70, 68));
        assert_eq!(n("releaseTargetBytes"), 16 * gib);
        assert_eq!(n("podBytes"), pod_gib * gib, "{e}");
        assert!(e["uid"].as_str().unwrap().starts_with("0000"), "{e}");
    }
    assert_eq!(report["heldBack"], serde_json::json!([]));
}

#[test]
fn the_cpu_topology_places_the_be_cpuset() {
    // cpuset suppression: BE gets 4 of 16 CPUs (budget 3400m → 4). Without
    // a topology they are CPUs 0-3; with hyper-threads numbered Linux's way
    // (CPU c and c + 8 share core c), whole cores go first: 0-1 and 8-9.
    let original = std::fs::read_to_string(common::workspace_root().join(STATE)).unwrap();
    let cpuset = original.replace("    cpuSuppressPolicy: cfsQuota\n", "");
    assert_ne!(cpuset, original);
    let cores: Vec<String> = (0..16).map(|c| format!("{c}: [0, {}]", c % 8)).collect();
    let topology = cpuset.replace(
        "  beCpus: \"0-15\"\n",
        &format!("  beCpus: \"0-15\"\n  cpuCores: {{{}}}\n", cores.join(", ")),
    );
    assert_ne!(topology, cpuset);
    let dir = tempfile::tempdir().unwrap();
    let plan = |text: &str| {
        let file = dir.path().join("state.yaml");
        std::fs::write(&file, text).unwrap();
        let report = json(&run_kolo(
            &["agent", "plan", "--state", file.to_str().unwrap(), "-o", "json"],
            None,
        ));
        let be = report["writes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["cgroup"] == "kubepods/besteffort" && w["file"] == "cpuset.cpus");
        be.map(|w| (w["value"].as_str().unwrap().to_string(), w["figures"]["budgetMilli"].clone()))
    };
    assert_eq!(plan(&cpuset), Some(("0-3".to_string(), serde_json::json!(3400))));
    assert_eq!(plan(&topology), Some(("0-1,8-9".to_string(), serde_json::json!(3400))));
    // A BE CPU the topology leaves out is an error naming the field.
    let bad = topology.replace("15: [0, 7]", "");
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, bad.replace(", }", "}")).unwrap();
    let out = run_kolo(&["agent", "plan", "--state", file.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("$.node.cpuCores: BE CPU 15 has no [socket, core]"), "{err}");
}
