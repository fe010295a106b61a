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
    assert!(html.matches("<svg").count() >= 8, "plots missing");
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
