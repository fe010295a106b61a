//! `kolo bench interference` on the real node (`scripts/cluster`), short:
//! the LS pod and the BE hog pods run under the kubelet, every run of
//! every load and pattern completes, BE gets CPU next to LS under
//! Kubernetes' defaults, and the benchmark's namespace is gone afterwards.
//! (The figures in docs/benchmarks.md come from full-length runs; this
//! asserts structure, not timing.)
//!
//! Needs `KOLO_TEST_NODE_KUBECONFIG`, `KOLO_TEST_NODE_NAME`,
//! `KOLO_TEST_NODE_KUBELET` and `KOLO_TEST_NODE_CGROUP_ROOT` (set by
//! `scripts/test`); skips loudly without them.

mod common;
mod node_common;

use node_common::real_node;

#[test]
fn interference_bench_runs_on_the_real_node() {
    let Some(node) = real_node("node_bench_interference") else { return };
    let out = common::kolo()
        .args(["bench", "interference", "--kubeconfig"])
        .arg(&node.config)
        .args(["--node-name", &node.name, "--kubelet", &node.kubelet])
        .args(["--kubelet-cgroup-root", &node.cgroup_root])
        .args(["--seconds", "2", "--warmup", "1", "--settle", "2"])
        .args(["--loads", "40", "--arrivals", "steady,bursty", "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kolo bench interference failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["mode"], "node");
    let runs = report["runs"].as_array().unwrap();
    let keys: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| (r["arrivals"].as_str().unwrap(), r["name"].as_str().unwrap()))
        .collect();
    let setups =
        ["LS alone", "LS + BE, Kubernetes defaults", "LS + BE, kolo defaults (cpuset 65 %)"];
    let expected: Vec<(&str, &str)> =
        ["steady", "bursty"].iter().flat_map(|a| setups.iter().map(move |s| (*a, *s))).collect();
    assert_eq!(keys, expected);
    for run in runs {
        let name = format!("{} {}", run["arrivals"], run["name"]);
        let lat = &run["latency"];
        // 200 requests/s for 2 s; every arrival of the window is served.
        let requests = lat["requests"].as_u64().unwrap();
        assert!(requests >= 100, "{name}: {requests} requests");
        let p = |k: &str| lat[k].as_f64().unwrap();
        assert!(p("p50_us") <= p("p99_us") && p("p99_us") <= p("p999_us"), "{name}: {lat}");
        assert!(p("p999_us") <= p("max_us"), "{name}: {lat}");
        assert!(run["ls_cores"].as_f64().unwrap() > 0.0, "{name}: the LS container used no CPU");
    }
    for (i, run) in runs.iter().enumerate() {
        let be = run["be_cores"].as_f64().unwrap();
        match i % 3 {
            0 => assert_eq!(be, 0.0, "no BE pod runs beside LS alone"),
            // The hogs ran in the BE pods' cgroups, beside the request loop.
            1 => assert!(be > 0.0, "BE got no CPU under Kubernetes defaults: {run}"),
            _ => {}
        }
    }
    // The namespace (and so the pods) is gone.
    let namespace = report["namespace"].as_str().unwrap();
    let (_, get) =
        common::try_run(common::kubectl(&node.config).args(["get", "namespace", namespace]), None);
    assert!(!get.status.success(), "namespace {namespace} is still there");
}
