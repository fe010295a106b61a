//! `kolo bench runtime-proxy` end to end, short, against the test
//! containerd (`KOLO_TEST_CRI_SOCKET`, `KOLO_TEST_CRI_CGROUP_ROOT`, which
//! scripts/test exports): it starts `kolo runtime-proxy`, measures each call
//! both ways, and leaves no pod behind. The figures in docs/benchmarks.md
//! come from the full-length command.

mod common;

#[test]
fn runtime_proxy_bench_measures_each_call_both_ways() {
    let test = "runtime_proxy_bench_measures_each_call_both_ways";
    let Some((socket, root)) = kolo_runtime_proxy::testing::test_runtime(test) else { return };
    let socket = socket.to_str().unwrap();
    let out = common::kolo()
        .args(["bench", "runtime-proxy", "--runtime-endpoint", socket, "--cgroup-root", &root])
        .args(["--containers", "4", "--lists", "6", "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "kolo bench runtime-proxy failed:\n{stderr}");
    let figures: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls: Vec<(&str, u64, u64)> = figures
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let n = |way: &str| f[way]["samples"].as_u64().unwrap();
            (f["call"].as_str().unwrap(), n("direct"), n("proxied"))
        })
        .collect();
    assert_eq!(
        calls,
        [("CreateContainer", 2, 2), ("StartContainer", 2, 2), ("ListContainers", 3, 3)]
    );
    for f in figures.as_array().unwrap() {
        for way in ["direct", "proxied"] {
            let (p50, p99) =
                (f[way]["p50_us"].as_f64().unwrap(), f[way]["p99_us"].as_f64().unwrap());
            assert!(p50 > 0.0 && p99 >= p50, "{f}");
        }
    }
    // The bench's pod is gone from the runtime (none of its sandboxes left).
    let pods = std::process::Command::new("ctr")
        .args(["-a", socket, "-n", "k8s.io", "containers", "ls", "-q"])
        .output()
        .unwrap();
    assert!(pods.status.success());
    assert_eq!(String::from_utf8_lossy(&pods.stdout).trim(), "", "containers left behind");
}
