//! `kolo noderesource` as a user runs it, on `examples/noderesource/`.
//!
//! The expected numbers, by hand (docs/noderesource.md has the full tables):
//!
//! * node-a (100 cores / 120G, thresholds 65): margin 35 / 42G; HP used
//!   pod-a 11 + pod-c 22 = 33 / 33G; system 7 / 12G:
//!   batch-cpu = 100 − 35 − 7 − 33 = 25 cores = 25000,
//!   batch-memory = 120 − 42 − 12 − 33 = 33G.
//!   Mid: min(prodReclaimable 10, unused 100 − 50) = 10 cores, + 10% of
//!   unallocated (100 − 7 − 45 = 48) = 4.8 → 14800; memory 20G + 10% of
//!   (120 − 12 − 45 = 63G) = 26.3G.
//! * node-b (32 cores / 128Gi, thresholds 75 from labels): margin 8 / 32Gi;
//!   node reserved max(kubelet 1 / 4Gi, annotation 4 CPUs / 8Gi) = 4 / 8Gi;
//!   cpu by maxUsageRequest: 32 − 8 − 4 − (8 + 4 + 2 + 1) = 5 cores = 5000;
//!   memory by request: 128 − 32 − 8 − 44 = 44Gi; mid static 10% / 25% =
//!   3200 / 32Gi.
//! * node-c: NodeMetric 20 min old → degraded; node-d: no NodeMetric →
//!   degraded (and a malformed label → a warning); node-e: disabled by a
//!   nodeConfigs entry.

use std::process::Output;

use serde_json::{Value, json};

mod common;
use common::{json, run_kolo as kolo, workspace_root};

const SNAPSHOT: &str = "examples/noderesource/cluster.yaml";
const CONFIG: &str = "examples/noderesource/slo-controller-config.yaml";
const GI: i64 = 1 << 30;

fn text(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn report(extra: &[&str]) -> Value {
    let mut args = vec!["noderesource", "--snapshot", SNAPSHOT, "-o", "json"];
    args.extend_from_slice(extra);
    json(&kolo(&args, None))
}

fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node"] == name)
        .unwrap_or_else(|| panic!("{name} not in {report:#}"))
}

fn tier(cpu: i64, memory: i64) -> Value {
    json!({"cpu": cpu, "memory": memory})
}

#[test]
fn json_output_of_the_example() {
    let r = report(&["--config", CONFIG]);
    assert_eq!(r["now"], "2026-11-22T04:00:00Z", "the newest NodeMetric updateTime");
    assert_eq!(r["config"]["enabled"], true);
    let names: Vec<&str> =
        r["nodes"].as_array().unwrap().iter().map(|n| n["node"].as_str().unwrap()).collect();
    assert_eq!(names, ["node-a", "node-b", "node-c", "node-d", "node-e"]);

    let a = node(&r, "node-a");
    assert_eq!(a["state"], "computed");
    assert_eq!(a["batch"], tier(25_000, 33_000_000_000));
    assert_eq!(a["mid"], tier(14_800, 26_300_000_000));
    let t = &a["terms"]["batch"];
    assert_eq!(t["safetyMargin"], tier(35_000, 42_000_000_000));
    assert_eq!(t["sysUsedOrReserved"], tier(7_000, 12_000_000_000));
    assert_eq!(t["hpUsed"], tier(33_000, 33_000_000_000));
    assert_eq!(t["hpRequest"], tier(45_000, 45_000_000_000));
    assert_eq!(t["pods"]["terminated"], 1, "pod-d");
    assert_eq!(t["pods"]["lowPriority"], 1, "pod-b");
    assert_eq!(a["terms"]["mid"]["mode"], "default");
    assert_eq!(a["terms"]["mid"]["unallocated"], tier(48_000, 63_000_000_000));
    // The status holds batch-cpu 20000: +25% is a change worth writing.
    assert_eq!(a["current"]["batch"], tier(20_000, 33_000_000_000));
    assert_eq!(a["change"], "kubernetes.io/batch-cpu 20000 → 25000 changes by more than 10%");
    assert_eq!(a["patch"]["status"]["allocatable"]["kubernetes.io/batch-cpu"], "25k");
    assert_eq!(a["patch"]["status"]["capacity"]["kubernetes.io/mid-memory"], "26300000000");

    let b = node(&r, "node-b");
    assert_eq!(b["batch"], tier(5_000, 44 * GI));
    assert_eq!(b["mid"], tier(3_200, 32 * GI));
    let t = &b["terms"]["batch"];
    assert_eq!(t["reclaimThresholdPercent"], json!({"cpu": 75, "memory": 75}), "from the labels");
    assert_eq!(t["kubeletReserved"], tier(1_000, 4 * GI));
    assert_eq!(t["annotationReserved"], tier(4_000, 8 * GI));
    assert_eq!(t["reservedCPUs"], 4);
    assert_eq!(t["nodeReserved"], tier(4_000, 8 * GI));
    assert_eq!(t["hostAppUsed"], tier(500, GI));
    assert_eq!(t["hpUsed"], tier(12_500, 32 * GI));
    assert_eq!(t["hpMaxUsedRequest"], tier(15_000, 46 * GI));
    assert_eq!(t["pods"]["withoutMetric"], 1, "new-api");
    assert_eq!(t["pods"]["withoutMetricRequest"], tier(2_000, 4 * GI));
    assert_eq!(t["pods"]["dangling"], 1, "old-web");
    assert_eq!(t["pods"]["danglingLowPriority"], 1, "old-job");
    assert_eq!(t["pods"]["lse"], 1);
    assert_eq!(t["cpuPolicy"], "maxUsageRequest");
    assert_eq!(t["memoryPolicy"], "request");
    assert_eq!(b["terms"]["mid"]["mode"], "static");
    // The effective strategy: the cluster's fields, the labels' ratios and
    // the annotation's fields, over the defaults.
    let s = &b["strategy"];
    assert_eq!((s["enable"].as_bool(), s["degradeTimeMinutes"].as_i64()), (Some(true), Some(15)));
    assert_eq!(s["midUnallocatedPercent"], 10, "from the cluster");
    assert_eq!(s["cpuReclaimThresholdPercent"], 75, "from the label");
    assert_eq!(s["cpuCalculatePolicy"], "maxUsageRequest", "from the annotation");
    assert_eq!(s["midStaticCPUReservedPercent"], 10, "from the annotation");
    assert_eq!(s["resourceDiffThreshold"], 0.1, "the default");
    assert_eq!(node(&r, "node-e")["strategy"]["enable"], false, "its nodeConfigs entry");

    let c = node(&r, "node-c");
    assert_eq!((c["state"].as_str(), c["degraded"].as_bool()), (Some("degraded"), Some(true)));
    assert_eq!(c["batch"], Value::Null);
    assert_eq!(c["reset"]["kind"], "staleNodeMetric");
    assert_eq!(c["reset"]["ageSeconds"], 1200);
    assert_eq!(c["current"]["batch"], tier(9_000, 20 * GI));
    assert_eq!(c["change"], "kubernetes.io/batch-cpu removed (was 9000)");
    assert_eq!(c["patch"]["status"]["allocatable"]["kubernetes.io/batch-cpu"], Value::Null);
    assert_eq!(c["terms"], json!({"batch": null, "mid": null}));

    let d = node(&r, "node-d");
    assert_eq!(d["reset"]["kind"], "noNodeMetric");
    assert_eq!(d["warnings"].as_array().unwrap().len(), 1);

    let e = node(&r, "node-e");
    assert_eq!((e["state"].as_str(), e["degraded"].as_bool()), (Some("disabled"), Some(false)));
    assert_eq!(e["reset"]["kind"], "nodeDisabled");
    assert_eq!(e["change"], "kubernetes.io/mid-cpu removed (was 2000)");
}

/// A ConfigMap whose collect policy differs from the defaults, and whose
/// `no-colocation` entry (node-e) asks for another report interval.
const METRIC_CONFIG: &str = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: '{"enable": true, "metricReportIntervalSeconds": 30,
    "metricAggregatePolicy": {"durations": ["1m", "5m"]},
    "nodeConfigs": [{"name": "no-colocation", "nodeSelector": {"matchLabels": {"pool": "no-colocation"}},
                     "enable": false, "metricReportIntervalSeconds": 10}]}'
"#;

#[test]
fn the_nodemetric_spec_the_manager_writes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, METRIC_CONFIG).unwrap();
    let r = report(&["--config", config.to_str().unwrap()]);
    let policy = |name: &str| node(&r, name)["nodeMetricSpec"]["metricCollectPolicy"].clone();
    let configured = json!({
        "aggregateDurationSeconds": 300, "reportIntervalSeconds": 30,
        "nodeAggregatePolicy": {"durations": ["1m", "5m"]},
        "nodeMemoryCollectPolicy": "usageWithoutPageCache"
    });
    assert_eq!(policy("node-a"), configured);
    assert_eq!(policy("node-b"), configured);
    // Co-location is off for node-e: the defaults, not its 10 s.
    assert_eq!(node(&r, "node-e")["strategy"]["metricReportIntervalSeconds"], 10);
    assert_eq!(
        policy("node-e"),
        json!({
            "aggregateDurationSeconds": 300, "reportIntervalSeconds": 60,
            "nodeAggregatePolicy": {"durations": ["5m0s", "10m0s", "30m0s"]},
            "nodeMemoryCollectPolicy": "usageWithoutPageCache"
        })
    );
    let table = text(&kolo(
        &["noderesource", "--snapshot", SNAPSHOT, "--config", config.to_str().unwrap()],
        None,
    ));
    let needle = "NodeMetric spec: report every 30 s, average over 300 s, windows 1m 5m, memory usageWithoutPageCache";
    assert!(table.contains(needle), "{table}");
}

#[test]
fn table_output_of_the_example() {
    let out = kolo(&["noderesource", "--snapshot", SNAPSHOT, "--config", CONFIG], None);
    let table = text(&out);
    let row = |name: &str| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}: {table}"));
        line.split_whitespace().take(5).map(String::from).collect()
    };
    // Cores and GiB with two decimals: 33G = 30.73GiB, 26.3G = 24.49GiB.
    assert_eq!(row("node-a"), ["node-a", "25.00", "30.73", "14.80", "24.49"]);
    assert_eq!(row("node-b"), ["node-b", "5.00", "44.00", "3.20", "32.00"]);
    assert_eq!(row("node-c"), ["node-c", "-", "-", "-", "-"]);
    assert!(table.contains("1200s ago (degradeTimeMinutes allows 900s)"), "{table}");
    assert!(table.contains("co-location is disabled for this node"), "{table}");
    // Every term, per node.
    for needle in [
        "annotation reserved (4 reservedCPUs)",
        "of which unmeasured pods (1, at request)",
        "of which dangling metrics (1)",
        "mid (static mode)",
        "mid (default mode)",
        "batch-cpu (cores): capacity 100.00 - safety margin 35.00 - max(system used 7.00, node reserved 0.00) - HP used 33.00 = 25.00 [usage]",
        "batch-cpu (cores): capacity 32.00 - safety margin 8.00 - max(system used 2.50, node reserved 4.00) - HP max(used, request) 15.00 = 5.00 [maxUsageRequest]",
        "batch-memory (GiB): capacity 128.00 - safety margin 32.00 - node reserved 8.00 - HP request 44.00 = 44.00 [request]",
    ] {
        assert!(table.contains(needle), "{needle:?} missing from\n{table}");
    }
    // The malformed label is a warning on stderr, not an error.
    assert!(
        stderr(&out).contains(
            "kolo: warning: node node-d: label node.koordinator.sh/cpu-reclaim-ratio=\"high\""
        ),
        "{}",
        stderr(&out)
    );
    // --summary: the table only.
    let summary = text(&kolo(
        &["noderesource", "--snapshot", SNAPSHOT, "--config", CONFIG, "--summary"],
        None,
    ));
    assert!(summary.contains("node-a      25.00"), "{summary}");
    assert!(!summary.contains("safety margin"), "{summary}");
}

#[test]
fn without_configuration_colocation_is_disabled_unless_enable() {
    let out = kolo(&["noderesource", "--snapshot", SNAPSHOT], None);
    let table = text(&out);
    assert!(table.contains("Co-location is DISABLED"), "{table}");
    assert!(table.contains("Use --enable"), "{table}");
    let r = report(&[]);
    assert_eq!(r["config"]["enabled"], false);
    for n in r["nodes"].as_array().unwrap() {
        assert_eq!(n["reset"]["kind"], "clusterDisabled", "{n:#}");
        assert_eq!(n["state"], "disabled");
    }
    // --enable with the built-in defaults (cpu threshold 60, memory 65,
    // no unallocated share): node-a batch-cpu = 100 − 40 − 7 − 33 = 20
    // cores; memory unchanged (65); mid = min(prodReclaimable, unused) =
    // 10 cores / 20G. node-e (no nodeConfigs now): 16 − 6.4 − 1 = 8.6 cores.
    let r = report(&["--enable"]);
    assert_eq!(r["config"]["forced"], true);
    assert_eq!(node(&r, "node-a")["batch"], tier(20_000, 33_000_000_000));
    assert_eq!(node(&r, "node-a")["mid"], tier(10_000, 20_000_000_000));
    assert_eq!(node(&r, "node-e")["batch"]["cpu"], 8_600);
    // Node labels and annotations still apply: node-b is unchanged.
    assert_eq!(node(&r, "node-b")["batch"], tier(5_000, 44 * GI));
}

#[test]
fn the_configmap_can_come_with_the_snapshot() {
    let r = report(&["--snapshot", CONFIG]);
    assert!(r["config"]["source"].as_str().unwrap().contains("from the snapshot"), "{r:#}");
    assert_eq!(node(&r, "node-a")["batch"], tier(25_000, 33_000_000_000));
    // And from stdin.
    let input = std::fs::read_to_string(workspace_root().join(SNAPSHOT)).unwrap();
    let out =
        kolo(&["noderesource", "--snapshot", "-", "--config", CONFIG, "-o", "json"], Some(&input));
    assert_eq!(node(&json(&out), "node-b")["batch"]["cpu"], 5_000);
}

#[test]
fn now_decides_degradation() {
    // node-a reported at 04:00:00, node-b at 03:59:30; 15 minutes allowed.
    // At 04:15:00 node-a is exactly 900 s old (not stale), node-b 930 s.
    let r = report(&["--config", CONFIG, "--now", "2026-11-22T04:15:00Z"]);
    assert_eq!(r["nowSource"], "--now");
    assert_eq!(node(&r, "node-a")["state"], "computed");
    assert_eq!(node(&r, "node-b")["reset"]["ageSeconds"], 930);
    let r = report(&["--config", CONFIG, "--now", "2026-11-22T04:15:01Z"]);
    assert_eq!(node(&r, "node-a")["reset"]["kind"], "staleNodeMetric");
    // An earlier time makes node-c fresh again (03:40 + 15 min ≥ 03:50).
    let r = report(&["--config", CONFIG, "--now", "2026-11-22T03:50:00Z"]);
    assert_eq!(node(&r, "node-c")["state"], "computed");
}

#[test]
fn node_filter() {
    let r = report(&["--config", CONFIG, "--node", "node-b", "--node", "node-e"]);
    let names: Vec<&str> =
        r["nodes"].as_array().unwrap().iter().map(|n| n["node"].as_str().unwrap()).collect();
    assert_eq!(names, ["node-b", "node-e"]);
    let out = kolo(&["noderesource", "--snapshot", SNAPSHOT, "--node", "node-z"], None);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--node node-z: no such node"), "{}", stderr(&out));
}

#[test]
fn bad_configuration_is_an_error_naming_key_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        r#"apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: '{"enable": true, "nodeConfigs": [{}, {"cpuReclaimThresholdPercent": "high"}]}'
"#,
    )
    .unwrap();
    let out =
        kolo(&["noderesource", "--snapshot", SNAPSHOT, "--config", bad.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("ConfigMap koordinator-system/slo-controller-config")
            && err.contains(
                "colocation-config: $.nodeConfigs[1].cpuReclaimThresholdPercent: invalid type"
            ),
        "{err}"
    );
    // An out-of-range value names its path too.
    std::fs::write(
        &bad,
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
            "data": {"colocation-config": "{\"resourceDiffThreshold\": 2}"}}"#,
    )
    .unwrap();
    let out =
        kolo(&["noderesource", "--snapshot", SNAPSHOT, "--config", bad.to_str().unwrap()], None);
    assert!(
        stderr(&out).contains("colocation-config: $.resourceDiffThreshold: 2 is out of range"),
        "{}",
        stderr(&out)
    );
    // A file without any ConfigMap.
    let out = kolo(&["noderesource", "--snapshot", SNAPSHOT, "--config", SNAPSHOT], None);
    assert!(stderr(&out).contains("no ConfigMap found"), "{}", stderr(&out));
    // A missing key is not an error: the defaults apply (disabled).
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slo-controller-config}\ndata: {}\n",
    )
    .unwrap();
    let out = kolo(
        &["noderesource", "--snapshot", SNAPSHOT, "--config", bad.to_str().unwrap(), "-o", "json"],
        None,
    );
    assert_eq!(json(&out)["config"]["enabled"], false);
}
