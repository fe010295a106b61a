//! `kolo deschedule` as a user runs it: the example snapshot
//! (examples/hot-nodes.yaml) with the example configuration
//! (examples/descheduler.yaml, also the built-in default) in both output
//! formats, `--now`, and bad input.
//!
//! The expected decisions follow from the snapshot's numbers (16-core,
//! 64 GiB nodes; low 45% cpu / 55% memory, high 75% / 80%; usage =
//! systemUsage + the pods' usage in the NodeMetric):
//!
//! * hot-1: cpu 1 + 4 + 3 + 3.5 + 2 + 0.3 = 13.8 cores, 86% > 75%: a source;
//!   hot-2: memory 4 + 26 + 10 + 14 + 1 = 55 GiB, 86% > 80%: a source;
//!   cold-1 (15% / 20%) and cold-2 (10% / 16%) are low; mid-1 (60% / 50%)
//!   is normal; new-1 has no NodeMetric.
//! * On hot-1 the BE pods go first (koord-batch sorts before koord-prod).
//!   spark-exec-2 is pinned to hot-1 by its nodeSelector: no target fits.
//!   spark-exec-1 (3.5 cores) fits cold-1 (2.4 + 3.5 = 5.9 cores, 37% <
//!   75%) and brings hot-1 to 10.3 cores (64%): evicted, and the node is
//!   done. log-agent-h1 (a DaemonSet's) and db-0 (LSE) are filtered;
//!   web-1 has no usage in the NodeMetric.
//! * On hot-2 trainer-1 (BE, 14 GiB) brings it to 41 GiB (64%): evicted.

use std::process::Output;

use serde_json::Value;

mod common;
use common::{json, run_kolo as kolo};

const SNAPSHOT: &str = "examples/hot-nodes.yaml";
const CONFIG: &str = "examples/descheduler.yaml";

fn text(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn deschedule_json(extra: &[&str]) -> Value {
    let mut args = vec!["deschedule", "--snapshot", SNAPSHOT, "-o", "json"];
    args.extend_from_slice(extra);
    json(&kolo(&args, None))
}

#[test]
fn json_is_the_documented_object_and_now_comes_from_the_snapshot() {
    let report = deschedule_json(&[]);
    for key in ["now", "nowSource", "dryRun", "pools", "migrations", "controller", "events"] {
        assert!(report.get(key).is_some(), "{key} missing in {report:#}");
    }
    assert_eq!(report["now"], "2026-11-22T04:00:00Z");
    assert_eq!(report["nowSource"], "newest NodeMetric updateTime");
    assert_eq!(report["dryRun"], false);
    assert_eq!(report["summary"]["nodes"], 6);
    assert_eq!(report["summary"]["pods"], 13);

    let later = deschedule_json(&["--now", "2026-11-22T04:01:00Z"]);
    assert_eq!(
        (later["now"].as_str(), later["nowSource"].as_str()),
        (Some("2026-11-22T04:01:00Z"), Some("--now"))
    );
}

#[test]
fn the_default_configuration_is_the_example_file() {
    let default = deschedule_json(&[]);
    let example = deschedule_json(&["--config", CONFIG]);
    assert_eq!(default, example);
}

#[test]
fn bad_input_is_named() {
    let cases: [(&[&str], &str); 3] = [
        (&["deschedule", "--snapshot", "no-such-file.yaml"], "no-such-file.yaml"),
        (
            &["deschedule", "--snapshot", SNAPSHOT, "--config", "no-such-config.yaml"],
            "no-such-config.yaml",
        ),
        (&["deschedule", "--snapshot", SNAPSHOT, "--now", "yesterday"], "yesterday"),
    ];
    for (args, named) in cases {
        let output = kolo(args, None);
        assert!(!output.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
    // A configuration that does not read names the file and the field.
    let bad = std::env::temp_dir().join(format!("kolo-deschedule-{}.yaml", std::process::id()));
    std::fs::write(&bad, "deschedulingInterval: soon\n").unwrap();
    let output =
        kolo(&["deschedule", "--snapshot", SNAPSHOT, "--config", bad.to_str().unwrap()], None);
    let _ = std::fs::remove_file(&bad);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("deschedulingInterval") && stderr.contains(".yaml"), "{stderr}");
}

#[test]
fn the_table_header_names_the_round() {
    let table = text(&kolo(&["deschedule", "--snapshot", SNAPSHOT], None));
    assert!(
        table.starts_with(
            "Descheduling 6 node(s), 13 pod(s) at 2026-11-22T04:00:00Z (newest NodeMetric updateTime)\n"
        ),
        "{table}"
    );
}

fn candidate<'a>(report: &'a Value, pod: &str) -> &'a Value {
    report["pools"][0]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["pod"] == pod)
        .unwrap_or_else(|| panic!("{pod} not a candidate in {report:#}"))
}

fn class(report: &Value, node: &str) -> String {
    let nodes = report["pools"][0]["nodes"].as_array().unwrap();
    let n = nodes.iter().find(|n| n["node"] == node).unwrap_or_else(|| panic!("{node}"));
    n["class"].as_str().unwrap().to_string()
}

#[test]
fn the_hot_nodes_are_sources_and_each_verdict_says_why() {
    let report = deschedule_json(&[]);
    let classes: Vec<(&str, String)> = ["hot-1", "hot-2", "mid-1", "cold-1", "cold-2", "new-1"]
        .into_iter()
        .map(|n| (n, class(&report, n)))
        .collect();
    assert_eq!(
        classes,
        [
            ("hot-1", "source".to_string()),
            ("hot-2", "source".to_string()),
            // Between the node thresholds, and (the prod thresholds
            // default to 100%) low on prod usage.
            ("mid-1", "prodLow".to_string()),
            ("cold-1", "bothLow".to_string()),
            ("cold-2", "bothLow".to_string()),
            ("new-1", "noMetric".to_string()),
        ]
    );
    let verdict = |pod: &str| {
        let c = candidate(&report, pod);
        (c["verdict"].as_str().unwrap().to_string(), c["detail"].as_str().unwrap_or("").to_string())
    };
    let (v, detail) = verdict("analytics/spark-exec-1");
    assert_eq!(v, "evicted", "{detail}");
    assert!(detail.contains("node cpu usage(86.25%)>threshold(75.00%)"), "{detail}");
    assert_eq!(verdict("ml/trainer-1").0, "evicted");
    assert_eq!(verdict("analytics/spark-exec-2").0, "noFit");
    assert_eq!(verdict("shop/web-1").0, "noMetric");
    let (v, ds) = verdict("kube-system/log-agent-h1");
    assert_eq!(v, "filtered");
    assert_eq!(ds, "pod is owned by a DaemonSet");
    let (v, lse) = verdict("shop/db-0");
    assert_eq!(v, "filtered");
    assert_eq!(lse, "pod has QoS class LSE (bound CPUs)");
    // Pods after the eviction that brought the node under: not reached.
    assert_eq!(verdict("shop/web-0").0, "notReached");
    // The migrations, in order: one job per evicted pod.
    let pods: Vec<&str> = report["migrations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["pod"].as_str().unwrap())
        .collect();
    assert_eq!(pods, ["analytics/spark-exec-1", "ml/trainer-1"]);
    assert_eq!(report["migrations"][0]["node"], "hot-1");

    // The table says the same: each node's class, each candidate's verdict.
    let table = text(&kolo(&["deschedule", "--snapshot", SNAPSHOT], None));
    for (node, class) in &classes {
        let row = table.lines().find(|l| l.split_whitespace().next() == Some(node)).unwrap();
        assert_eq!(row.split_whitespace().nth(1), Some(class.as_str()), "{row}");
    }
    for c in report["pools"][0]["candidates"].as_array().unwrap() {
        let pod = c["pod"].as_str().unwrap();
        let row = table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(pod))
            .unwrap_or_else(|| panic!("{pod} in {table}"));
        assert!(row.contains(&format!("  {}", c["verdict"].as_str().unwrap())), "{row}");
    }
}
