//! `kolo schedule` as a user runs it: the example snapshot in both output
//! formats, the explain levels, `--all`, `--now`, configuration files,
//! stdin, bad input, and a generated 5,000-node cluster.
//!
//! The expected placements in `examples/pending-pods.yaml` follow from the
//! plugins' formulas (default args: cpu threshold 65%, estimates = limit or
//! request × 85% cpu / 70% memory, least-used scores):
//!
//! * web-1 (limit 4 cores → estimate 3.4): node-a 6 + 3.4 = 9.4 of 32 cores
//!   (29%) and node-b 6.5 + 3.4 = 9.9 of 16 (62%) pass; node-c is tainted;
//!   node-d's NodeMetric is 5 minutes older than the newest one, expired.
//!   node-a is the least used: LoadAwareScheduling (70 cpu + 82 memory) / 2
//!   = 76 against node-b's 40.
//! * web-2: node-a now carries web-1's estimate too (12.8 cores, 40%): 70.
//! * trainer-0 (8 cores) tolerates node-c's taint: node-b would reach 83% >
//!   65%; node-a (61%) scores 50, the idle node-c 74.
//! * huge (40 cores) fits nowhere: 24 cores free on node-a, 8 on b, 16 on d.
//! * spark-exec-2 takes node-a's last 4000 batch-cpu, so spark-exec-3 finds
//!   none anywhere.

use std::process::Output;

use serde_json::{Value, json};

mod common;
use common::{json, run_kolo as kolo, workspace_root};

const EXAMPLE: &str = "examples/pending-pods.yaml";

fn text(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn schedule_json(extra: &[&str]) -> Value {
    let mut args = vec!["schedule", "--snapshot", EXAMPLE, "-o", "json"];
    args.extend_from_slice(extra);
    json(&kolo(&args, None))
}

fn pod<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == name)
        .unwrap_or_else(|| panic!("{name} not in {report:#}"))
}

fn placements(report: &Value) -> Vec<(String, Option<String>)> {
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pod"].as_str().unwrap().to_string(), p["node"].as_str().map(String::from)))
        .collect()
}

const NO_CPU: &str = "0/4 nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}.";
const NO_BATCH_CPU: &str = "0/4 nodes are available: 3 Insufficient batch-cpu, 1 node(s) had untolerated taint {dedicated: gpu}.";

/// (pod, node, total, message), in queue order.
/// (pod, node, total, message)
type Expected = (&'static str, Option<&'static str>, Option<i64>, Option<&'static str>);
const EXPECTED: &[Expected] = &[
    ("shop/web-1", Some("node-a"), Some(641), None),
    ("shop/web-2", Some("node-a"), Some(624), None),
    ("ml/trainer-0", Some("node-c"), Some(624), None),
    ("ml/huge", None, None, Some(NO_CPU)),
    ("analytics/spark-exec-2", Some("node-a"), Some(543), None),
    ("analytics/spark-exec-3", None, None, Some(NO_BATCH_CPU)),
];

#[test]
fn json_output_of_the_example() {
    let report = schedule_json(&[]);
    assert_eq!(report["now"], "2026-11-22T04:00:00Z", "the newest NodeMetric updateTime");
    let pods = report["pods"].as_array().unwrap();
    assert_eq!(pods.len(), EXPECTED.len(), "{report:#}");
    for (got, (name, node, total, message)) in pods.iter().zip(EXPECTED) {
        assert_eq!(got["pod"], *name, "queue order: priority, then creation time");
        assert_eq!(got["node"], json!(node), "{name}");
        assert_eq!(got["total"], json!(total), "{name}");
        assert_eq!(got["message"], json!(message), "{name}");
        assert_eq!(got["nodes"], json!([]), "{name}: no per-node details unless asked");
        if node.is_some() {
            // The total is the weighted sum of the per-plugin scores
            // (TaintToleration weighs 3, the others 1).
            let scores = got["scores"].as_object().unwrap();
            let sum: i64 = scores
                .iter()
                .map(|(k, v)| v.as_i64().unwrap() * if k == "TaintToleration" { 3 } else { 1 })
                .sum();
            assert_eq!(Some(sum), *total, "{name}: {scores:?}");
        } else {
            assert_eq!(got["scores"], json!({}), "{name}");
        }
    }
    assert_eq!(
        pod(&report, "shop/web-1")["scores"],
        json!({"LoadAwareScheduling": 76, "NodeNUMAResource": 85, "NodeResourcesBalancedAllocation": 95, "NodeResourcesFit": 85, "TaintToleration": 100})
    );
    assert_eq!(
        report["summary"],
        json!({"pods": 6, "scheduled": 4, "unschedulable": 2, "skipped": 1})
    );
}

#[test]
fn table_output_of_the_example() {
    let out = text(&kolo(&["schedule", "--snapshot", EXAMPLE], None));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "Scheduling 6 pending pod(s) on 4 node(s) at 2026-11-22T04:00:00Z (newest NodeMetric updateTime)"
    );
    assert_eq!(lines[1], "Skipped 1 pending pod(s) of other schedulers (--all schedules them too)");
    let rows = [
        "POD                     NODE    SCORE  DETAILS",
        "shop/web-1              node-a    641  LoadAwareScheduling=76 NodeNUMAResource=85 NodeResourcesBalancedAllocation=95 NodeResourcesFit=85 TaintToleration=100",
        "shop/web-2              node-a    624  LoadAwareScheduling=70 NodeNUMAResource=81 NodeResourcesBalancedAllocation=93 NodeResourcesFit=80 TaintToleration=100",
        "ml/trainer-0            node-c    624  LoadAwareScheduling=74 NodeNUMAResource=75 NodeResourcesBalancedAllocation=100 NodeResourcesFit=75 TaintToleration=100",
        &format!("ml/huge                 <none>      -  {NO_CPU}"),
        "analytics/spark-exec-2  node-a    543  LoadAwareScheduling=62 NodeNUMAResource=81 NodeResourcesBalancedAllocation=75 NodeResourcesFit=25 TaintToleration=100",
        &format!("analytics/spark-exec-3  <none>      -  {NO_BATCH_CPU}"),
    ];
    assert_eq!(lines[3..3 + rows.len()], rows, "{out}");
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with("6 pods: 4 scheduled, 2 unschedulable; evaluated in ")
            && summary.ends_with(" pods/s)"),
        "{summary}"
    );
}

#[test]
fn explain_top_two() {
    let report = schedule_json(&["--explain", "2"]);
    let nodes = |name: &str| -> Vec<(String, i64)> {
        pod(&report, name)["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                assert_eq!(n["feasible"], true, "{n}");
                assert_eq!(n["reasons"], json!([]), "{n}");
                (n["node"].as_str().unwrap().to_string(), n["total"].as_i64().unwrap())
            })
            .collect()
    };
    let cases: &[(&str, &[(&str, i64)])] = &[
        ("shop/web-1", &[("node-a", 641), ("node-b", 516)]),
        ("shop/web-2", &[("node-a", 624), ("node-b", 516)]),
        ("ml/trainer-0", &[("node-c", 624), ("node-a", 554)]),
        ("ml/huge", &[]),
        ("analytics/spark-exec-2", &[("node-a", 543)]),
        ("analytics/spark-exec-3", &[]),
    ];
    for (name, want) in cases {
        let want: Vec<(String, i64)> = want.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        assert_eq!(nodes(name), want, "{name}");
    }
    let web1 = pod(&report, "shop/web-1");
    assert_eq!(web1["nodes"][0]["scores"], web1["scores"], "the best node is the chosen one");
    assert_eq!(
        web1["nodes"][1]["scores"],
        json!({"LoadAwareScheduling": 40, "NodeNUMAResource": 40, "NodeResourcesBalancedAllocation": 96, "NodeResourcesFit": 40, "TaintToleration": 100})
    );

    let out = text(&kolo(&["schedule", "--snapshot", EXAMPLE, "--explain", "2"], None));
    assert!(
        out.contains(
            "shop/web-1              node-a    641  LoadAwareScheduling=76 NodeNUMAResource=85 NodeResourcesBalancedAllocation=95 NodeResourcesFit=85 TaintToleration=100\n\
             \x20   node-a  total=641  LoadAwareScheduling=76 NodeNUMAResource=85 NodeResourcesBalancedAllocation=95 NodeResourcesFit=85 TaintToleration=100\n\
             \x20   node-b  total=516  LoadAwareScheduling=40 NodeNUMAResource=40 NodeResourcesBalancedAllocation=96 NodeResourcesFit=40 TaintToleration=100\n\
             shop/web-2"
        ),
        "{out}"
    );
}

#[test]
fn explain_all_gives_every_nodes_verdict() {
    let report = schedule_json(&["--explain-all"]);
    const TAINT: &str = "node(s) had untolerated taint {dedicated: gpu}";
    const EXPIRED: &str = "node(s) nodeMetric expired (nodeMetric expired)";
    // (pod, node, rejected_by, reason) for every node in evaluation order;
    // rejected_by None means feasible.
    type Row<'a> = (&'a str, Option<&'a str>, &'a str);
    let cases: &[(&str, [Row; 4])] = &[
        (
            "shop/web-1",
            [
                ("node-a", None, ""),
                ("node-b", None, ""),
                ("node-c", Some("TaintToleration"), TAINT),
                ("node-d", Some("LoadAwareScheduling"), EXPIRED),
            ],
        ),
        (
            "ml/trainer-0",
            [
                ("node-a", None, ""),
                (
                    "node-b",
                    Some("LoadAwareScheduling"),
                    "node(s) cpu usage exceed threshold (cpu usage 83% > 65%)",
                ),
                ("node-c", None, ""),
                ("node-d", Some("LoadAwareScheduling"), EXPIRED),
            ],
        ),
        (
            "analytics/spark-exec-3",
            [
                (
                    "node-a",
                    Some("NodeResourcesFit"),
                    "Insufficient batch-cpu (batch-cpu: requested 4000, free 0)",
                ),
                (
                    "node-b",
                    Some("NodeResourcesFit"),
                    "Insufficient batch-cpu (batch-cpu: requested 4000, free 2000)",
                ),
                ("node-c", Some("TaintToleration"), TAINT),
                (
                    "node-d",
                    Some("NodeResourcesFit"),
                    "Insufficient batch-cpu (batch-cpu: requested 4000, free 0, batch-memory: requested 8589934592, free 0)",
                ),
            ],
        ),
    ];
    for (name, want) in cases {
        let nodes = pod(&report, name)["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 4, "{name}: {nodes:?}");
        for (got, (node, by, reason)) in nodes.iter().zip(want) {
            assert_eq!(got["node"], *node, "{name}");
            assert_eq!(got["rejected_by"], json!(by), "{name} {node}");
            assert_eq!(got["feasible"], by.is_none(), "{name} {node}");
            if by.is_some() {
                assert_eq!(got["reasons"], json!([reason]), "{name} {node}");
                assert_eq!((&got["scores"], &got["total"]), (&json!({}), &Value::Null));
            } else {
                assert!(got["total"].is_i64(), "{name} {node}: {got}");
            }
        }
    }
    // Every pod, placed or not, lists all four nodes.
    for p in report["pods"].as_array().unwrap() {
        assert_eq!(p["nodes"].as_array().unwrap().len(), 4, "{p}");
    }

    let out = text(&kolo(&["schedule", "--snapshot", EXAMPLE, "--explain-all"], None));
    assert!(
        out.contains(&format!(
            "ml/huge                 <none>      -  {NO_CPU}\n\
             \x20   node-a  rejected by NodeResourcesFit: Insufficient cpu (cpu: requested 40000, free 24000)\n"
        )),
        "{out}"
    );
}

#[test]
fn all_schedules_other_schedulers_pods_with_the_first_profile() {
    let report = schedule_json(&["--all"]);
    let debug = &report["pods"][0];
    // Its spec.priority is 0, so it gets its class's default, koord-prod's
    // 9500, and goes first.
    assert_eq!(debug["pod"], "ops/debug-shell");
    assert_eq!(debug["node"], "node-a");
    assert_eq!(
        report["summary"],
        json!({"pods": 7, "scheduled": 5, "unschedulable": 2, "skipped": 0})
    );
}

#[test]
fn now_decides_which_node_metrics_are_expired() {
    // Three minutes before the newest report node-d's is 2 minutes old:
    // fresh, and node-d is the least loaded node for web-1.
    let report = schedule_json(&["--now", "2026-11-22T03:57:00Z", "--explain", "2"]);
    assert_eq!(report["now"], "2026-11-22T03:57:00Z");
    let got = placements(&report);
    let want = [
        ("shop/web-1", Some("node-d")),
        ("shop/web-2", Some("node-a")),
        ("ml/trainer-0", Some("node-c")),
        ("ml/huge", None),
        ("analytics/spark-exec-2", Some("node-a")),
        ("analytics/spark-exec-3", None),
    ];
    let want: Vec<_> = want.iter().map(|(p, n)| (p.to_string(), n.map(String::from))).collect();
    assert_eq!(got, want);

    let out =
        text(&kolo(&["schedule", "--snapshot", EXAMPLE, "--now", "2026-11-22T03:57:00Z"], None));
    assert!(
        out.starts_with(
            "Scheduling 6 pending pod(s) on 4 node(s) at 2026-11-22T03:57:00Z (--now)\n"
        ),
        "{out}"
    );

    let out = kolo(&["schedule", "--snapshot", EXAMPLE, "--now", "yesterday"], None);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an RFC 3339 time"));
}

#[test]
fn without_node_metrics_the_system_clock_is_used() {
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: node-x}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n";
    let out = text(&kolo(&["schedule", "--snapshot", "-"], Some(node)));
    assert!(out.contains(" (system clock)\n"), "{out}");
    assert!(out.contains("0 pods: 0 scheduled, 0 unschedulable"), "{out}");
}

#[test]
fn stdin_and_several_snapshots_merge() {
    let example = std::fs::read_to_string(workspace_root().join(EXAMPLE)).unwrap();
    let report = json(&kolo(&["schedule", "-o", "json", "--snapshot", "-"], Some(&example)));
    assert_eq!(report, schedule_json(&[]), "stdin reads the same as the file");

    // A second file adds a big idle node: huge fits there now.
    let extra = "apiVersion: v1\nkind: Node\nmetadata: {name: node-e}\nstatus:\n  allocatable: {cpu: '64', memory: 256Gi, pods: '110'}\n";
    let report = json(&kolo(
        &["schedule", "-o", "json", "--snapshot", EXAMPLE, "--snapshot", "-"],
        Some(extra),
    ));
    assert_eq!(pod(&report, "ml/huge")["node"], "node-e");
}

#[test]
fn configuration_selects_profiles_and_args() {
    let dir = tempfile::tempdir().unwrap();
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, Option<&'a str>)]);
    let cases: &[Case] = &[
        (
            "a profile for the default scheduler only schedules the debug pod",
            "profiles:\n- schedulerName: default-scheduler\n",
            &[("ops/debug-shell", Some("node-a"))],
        ),
        (
            "a longer NodeMetric expiration keeps node-d's report fresh, as --now does",
            "profiles:\n- schedulerName: kolo-scheduler\n  pluginConfig:\n  - name: LoadAwareScheduling\n    args: {nodeMetricExpirationSeconds: 600}\n",
            &[
                ("shop/web-1", Some("node-d")),
                ("shop/web-2", Some("node-a")),
                ("ml/trainer-0", Some("node-c")),
                ("ml/huge", None),
                ("analytics/spark-exec-2", Some("node-a")),
                ("analytics/spark-exec-3", None),
            ],
        ),
        (
            "without LoadAwareScheduling node-d's stale metric does not matter: by requests alone it is the emptiest node for web-1",
            "profiles:\n- schedulerName: kolo-scheduler\n  plugins:\n    multiPoint:\n      disabled: [{name: LoadAwareScheduling}]\n",
            &[
                ("shop/web-1", Some("node-d")),
                ("shop/web-2", Some("node-a")),
                ("ml/trainer-0", Some("node-c")),
                ("ml/huge", None),
                ("analytics/spark-exec-2", Some("node-a")),
                ("analytics/spark-exec-3", None),
            ],
        ),
    ];
    for (i, (what, config, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("config-{i}.yaml"));
        std::fs::write(&path, config).unwrap();
        let report = json(&kolo(
            &["schedule", "-o", "json", "--snapshot", EXAMPLE, "--config", path.to_str().unwrap()],
            None,
        ));
        let want: Vec<_> = want.iter().map(|(p, n)| (p.to_string(), n.map(String::from))).collect();
        assert_eq!(placements(&report), want, "{what}");
    }
}

#[test]
fn bad_configuration_names_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "percentageOfNodesToScore: 101\n",
            "scheduler config: percentageOfNodesToScore: 101 is outside 0..=100",
        ),
        (
            "profiles:\n- plugins:\n    filtre: {}\n",
            "scheduler config: profiles[0].plugins.filtre: ",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n",
            "profile kolo-scheduler: unknown plugin \"NoSuchPlugin\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: LoadAwareScheduling\n    args: {usageThresholds: {cpu: 200}}\n",
            "profile kolo-scheduler: pluginConfig LoadAwareScheduling: args.usageThresholds",
        ),
    ];
    for (i, (config, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{i}.yaml"));
        std::fs::write(&path, config).unwrap();
        let path = path.to_str().unwrap();
        let out = kolo(&["schedule", "--snapshot", EXAMPLE, "--config", path], None);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{config}: {err}");
        assert!(out.stdout.is_empty());
        assert!(err.starts_with(&format!("kolo: {path}: {want}")), "{config}: {err}");
    }

    let out = kolo(&["schedule", "--snapshot", EXAMPLE, "--config", "no/such/config.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("kolo: reading scheduler config no/such/config.yaml: "), "{err}");
}

#[test]
fn bad_snapshots_and_usage() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: lots}}\n";
    let out = kolo(&["schedule", "--snapshot", "-"], Some(pod));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "kolo: -: document 1 (Pod ns/p): spec.containers[\"c\"].resources.requests: resource \"cpu\": invalid quantity \"lots\""
        ),
        "{err}"
    );

    let out = kolo(&["schedule", "--snapshot", "no/such/file.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr).unwrap().starts_with("kolo: reading no/such/file.yaml: ")
    );

    for args in [
        &["schedule"][..],
        &["schedule", "--snapshot", EXAMPLE, "--explain", "2", "--explain-all"],
        &["schedule", "--snapshot", EXAMPLE, "-o", "yaml"],
    ] {
        assert_eq!(kolo(args, None).status.code(), Some(2), "{args:?}");
    }
}

/// A `kind: List` JSON snapshot of `nodes` nodes in four shapes (some with
/// batch resources, some tainted, some busy), a NodeMetric each, a running
/// pod on every tenth node, and `pending` pending pods of mixed kinds.
fn generated_cluster(nodes: usize, pending: usize) -> String {
    let update = "2026-11-22T04:00:00Z";
    let mut items = Vec::new();
    for i in 0..nodes {
        let name = format!("gen-{i:05}");
        let mut allocatable = json!({"cpu": "32", "memory": "128Gi", "pods": "110"});
        if i.is_multiple_of(2) {
            allocatable["kubernetes.io/batch-cpu"] = json!("12000");
            allocatable["kubernetes.io/batch-memory"] = json!("48Gi");
        }
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": allocatable.clone(), "capacity": allocatable,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        });
        if i % 7 == 3 {
            node["spec"] =
                json!({"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]});
        }
        items.push(node);
        // Usage between 10% and 80% of 32 cores: some nodes are too busy.
        let cpu = 3200 + (i * 7919 % 22400);
        items.push(json!({
            "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
            "metadata": {"name": name},
            "spec": {},
            "status": {
                "updateTime": update,
                "nodeMetric": {"nodeUsage": {"resources": {"cpu": format!("{cpu}m"), "memory": "40Gi"}}},
            },
        }));
        if i.is_multiple_of(10) {
            items.push(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("running-{i}"), "namespace": "gen"},
                "spec": {
                    "nodeName": name, "schedulerName": "kolo-scheduler",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "8", "memory": "16Gi"}}}],
                },
                "status": {"phase": "Running"},
            }));
        }
    }
    for p in 0..pending {
        let requests = if p.is_multiple_of(3) {
            json!({"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "4Gi"})
        } else {
            json!({"cpu": "2", "memory": "4Gi"})
        };
        let mut labels = json!({"app": "gen"});
        if p.is_multiple_of(3) {
            labels["koordinator.sh/qosClass"] = json!("BE");
            labels["koordinator.sh/priority-class"] = json!("koord-batch");
        }
        items.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("pending-{p:03}"), "namespace": "gen", "labels": labels,
                "creationTimestamp": format!("2026-11-22T03:{:02}:00Z", p % 60),
            },
            "spec": {
                "schedulerName": "kolo-scheduler",
                "containers": [{"name": "c", "resources": {"requests": requests}}],
            },
            "status": {"phase": "Pending"},
        }));
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

#[test]
fn a_generated_5000_node_cluster() {
    const NODES: usize = 5000;
    const PENDING: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.json");
    std::fs::write(&path, generated_cluster(NODES, PENDING)).unwrap();
    let path = path.to_str().unwrap();

    let report =
        json(&kolo(&["schedule", "-o", "json", "--snapshot", path, "--explain", "3"], None));
    assert_eq!(report["now"], "2026-11-22T04:00:00Z");
    assert_eq!(
        report["summary"],
        json!({"pods": PENDING, "scheduled": PENDING, "unschedulable": 0, "skipped": 0})
    );
    let pods = report["pods"].as_array().unwrap();
    assert_eq!(pods.len(), PENDING);
    for p in pods {
        let node = p["node"].as_str().unwrap_or_else(|| panic!("not placed: {p}"));
        let index: usize = node.strip_prefix("gen-").unwrap().parse().unwrap();
        assert!(index < NODES && index % 7 != 3, "{node} is tainted");
        assert_eq!(p["message"], Value::Null);
        let nodes = p["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 3, "{p}");
        assert_eq!(nodes[0]["node"], p["node"], "the best of the top 3 is the chosen node");
        assert!(nodes.windows(2).all(|w| w[0]["total"].as_i64() >= w[1]["total"].as_i64()));
        let number: usize =
            p["pod"].as_str().unwrap().trim_start_matches("gen/pending-").parse().unwrap();
        if number.is_multiple_of(3) {
            assert_eq!(index % 2, 0, "{p}: batch pods need batch-cpu, which only even nodes have");
        }
    }

    // A pod that fits nowhere is explained over all 5,000 nodes.
    let huge = "apiVersion: v1\nkind: Pod\nmetadata: {name: huge, namespace: gen}\nspec:\n  schedulerName: kolo-scheduler\n  containers: [{name: c, resources: {requests: {cpu: '64'}}}]\n";
    let report =
        json(&kolo(&["schedule", "-o", "json", "--snapshot", path, "--snapshot", "-"], Some(huge)));
    assert_eq!(
        pod(&report, "gen/huge")["message"],
        "0/5000 nodes are available: 4286 Insufficient cpu, 714 node(s) had untolerated taint {dedicated: infra}."
    );
}

#[test]
fn table_is_an_alias_of_text() {
    let out = |format: &str| kolo(&["schedule", "--snapshot", EXAMPLE, "-o", format], None);
    let table = out("table");
    assert!(table.status.success(), "{}", String::from_utf8_lossy(&table.stderr));
    let text = out("text");
    // The run time in the summary differs; everything above it is equal.
    let body = |o: &Output| {
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        s.lines().filter(|l| !l.contains("evaluated in")).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(body(&table), body(&text));
}

#[test]
fn json_gives_the_load_estimates_load_aware_used() {
    let report = schedule_json(&["--explain-all"]);
    // web-1: limit 4 cores / 4Gi, estimated at 85% cpu and 70% memory.
    let web1 = pod(&report, "shop/web-1");
    assert_eq!(
        web1["facts"]["LoadAwareScheduling"],
        json!({"estimated_usage": {"cpu": 3400, "memory": 3006477107_i64}, "prod": true})
    );
    // node-a as Filter judged it: 6 cores reported, + 3.4 = 9.4 of 32
    // cores (29%) against the 65% threshold.
    let node_a = &web1["node_facts"]["LoadAwareScheduling"];
    assert_eq!(node_a["usage"]["cpu"], 6000, "{node_a}");
    assert_eq!(node_a["allocatable"]["cpu"], 32000);
    assert_eq!(node_a["thresholds"], json!({"cpu": 65, "memory": 95}));
    assert_eq!(node_a["threshold_kind"], "usage");
    assert_eq!(node_a["usage_percent_with_pod"]["cpu"], 29);
    assert_eq!((&node_a["has_metric"], &node_a["metric_expired"]), (&json!(true), &json!(false)));
    // web-2 finds web-1's estimate counted on node-a: 9.4 + 3.4 = 12.8
    // cores (40%).
    let node_a = &pod(&report, "shop/web-2")["node_facts"]["LoadAwareScheduling"];
    assert_eq!(node_a["usage"]["cpu"], 9400, "{node_a}");
    assert_eq!(node_a["usage_percent_with_pod"]["cpu"], 40);
    // The explained nodes carry the same facts: node-b is over the
    // threshold for trainer-0, node-d's report is five minutes old.
    let trainer = pod(&report, "ml/trainer-0");
    let facts = |node: &str| -> &Value {
        let nodes = trainer["nodes"].as_array().unwrap();
        &nodes.iter().find(|n| n["node"] == node).unwrap()["facts"]["LoadAwareScheduling"]
    };
    assert_eq!(facts("node-b")["usage_percent_with_pod"]["cpu"], 83);
    assert_eq!(facts("node-d")["metric_expired"], true);
    assert_eq!(facts("node-d")["metric_update_time"], "2026-11-22T03:55:00Z");
}

#[test]
fn json_gives_the_status_code_of_each_rejection() {
    let report = schedule_json(&["--explain-all"]);
    let huge = pod(&report, "ml/huge");
    assert_eq!(
        huge["rejections"],
        json!([
            {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "code": "Unschedulable", "nodes": 3},
            {"plugin": "TaintToleration", "reason": "node(s) had untolerated taint {dedicated: gpu}",
             "code": "UnschedulableAndUnresolvable", "nodes": 1},
        ])
    );
    // Per node: the code of the rejection that node got; none if feasible.
    let codes: Vec<(&str, &Value)> = pod(&report, "ml/trainer-0")["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["node"].as_str().unwrap(), &n["code"]))
        .collect();
    assert_eq!(
        codes,
        [
            ("node-a", &Value::Null),
            ("node-b", &json!("Unschedulable")),
            ("node-c", &Value::Null),
            ("node-d", &json!("Unschedulable")),
        ]
    );
    let web1_c = &pod(&report, "shop/web-1")["nodes"][2];
    assert_eq!(
        (&web1_c["node"], &web1_c["code"]),
        (&json!("node-c"), &json!("UnschedulableAndUnresolvable"))
    );
    assert_eq!(pod(&report, "shop/web-1")["rejections"], json!([]), "placed: nothing to count");
}

/// A node with 16 CPUs (8 cores of 2 threads, NUMA nodes of 8 CPUs) and
/// two LSR pods of 4 CPUs each.
fn numa_snapshot() -> String {
    let node = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: numa-1
    annotations:
      node.koordinator.sh/cpu-topology: '{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0},{"id":2,"core":1,"socket":0,"node":0},{"id":3,"core":1,"socket":0,"node":0},{"id":4,"core":2,"socket":0,"node":0},{"id":5,"core":2,"socket":0,"node":0},{"id":6,"core":3,"socket":0,"node":0},{"id":7,"core":3,"socket":0,"node":0},{"id":8,"core":4,"socket":0,"node":1},{"id":9,"core":4,"socket":0,"node":1},{"id":10,"core":5,"socket":0,"node":1},{"id":11,"core":5,"socket":0,"node":1},{"id":12,"core":6,"socket":0,"node":1},{"id":13,"core":6,"socket":0,"node":1},{"id":14,"core":7,"socket":0,"node":1},{"id":15,"core":7,"socket":0,"node":1}]}'
  status:
    allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
    capacity: {cpu: "16", memory: 64Gi, pods: "110"}
"#;
    let pod = |name: &str, minute: u32| {
        format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: {name}, namespace: ns, creationTimestamp: \"2026-11-22T03:{minute:02}:00Z\", labels: {{koordinator.sh/qosClass: LSR}}}}\n  spec:\n    schedulerName: kolo-scheduler\n    containers:\n    - name: c\n      resources: {{requests: {{cpu: \"4\", memory: 1Gi}}, limits: {{cpu: \"4\", memory: 1Gi}}}}\n"
        )
    };
    format!("{node}{}{}", pod("db-0", 0), pod("db-1", 1))
}

#[test]
fn json_gives_the_cpuset_prebind_writes_as_data() {
    let report = json(&kolo(
        &["schedule", "-o", "json", "--now", "2026-11-22T04:00:00Z", "--snapshot", "-"],
        Some(&numa_snapshot()),
    ));
    // FullPCPUs, the default: two whole cores each; LeastAllocated puts the
    // second pod on the other NUMA node.
    for (name, cpuset, cpus) in
        [("ns/db-0", "0-3", [0, 1, 2, 3]), ("ns/db-1", "8-11", [8, 9, 10, 11])]
    {
        let p = pod(&report, name);
        assert_eq!(p["node"], "numa-1", "{p}");
        let numa = &p["facts"]["NodeNUMAResource"];
        assert_eq!(numa["cpuset"], cpuset, "{p}");
        assert_eq!(numa["cpus"], json!(cpus), "{p}");
        assert_eq!(numa["cpu_bind_policy"], "FullPCPUs", "{p}");
        assert_eq!(numa["cpu_exclusive_policy"], "None", "{p}");
        // The annotation PreBind wrote says the same.
        let status: Value = serde_json::from_str(
            p["annotations"]["scheduling.koordinator.sh/resource-status"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(status["cpuset"], cpuset, "{p}");
    }
}

/// `examples/pending-jobs.yaml`: gangs, a reservation and a quota, as its
/// header comment works them out.
#[test]
fn job_scheduling_in_a_snapshot() {
    let args = [
        "schedule",
        "--snapshot",
        "examples/pending-jobs.yaml",
        "--now",
        "2026-11-27T03:10:00Z",
        "-o",
        "json",
    ];
    let report = json(&kolo(&args, None));
    // The train gang binds whole: two members held at Permit, the third
    // completes it; PreBind marks all three as one gang of 3.
    for name in ["ml/train-0", "ml/train-1", "ml/train-2"] {
        let p = pod(&report, name);
        assert!(p["node"].is_string(), "{p:#}");
        assert_eq!(p["message"], Value::Null, "{p:#}");
        assert_eq!(p["facts"]["Coscheduling"]["gang"], "ml/train", "{p:#}");
    }
    assert_eq!(pod(&report, "ml/train-0")["held"], true);
    let last = pod(&report, "ml/train-2");
    assert_eq!(last["annotations"]["scheduling.koordinator.sh/bind-gang-member-count"], "3");
    // The big gang binds nothing: its first member fits nowhere, the
    // others fail with the gang (Strict).
    for name in ["ml/big-0", "ml/big-1", "ml/big-2"] {
        assert_eq!(pod(&report, name)["node"], Value::Null, "{name}");
    }
    let gang_rejected =
        "0/3 nodes are available: Gang \"ml/big\" gets rejected due to pod is unschedulable.";
    assert_eq!(pod(&report, "ml/big-1")["message"], gang_rejected);
    // web-0 needs 3 cores: only node-a's 2 reserved cores plus 1 of its own
    // make room, and the reservation is named on the pod.
    let web = pod(&report, "ml/web-0");
    assert_eq!(web["node"], "node-a", "{web:#}");
    let allocated: Value = serde_json::from_str(
        web["annotations"]["scheduling.koordinator.sh/reservation-allocated"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(allocated, json!({"name": "r-web", "uid": "7d0f4c2e-0000-4000-8000-000000000001"}));
    // The quota: adhoc-1 fits its 800m max, adhoc-2 would take it to 900m.
    assert_eq!(pod(&report, "ml/adhoc-1")["node"], "node-c");
    let over = pod(&report, "ml/adhoc-2");
    assert_eq!(over["node"], Value::Null);
    assert_eq!(
        over["message"],
        "0/3 nodes are available: Insufficient quotas, quotaName: team-a, runtime: cpu=800m, used: cpu=500m, pod's request: cpu=400m, exceedDimensions: [cpu]."
    );
    assert_eq!(
        over["facts"]["ElasticQuota"],
        json!({"quota": "team-a", "used": "cpu=500m", "runtime": "cpu=800m", "min": "cpu=0",
               "max": "cpu=800m", "podRequest": "cpu=400m", "fits": false})
    );
    assert_eq!(
        report["summary"],
        json!({"pods": 9, "scheduled": 5, "unschedulable": 4, "skipped": 0})
    );
}

/// Two full 4-CPU nodes: a runs two koord-batch pods (5500, 2 CPU each),
/// b a koord-mid pod (7500, 2 CPU) and two koord-free pods (3500, 1 CPU
/// each); web (koord-prod, 9500, 2 CPU) waits. As in kolo-scheduler's
/// `tests/preemption.rs`: preempting on b costs the two free pods (highest
/// victim priority 3500), on a one batch pod (5500); kube's order prefers
/// b, unless a PodDisruptionBudget makes evicting both free pods a
/// violation, when the fewest violations come first and a wins.
fn full_nodes_snapshot() -> String {
    let mut yaml = String::new();
    for node in ["a", "b"] {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {node}, labels: {{kubernetes.io/hostname: {node}}}}}\nstatus:\n  allocatable: {{cpu: '4', memory: 64Gi, pods: '110'}}\n"
        ));
    }
    for (name, class, priority, cpu, node) in [
        ("batch-1", "koord-batch", 5500, "2", Some("a")),
        ("batch-2", "koord-batch", 5500, "2", Some("a")),
        ("mid", "koord-mid", 7500, "2", Some("b")),
        ("free-1", "koord-free", 3500, "1", Some("b")),
        ("free-2", "koord-free", 3500, "1", Some("b")),
        ("web", "koord-prod", 9500, "2", None),
    ] {
        let node = node.map(|n| format!("  nodeName: {n}\n")).unwrap_or_default();
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/priority-class: {class}}}}}\nspec:\n  schedulerName: kolo-scheduler\n  priority: {priority}\n{node}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}'}}\n"
        ));
    }
    yaml
}

#[test]
fn a_pod_disruption_budget_in_the_snapshot_moves_preemption() {
    let nominated = |extra: Option<&str>| {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("cluster.yaml");
        std::fs::write(&base, full_nodes_snapshot()).unwrap();
        let base = base.display().to_string();
        let mut args = vec!["schedule", "-o", "json", "--snapshot", &base];
        if extra.is_some() {
            args.extend(["--snapshot", "-"]);
        }
        let report = json(&kolo(&args, extra));
        pod(&report, "ns/web")["message"].as_str().unwrap().to_string()
    };
    assert!(nominated(None).ends_with("(nominated node: b)"), "{}", nominated(None));
    // One disruption allowed among the free pods (policy/v1beta1, as a
    // Kubernetes 1.20 cluster serves it).
    let budget = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: free, namespace: ns}\nspec: {selector: {matchLabels: {koordinator.sh/priority-class: koord-free}}}\nstatus: {disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2}\n";
    let with_budget = nominated(Some(budget));
    assert!(with_budget.ends_with("(nominated node: a)"), "{with_budget}");
    // The snapshot summary counts it.
    let inspect = json(&kolo(&["snapshot", "inspect", "-o", "json", "-"], Some(budget)));
    assert_eq!(inspect["objects"]["PodDisruptionBudget"], 1, "{inspect:#}");
}

#[test]
fn claims_and_volumes_in_the_snapshot_place_pods() {
    let mut yaml = String::new();
    for node in ["a", "b"] {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {node}, labels: {{kubernetes.io/hostname: {node}}}}}\nstatus:\n  allocatable: {{cpu: '4', memory: 64Gi, pods: '110'}}\n"
        ));
    }
    yaml.push_str("---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-b}\nspec:\n  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [b]}]}]}}\n");
    yaml.push_str("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ns, annotations: {pv.kubernetes.io/bind-completed: 'yes'}}\nspec: {volumeName: pv-b}\n");
    yaml.push_str("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: fresh, namespace: ns}\nspec: {storageClassName: standard}\n");
    for (name, claim) in [("db", "data"), ("waiter", "fresh")] {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  schedulerName: kolo-scheduler\n  volumes: [{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}]\n  containers: [{{name: c}}]\n"
        ));
    }
    let report = json(&kolo(&["schedule", "-o", "json", "--snapshot", "-"], Some(&yaml)));
    assert_eq!(pod(&report, "ns/db")["node"], "b", "{report:#}");
    assert_eq!(
        pod(&report, "ns/waiter")["message"],
        "0/2 nodes are available: persistentvolumeclaim \"fresh\" is not bound; kolo-scheduler does not bind volumes."
    );
}
