//! `kolo bench interference` end to end, short: the four runs complete on
//! real cgroups and their figures are consistent with what each run sets
//! up. (The figures recorded in docs/benchmarks.md come from the full-length
//! command on an idle machine; this only checks that the command works and
//! measures what it says.) Skips loudly without root or cgroup v1.

use kolo_agent::sandbox::{TestCgroups, skip};

mod common;

#[test]
fn interference_bench_runs_and_measures_each_setup() {
    let test = "interference_bench_runs_and_measures_each_setup";
    // Probe for real cgroups the way the benchmark needs them.
    if let Err(reason) = TestCgroups::new() {
        return skip(test, &reason);
    }
    let out = common::kolo()
        .args(["bench", "interference", "--seconds", "3", "--warmup", "1", "--settle", "3"])
        .args(["--surges", "1", "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains(kolo_bench::interference::UNMEASURABLE) {
        // Work outside the test counts as LS load, so suppression already
        // holds BE at its floor and the surge has nothing left to cut.
        return skip(test, &format!("the machine is too busy: {}", stderr.trim()));
    }
    assert!(out.status.success(), "kolo bench interference failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpus = report["cpus"].as_f64().unwrap();
    let runs = report["runs"].as_array().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "LS alone",
            "LS + BE, Kubernetes defaults",
            "LS + BE, kolo defaults (cpuset 65 %)",
            "LS + BE, kolo, cfsQuota 90 %"
        ]
    );
    for run in runs {
        let name = run["name"].as_str().unwrap();
        // 200 requests/s for 3 s, open loop: every arrival is served.
        let requests = run["latency"]["requests"].as_u64().unwrap();
        assert!((590..=610).contains(&requests), "{name}: {requests} requests");
        let lat = &run["latency"];
        let (p50, p99, max) = (
            lat["p50_us"].as_f64().unwrap(),
            lat["p99_us"].as_f64().unwrap(),
            lat["max_us"].as_f64().unwrap(),
        );
        // Each request is 2 ms of CPU work, calibrated at start; a CPU
        // whose clock rises after calibration does it faster, so the
        // bound leaves room for that (a request never takes under 60 %).
        assert!(p50 >= 1200.0 && p50 <= p99 && p99 <= max, "{name}: {lat}");
        // The LS cgroup's CPU is the request loop's: 40 % of a core.
        let ls = run["ls_cores"].as_f64().unwrap();
        assert!((0.25..0.7).contains(&ls), "{name}: LS used {ls:.2} cores");
    }
    assert_eq!(runs[0]["be_cores"].as_f64().unwrap(), 0.0, "no BE pod runs alone");
    // Under Kubernetes defaults the hogs take what LS leaves.
    let be_default = runs[1]["be_cores"].as_f64().unwrap();
    assert!(be_default > cpus - 1.0, "BE under defaults used {be_default:.2} cores");
    // kolo's defaults isolate BE but still let it use the idle CPU.
    let be_defaults = runs[2]["be_cores"].as_f64().unwrap();
    assert!(be_defaults > 0.1, "BE under kolo defaults used {be_defaults:.2} cores");
    // With CFS-quota suppression the BE QoS cgroup has a quota: BE gets
    // something, and at most what the quota allows.
    let be_kolo = runs[3]["be_cores"].as_f64().unwrap();
    assert!(be_kolo > 0.0 && be_kolo < cpus * 0.9 + 0.05, "BE under kolo used {be_kolo:.2} cores");
    let reaction = &report["reaction"];
    assert_eq!(reaction["ms"].as_array().unwrap().len(), 1, "{reaction}");
}
