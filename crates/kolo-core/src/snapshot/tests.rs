use super::*;
use serde_json::Value;

const NODE: &str = r#"apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels:
    kubernetes.io/hostname: node-a
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    pods: "110"
    kubernetes.io/batch-cpu: "4000"
    kubernetes.io/batch-memory: 8Gi
"#;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels:
    koordinator.sh/qosClass: LS
spec:
  nodeName: node-a
  containers:
  - name: app
    image: nginx
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
"#;

fn snapshot(text: &str) -> Snapshot {
    Snapshot::parse(text, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn error(text: &str) -> String {
    Snapshot::parse(text, "test.yaml").unwrap_err().to_string()
}

#[test]
fn multi_document_yaml_with_unknown_kinds() {
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n";
    let text = format!(
        "{NODE}---\n{POD}---\n{deployment}---\n{deployment}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slo-controller-config\n  namespace: koordinator-system\ndata:\n  colocation-config: '{{\"enable\":true}}'\n"
    );
    let s = snapshot(&text);
    assert_eq!(s.nodes.len(), 1);
    assert_eq!(s.pods.len(), 1);
    assert_eq!(s.config_maps.len(), 1);
    assert_eq!(s.object_count(), 3);
    assert_eq!(s.skipped_kinds, BTreeMap::from([("apps/v1 Deployment".to_string(), 2)]));
    assert_eq!(s.nodes[0].view.name(), "node-a");
    assert_eq!(s.pods[0].view.name(), "web");
    assert_eq!(s.pods[0].view.qos(), kolo_api::QoSClass::LS);
}

fn kubectl_list(items: &[&str]) -> String {
    let mut out = String::from("apiVersion: v1\nitems:\n");
    for item in items {
        for (i, line) in item.lines().enumerate() {
            out.push_str(if i == 0 { "- " } else { "  " });
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("kind: List\nmetadata:\n  resourceVersion: \"\"\n");
    out
}

#[test]
fn kubectl_list_is_read_item_by_item() {
    let s = snapshot(&kubectl_list(&[NODE, POD, POD]));
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 2));
    assert_eq!(s.pods[1].object.metadata.name.as_deref(), Some("web"));
}

#[test]
fn json_object_list_array_and_stream() {
    let node: Value = serde_saphyr::from_str(NODE).unwrap();
    let pod: Value = serde_saphyr::from_str(POD).unwrap();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [node, pod]});
    let s = snapshot(&list.to_string());
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 1));

    let stream = format!("{node}\n{pod}\n{pod}");
    let s = snapshot(&stream);
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 2));

    let array = serde_json::json!([pod, pod, node]);
    let s = snapshot(&format!("  {array}"));
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 2));
}

#[test]
fn typed_list_items_may_omit_their_kind() {
    let json = serde_json::json!({
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [{"metadata": {"name": "a", "namespace": "ns"}, "spec": {"containers": []}}]
    });
    assert_eq!(snapshot(&json.to_string()).pods.len(), 1);
    let yaml = "apiVersion: v1\nkind: PodList\nitems:\n- metadata:\n    name: a\n  spec:\n    containers: []\n";
    assert_eq!(snapshot(yaml).pods.len(), 1);
}

#[test]
fn errors_name_document_object_and_field() {
    let bad_priority =
        POD.replace("  nodeName: node-a\n", "  nodeName: node-a\n  priority: high\n");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong type",
            format!("{NODE}---\n{bad_priority}"),
            "test.yaml: document 2 (Pod default/web): spec.priority: invalid type: string \"high\", expected i32",
        ),
        (
            "wrong type in a YAML list item",
            kubectl_list(&[NODE, &bad_priority]),
            "test.yaml: document 1, item 2 (Pod default/web): spec.priority: invalid type: string \"high\", expected i32",
        ),
        (
            "malformed quantity in a list item",
            kubectl_list(&[NODE, &POD.replace("cpu: 500m", "cpu: 5 cores")]),
            "test.yaml: document 1, item 2 (Pod default/web): spec.containers[\"app\"].resources.requests: resource \"cpu\": invalid quantity \"5 cores\"",
        ),
        (
            "malformed node allocatable",
            NODE.replace("memory: 32Gi", "memory: lots"),
            "test.yaml: document 1 (Node node-a): status.allocatable: resource \"memory\": invalid quantity \"lots\"",
        ),
        (
            "missing required field of the object",
            "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeSLO\nmetadata:\n  name: node-a\n".to_string(),
            "test.yaml: document 1 (NodeSLO node-a): spec: required field is missing",
        ),
        (
            "missing required field in JSON",
            r#"{"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO", "metadata": {"name": "node-a"}}"#.to_string(),
            "test.yaml: document 1 (NodeSLO node-a): spec: required field is missing at line 1",
        ),
        (
            "missing required field deeper",
            "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: Device\nmetadata:\n  name: node-a\nspec:\n  devices:\n  - type: gpu\n    minor: 0\n".to_string(),
            "test.yaml: document 1 (Device node-a): spec.devices[0].health: required field is missing",
        ),
        (
            "missing kind",
            "metadata:\n  name: x\n".to_string(),
            "test.yaml: document 1 (<no kind> x): kind: missing",
        ),
        (
            "not an object",
            format!("{NODE}---\n- 1\n- 2\n"),
            "test.yaml: document 2, item 1 (<no kind> <no name>): .: not an object",
        ),
        (
            "yaml syntax",
            format!("{NODE}---\nkind: Pod\n  bad: [\n"),
            "test.yaml: document 2: not valid YAML:",
        ),
        (
            "json syntax",
            "{\"kind\": \"Pod\", \"spec\": {\"a\": 1}".to_string(),
            "test.yaml: document 1: not valid JSON:",
        ),
        (
            "flow-style YAML with a syntax error is reported as YAML",
            "{kind: Pod, spec: [}\n".to_string(),
            "test.yaml: document 1: not valid YAML:",
        ),
        (
            "duplicate key, in kolo's words",
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nmetadata: {name: b}\n".to_string(),
            "test.yaml: document 1: not valid YAML: line 4 column 1: duplicate key \"metadata\" (a key may appear only once in a mapping)",
        ),
    ];
    for (case, text, expected) in cases {
        let got = error(&text);
        assert!(got.starts_with(expected), "{case}:\n got: {got}\nwant: {expected}...");
    }
}

#[test]
fn flow_style_yaml_starting_with_a_brace_loads() {
    // Not JSON (unquoted keys), but YAML, as kubectl reads it.
    let s = snapshot("{apiVersion: v1, kind: Node, metadata: {name: node-f}}\n");
    assert_eq!(s.nodes.len(), 1);
    assert_eq!(s.nodes[0].view.name(), "node-f");
    // A flow-style list of objects too.
    let s = snapshot("[{apiVersion: v1, kind: Node, metadata: {name: a}}]\n");
    assert_eq!(s.nodes.len(), 1);
}

#[test]
fn a_failed_add_leaves_the_snapshot_unchanged() {
    let mut s = snapshot(NODE);
    let err = s.add_text(&format!("{POD}---\nkind: Pod\nspec: 3\n"), "more.yaml");
    assert!(err.is_err());
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 0));
    s.add_text(POD, "more.yaml").unwrap();
    assert_eq!(s.pods.len(), 1);
}

#[test]
fn a_nodemetric_without_spec_loads_with_the_default_spec() {
    let yaml = "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata:\n  name: node-a\nstatus:\n  updateTime: \"2026-01-01T00:00:00Z\"\n";
    let json = r#"{"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "node-b"}}"#;
    let flow =
        "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {name: node-c}\n";
    for (case, text) in [("yaml", yaml), ("json", json), ("yaml outside the fast path", flow)] {
        let s = snapshot(text);
        assert_eq!(s.node_metrics.len(), 1, "{case}");
        let metric = &s.node_metrics[0];
        assert_eq!(metric.spec, kolo_api::crd::NodeMetricSpec::default(), "{case}");
    }
    let s = snapshot(yaml);
    assert!(s.node_metrics[0].status.as_ref().unwrap().update_time.is_some());
}

#[test]
fn crd_objects_are_typed_and_group_checked() {
    let text = "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata:\n  name: node-a\nspec: {}\n---\napiVersion: other.example.com/v1\nkind: NodeMetric\nmetadata:\n  name: node-a\n";
    let s = snapshot(text);
    assert_eq!(s.node_metrics.len(), 1);
    assert_eq!(
        s.skipped_kinds,
        BTreeMap::from([("other.example.com/v1 NodeMetric".to_string(), 1)])
    );
}

#[test]
fn reads_files_and_reports_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dump.yaml");
    std::fs::write(&path, kubectl_list(&[NODE, POD])).unwrap();
    let s = Snapshot::load(&path).unwrap();
    assert_eq!(s.object_count(), 2);
    let missing = dir.path().join("missing.yaml");
    let err = Snapshot::load(&missing).unwrap_err().to_string();
    assert!(err.starts_with(&format!("reading {}: ", missing.display())), "{err}");
}

#[test]
fn many_pieces_decode_in_parallel_in_input_order() {
    let items: Vec<String> =
        (0..1500).map(|i| POD.replace("name: web", &format!("name: web-{i}"))).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    let s = snapshot(&kubectl_list(&refs));
    assert_eq!(s.pods.len(), 1500);
    for (i, pod) in s.pods.iter().enumerate() {
        assert_eq!(pod.view.name(), format!("web-{i}"));
    }
}

mod split_agrees_with_whole_document_parse {
    use super::*;
    use proptest::prelude::*;

    /// Strings that stress YAML quoting: colons, dashes, hashes, quotes,
    /// newlines, leading spaces, things that look like numbers or booleans.
    fn tricky_string() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9-]{0,12}",
            Just("- not an item".to_string()),
            Just("a: b".to_string()),
            Just("#comment".to_string()),
            Just("line one\nline two\n  - indented".to_string()),
            Just("#!/bin/sh\necho hi\n\n# comment\necho bye\n".to_string()),
            Just("  leading".to_string()),
            Just("'quoted'".to_string()),
            Just("\"dq\"".to_string()),
            Just("true".to_string()),
            Just("0x1F".to_string()),
            Just("---".to_string()),
            Just("items:".to_string()),
            Just("kind: List".to_string()),
            "\\PC{0,20}",
        ]
    }

    fn pod_value(name: String, labels: Vec<(String, String)>, note: String) -> Value {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": labels.into_iter().collect::<BTreeMap<_, _>>(),
                "annotations": {"note": note},
            },
            "spec": {"containers": [{"name": "c", "args": ["--x", "- y"]}]},
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn same_objects(pods in proptest::collection::vec(
            ("[a-z]{1,8}", proptest::collection::vec(("[a-z]{1,5}", tricky_string()), 0..3), tricky_string()),
            1..6,
        )) {
            let items: Vec<Value> = pods
                .into_iter()
                .map(|(name, labels, note)| pod_value(name, labels, note))
                .collect();
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
            let yaml = serde_saphyr::to_string(&list).unwrap();
            let whole: Value = serde_saphyr::from_str(&yaml).unwrap();
            let doc = split::documents(&yaml).remove(0);
            let cut = split::list_items(doc.text);
            // The fast path must actually be taken, unless the text has
            // something that looks like an anchor, which the cutter refuses.
            prop_assert!(cut.is_some() || split::may_use_anchors(doc.text), "not cut:\n{}", yaml);
            if let Some(cut) = cut {
                // Each cut item reads as a one-item sequence.
                let parsed: Vec<Value> = cut
                    .iter()
                    .map(|t| serde_saphyr::from_str::<Value>(t).unwrap()[0].clone())
                    .collect();
                prop_assert_eq!(&Value::Array(parsed), &whole["items"]);
            }
            let s = Snapshot::parse(&yaml, "prop.yaml").unwrap();
            let names: Vec<_> = s.pods.iter().map(|p| p.object.metadata.clone()).collect();
            let expected: Vec<_> = whole["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| serde_json::from_value::<Pod>(i.clone()).unwrap().metadata)
                .collect();
            prop_assert_eq!(names, expected);
        }
    }
}

/// The fast path (block-YAML tape, deserialized in place) and the JSON path
/// must load every object identically, views included: the fixtures of every
/// CRD, and the example cluster as serde-saphyr re-emits it in block style
/// (the file itself is hand-written with flow mappings, outside the fast
/// path's subset).
#[test]
fn yaml_fast_path_loads_what_the_json_path_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut inputs: Vec<(String, String)> =
        std::fs::read_dir(root.join("crates/kolo-api/tests/fixtures"))
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                (path.display().to_string(), std::fs::read_to_string(&path).unwrap())
            })
            .collect();
    let example: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root.join("examples/small-cluster.yaml")).unwrap(),
    )
    .unwrap();
    inputs.push(("small-cluster, block style".into(), serde_saphyr::to_string(&example).unwrap()));
    for (name, yaml) in inputs {
        // Every document (or list item) must take the fast path, or this
        // test compares the slow path with itself.
        for doc in split::documents(&yaml) {
            let items = split::list_items(doc.text).unwrap_or_else(|| vec![doc.text]);
            for item in items {
                assert!(block_yaml::parse_tape(item).is_some(), "{name}: not fast: {item}");
            }
        }
        let values: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
        let json: String = values.iter().map(|v| serde_json::to_string(v).unwrap()).collect();
        let fast = snapshot(&yaml);
        let slow = snapshot(&json);
        // Katalyst's CNR: the agent writes it; no snapshot reads it (it
        // must still take the fast path, above).
        if name.ends_with("cnr-node-a.yaml") {
            assert_eq!((fast.object_count(), slow.object_count()), (0, 0), "{name}");
            continue;
        }
        assert!(fast.object_count() > 0, "{name}");
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{name}");
    }
}

#[test]
fn namespaces_and_priority_classes_load() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: batch\n  labels:\n    team: ml\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: koord-batch\nvalue: 5500\npreemptionPolicy: Never\n";
    let s = snapshot(text);
    assert_eq!(s.namespaces.len(), 1);
    assert_eq!(s.priority_classes.len(), 1);
    assert_eq!(s.object_count(), 2);
    assert!(s.skipped_kinds.is_empty());
    assert_eq!(s.priority_classes[0].value, 5500);
    assert_eq!(s.priority_classes[0].preemption_policy.as_deref(), Some("Never"));
    let labels = s.namespaces[0].metadata.labels.as_ref().unwrap();
    assert_eq!(labels.get("team").map(String::as_str), Some("ml"));
}

#[test]
fn concatenated_objects_without_separator_are_an_error() {
    // `cat node.yaml configmap.yaml` without a `---` between them.
    let text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slo-controller-config\ndata:\n  a: b\n";
    let err = error(text);
    assert!(err.contains("duplicate key \"apiVersion\""), "{err}");
    // The same with a `kind: List` first, whose items the fast path cuts out.
    let list =
        format!("{}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", kubectl_list(&[NODE]));
    let err = error(&list);
    assert!(err.contains("duplicate key"), "{err}");
}

#[test]
fn newest_metric_update_is_the_newest_node_metric_update_time() {
    let metric = |name: &str, time: Option<&str>| {
        let status = match time {
            Some(t) => format!("status: {{updateTime: \"{t}\"}}"),
            None => "status: {}".to_string(),
        };
        format!(
            "apiVersion: slo.koordinator.sh/v1alpha1\nkind: NodeMetric\nmetadata: {{name: {name}}}\nspec: {{}}\n{status}\n"
        )
    };
    // (metrics as (node, updateTime), expected now)
    type Case<'a> = (&'a [(&'a str, Option<&'a str>)], Option<&'a str>);
    let cases: &[Case] = &[
        (&[], None),
        (&[("a", None)], None),
        (
            &[
                ("a", Some("2026-11-22T03:55:00Z")),
                ("b", Some("2026-11-22T04:00:00Z")),
                ("c", None),
                ("d", Some("2026-11-22T03:59:59Z")),
            ],
            Some("2026-11-22T04:00:00Z"),
        ),
    ];
    for (metrics, want) in cases {
        let text: Vec<String> = metrics.iter().map(|(n, t)| metric(n, *t)).collect();
        let snapshot = Snapshot::parse(&text.join("---\n"), "test").unwrap();
        let want = want.map(|t| t.parse::<crate::clock::Timestamp>().unwrap());
        assert_eq!(snapshot.newest_metric_update(), want, "{metrics:?}");
    }
}

#[test]
fn budgets_of_both_versions_claims_and_volumes_are_kept() {
    let budget = |version: &str| {
        format!(
            "apiVersion: policy/{version}\nkind: PodDisruptionBudget\nmetadata: {{name: b, namespace: ns}}\nspec: {{selector: {{matchLabels: {{app: web}}}}, minAvailable: 1}}\nstatus: {{disruptionsAllowed: 2, currentHealthy: 3, desiredHealthy: 1, expectedPods: 3}}\n"
        )
    };
    let text = format!(
        "{}---\n{}---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: data, namespace: ns}}\nspec: {{volumeName: pv}}\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: pv}}\nspec: {{capacity: {{storage: 1Gi}}}}\n",
        budget("v1"),
        budget("v1beta1")
    );
    let s = snapshot(&text);
    assert_eq!(s.pod_disruption_budgets.len(), 2);
    for b in &s.pod_disruption_budgets {
        assert_eq!(b.status.as_ref().map(|s| s.disruptions_allowed), Some(2));
    }
    assert_eq!(s.persistent_volume_claims[0].metadata.name.as_deref(), Some("data"));
    assert_eq!(s.persistent_volumes[0].metadata.name.as_deref(), Some("pv"));
    assert_eq!((s.object_count(), s.skipped_kinds.len()), (4, 0));
    // A field of the wrong type is named, in either version.
    let bad = budget("v1beta1").replace("disruptionsAllowed: 2", "disruptionsAllowed: many");
    let message = error(&bad);
    assert!(message.contains("status.disruptionsAllowed"), "{message}");
}

/// The snapshot's input bounds (docs/reliability.md, "Input bounds"): a
/// file or stream over the size limit, "billion laughs" alias expansion and
/// deep nesting are refused, each with an error naming the input, without
/// exhausting the memory or the stack.
mod input_bounds {
    use std::path::Path;

    use super::*;
    use crate::snapshot::{MAX_SNAPSHOT_BYTES, read_text};

    #[test]
    fn size_limit_refuses_large_files_and_endless_streams() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.yaml");
        std::fs::write(&path, "x".repeat(100)).unwrap();
        assert_eq!(read_text(&path, 100).unwrap().len(), 100);
        let err = read_text(&path, 99).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("reading {}: larger than the limit of 99 bytes for a snapshot", path.display())
        );
        // Not a regular file: read up to the limit, then refused.
        let err = read_text(Path::new("/dev/zero"), 4096).unwrap_err().to_string();
        assert!(err.starts_with("reading /dev/zero: larger than the limit of 4096 bytes"), "{err}");
        assert_eq!(MAX_SNAPSHOT_BYTES, 512 << 20);
    }

    #[test]
    fn alias_expansion_is_bounded() {
        // "Billion laughs": 9 levels of 9 aliases expand to 9^9 strings.
        let mut text = String::from(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs}\ndata:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        );
        for level in 1..=9 {
            let prev = format!("*l{}", level - 1);
            let items = [prev.as_str(); 9].join(", ");
            text.push_str(&format!("  l{level}: &l{level} [{items}]\n"));
        }
        let started = std::time::Instant::now();
        let err = Snapshot::parse(&text, "laughs.yaml").unwrap_err().to_string();
        assert!(err.starts_with("laughs.yaml: document 1: not valid YAML"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{err}");
    }

    #[test]
    fn nesting_depth_is_bounded() {
        let depth = 100_000;
        let yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\nx: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let err = Snapshot::parse(&yaml, "deep.yaml").unwrap_err().to_string();
        assert!(err.starts_with("deep.yaml: document 1: not valid YAML"), "{err}");
        // An unknown field is skipped (serde_json skips without recursing):
        // read, not a stack overflow.
        let json = format!(
            "{{\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\"}},\"x\":{}{}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert_eq!(Snapshot::parse(&json, "deep.json").unwrap().config_maps.len(), 1);
        // A value kept as JSON (a NodeSLO's extensions) stops at serde_json's
        // recursion limit (128).
        let json = format!(
            "{{\"apiVersion\":\"slo.koordinator.sh/v1alpha1\",\"kind\":\"NodeSLO\",\"metadata\":{{\"name\":\"n\"}},\"spec\":{{\"extensions\":{{\"x\":{}{}}}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let err = Snapshot::parse(&json, "deep-slo.json").unwrap_err().to_string();
        assert!(err.starts_with("deep-slo.json: "), "{err}");
        let list = format!("[{}{}]", "[".repeat(depth), "]".repeat(depth));
        let err = Snapshot::parse(&list, "deep-list.json").unwrap_err().to_string();
        assert!(err.starts_with("deep-list.json: "), "{err}");
    }
}
