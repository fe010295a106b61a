//! `kolo sim` end to end on a small scenario: the summary's invariants, the
//! report files, determinism, and errors that name the file and field.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn kolo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kolo"))
}

fn scenario() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios/small.yaml")
        .display()
        .to_string()
}

/// Runs the small scenario with `--out dir`; returns summary.json.
fn run(dir: &Path, extra: &[&str]) -> Value {
    run_with_threads(dir, extra, None)
}

/// [`run`] with rayon's pool limited to `threads`.
fn run_with_threads(dir: &Path, extra: &[&str], threads: Option<usize>) -> Value {
    let mut command = kolo();
    if let Some(n) = threads {
        command.env("RAYON_NUM_THREADS", n.to_string());
    }
    let out = command
        .args(["sim", "--no-progress", "--scenario", &scenario(), "--out"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn policy<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["policies"].as_array().unwrap().iter().find(|p| p["policy"] == name).unwrap()
}

fn without_wall_time(mut v: Value) -> Value {
    for p in v["policies"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.remove("wallSeconds");
        p.remove("decisionsPerSecond");
    }
    v
}

#[test]
fn summary_invariants_report_and_determinism() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), &[]);
    for p in summary["policies"].as_array().unwrap() {
        let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k} in {p}"));
        let u = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k} in {p}"));
        for k in
            ["cpuUtilizationAvg", "cpuUtilizationP95", "lsOnlyUtilizationAvg", "lsStarvedShare"]
        {
            assert!((0.0..=1.0).contains(&f(k)), "{k} = {}", f(k));
        }
        // Every BE pod submitted is in exactly one state at the end.
        assert_eq!(
            u("bePodsSubmitted"),
            u("bePodsCompleted")
                + u("bePodsEvicted")
                + u("bePodsOomKilled")
                + u("bePodsRunning")
                + u("bePodsPending"),
            "{p}"
        );
        assert_eq!(u("lsPodsEvicted"), 0, "no LS pod is ever evicted: {p}");
        assert_eq!(u("lsPodsPending"), 0, "{p}");
        assert!(u("bePodsCompleted") > 0, "{p}");
        assert!(f("lsLatencyProxyP99") >= 1.0);
    }
    let base = policy(&summary, "baseline")["cpuUtilizationAvg"].as_f64().unwrap();
    let colo = policy(&summary, "colocation")["cpuUtilizationAvg"].as_f64().unwrap();
    assert!(colo > base, "colocation {colo} <= baseline {base}");
    assert!(policy(&summary, "colocation")["allocatableUpdates"].as_u64().unwrap() > 0);

    // Per-step CSV: one row per step (3 h / 10 s), utilization in [0, 1].
    let csv = std::fs::read_to_string(dir.path().join("steps-colocation.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3 * 360);
    for row in rows {
        let u: f64 = row.split(',').nth(1).unwrap().parse().unwrap();
        assert!((0.0..=1.0).contains(&u), "{row}");
    }
    // A self-contained page with the plots.
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    // The evictions plot, or a sentence when there were none.
    let quiet = ["baseline", "colocation"].iter().all(|p| {
        let s = policy(&summary, p);
        s["bePodsEvicted"].as_u64() == Some(0) && s["bePodsOomKilled"].as_u64() == Some(0)
    });
    let plots = if quiet { 7 } else { 8 };
    assert!(html.matches("<svg").count() >= plots, "plots missing");
    assert_eq!(html.contains("No evictions and no OOM kills"), quiet);
    // The story: a headline with the result and its cost.
    assert!(html.contains("average CPU utilization from"), "no headline");
    assert!(!html.contains("plot failed"));
    assert!(!html.contains("<script") && !html.contains("src=\"http"));

    // Same seed, same numbers.
    let again = run(tempfile::tempdir().unwrap().path(), &[]);
    assert_eq!(without_wall_time(summary.clone()), without_wall_time(again));
    // Whatever the threads: one thread, or four with the policies run side
    // by side.
    for (threads, extra) in [(1, &[][..]), (4, &["--parallel"][..])] {
        let other = run_with_threads(tempfile::tempdir().unwrap().path(), extra, Some(threads));
        assert_eq!(
            without_wall_time(summary.clone()),
            without_wall_time(other),
            "{threads} threads {extra:?}"
        );
    }
    // Another seed, another workload.
    let other =
        run(tempfile::tempdir().unwrap().path(), &["--seed", "8", "--policies", "colocation"]);
    assert_ne!(
        policy(&other, "colocation")["bePodsSubmitted"],
        policy(&summary, "colocation")["bePodsSubmitted"]
    );
}

#[test]
fn text_summary_and_errors() {
    let out = kolo()
        .args([
            "sim",
            "--no-progress",
            "--scenario",
            &scenario(),
            "--hours",
            "0.5",
            "--policies",
            "colocation",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("CPU utilization, average") && text.contains("colocation"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "cluster:\n  nodeGroups:\n  - {name: a, count: 2, cpu: 8, memoryGib: lots}\n",
    )
    .unwrap();
    let out = kolo().args(["sim", "--no-progress", "--scenario"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.yaml") && err.contains("cluster.nodeGroups[0].memoryGib"), "{err}");

    let out = kolo().args(["sim", "--no-progress", "--policies", "nope"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("unknown policy \"nope\""));
}

fn snapshot_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios/snapshot-cluster.yaml")
        .display()
        .to_string()
}

#[test]
fn starts_from_a_snapshot() {
    let run = |seed: &str| {
        let out = kolo()
            .args(["sim", "--no-progress", "--scenario", &scenario(), "--snapshot"])
            .arg(snapshot_file())
            .args(["--hours", "1", "--seed", seed, "-o", "json"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (serde_json::from_slice::<Value>(&out.stdout).unwrap(), stderr)
    };
    let (summary, stderr) = run("7");
    // The example has 4 nodes and 12 running or pending non-BE pods; its 2
    // BE pods and 1 finished pod are left out.
    assert!(
        stderr.contains("4 nodes, 12 LS pods") && stderr.contains("skipped 2 BE and 1 finished"),
        "{stderr}"
    );
    assert!(summary["scenario"].as_str().unwrap().contains("snapshot-cluster.yaml"), "{summary}");
    for p in summary["policies"].as_array().unwrap() {
        let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k} in {p}"));
        let u = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k} in {p}"));
        assert_eq!(u("nodes"), 4, "{p}");
        assert_eq!(u("lsPods"), 12, "{p}");
        assert_eq!(u("lsPodsPending"), 0, "{p}");
        assert_eq!(u("lsPodsEvicted"), 0, "{p}");
        for k in ["cpuUtilizationAvg", "cpuUtilizationP95", "lsOnlyUtilizationAvg"] {
            assert!((0.0..=1.0).contains(&f(k)), "{k} = {}", f(k));
        }
    }
    let base = policy(&summary, "baseline")["cpuUtilizationAvg"].as_f64().unwrap();
    let colo = policy(&summary, "colocation")["cpuUtilizationAvg"].as_f64().unwrap();
    assert!(colo >= base, "colocation {colo} < baseline {base}");
    // Same seed, same numbers.
    assert_eq!(without_wall_time(summary.clone()), without_wall_time(run("7").0));
}

#[test]
fn snapshot_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-cluster.yaml");
    std::fs::write(&empty, "apiVersion: v1\nkind: List\nitems: []\n").unwrap();
    let missing = dir.path().join("missing.yaml");
    let cases = [
        (vec!["--snapshot".to_string(), missing.display().to_string()], "missing.yaml"),
        (
            vec!["--snapshot".to_string(), empty.display().to_string()],
            "empty-cluster.yaml: the snapshot has no Node",
        ),
        (vec!["--snapshot".to_string(), snapshot_file(), "--nodes".into(), "10".into()], "--nodes"),
    ];
    for (extra, want) in cases {
        let out =
            kolo().args(["sim", "--no-progress", "--hours", "0.1"]).args(&extra).output().unwrap();
        assert!(!out.status.success(), "{extra:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{want} in {err}");
    }
}
