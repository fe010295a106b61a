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
