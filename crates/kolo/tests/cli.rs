//! The `kolo` binary as a user runs it: the README's example, stdin, several
//! files, and what a user sees when input is bad.

mod common;
use common::{json, run_kolo as kolo};

fn row<'a>(summary: &'a serde_json::Value, resource: &str) -> &'a serde_json::Value {
    summary["resources"].as_array().unwrap().iter().find(|r| r["resource"] == resource).unwrap()
}

#[test]
fn inspect_the_example_cluster() {
    let s =
        json(&kolo(&["snapshot", "inspect", "-o", "json", "examples/small-cluster.yaml"], None));
    assert_eq!(s["nodes"], serde_json::json!({"total": 3, "ready": 2, "unschedulable": 1}));
    assert_eq!(s["pods"]["total"], 7);
    assert_eq!(s["pods"]["running_or_bound"], 5);
    // Both vocabularies: db-0 is LSR by label, cache-0 LSE by Katalyst
    // annotation, trainer-1 BE via reclaimed_cores.
    assert_eq!(s["pods"]["by_qos"]["LSE"], 1);
    assert_eq!(s["pods"]["by_qos"]["LSR"], 1);
    assert_eq!(s["pods"]["by_qos"]["BE"], 4);
    assert_eq!(s["pods"]["by_priority"]["koord-mid"], 1);
    // Katalyst's reclaimed_millicpu counts as batch-cpu (4000 + 3000).
    assert_eq!(row(&s, "kubernetes.io/batch-cpu")["requested"], 7000);
    assert_eq!(row(&s, "kubernetes.io/batch-cpu")["allocatable"], 16600);
    assert_eq!(row(&s, "cpu")["requested"], 10000);
    assert_eq!(s["node_metrics"]["prod_reclaimable"]["cpu"], 3900);
    assert_eq!(s["skipped_kinds"]["apps/v1 Deployment"], 1);
}

#[test]
fn stdin_and_several_files_merge() {
    let node =
        "apiVersion: v1\nkind: Node\nmetadata: {name: extra}\nstatus: {allocatable: {cpu: '2'}}\n";
    let out = kolo(
        &["snapshot", "inspect", "-o", "json", "examples/small-cluster.yaml", "-"],
        Some(node),
    );
    assert_eq!(json(&out)["nodes"]["total"], 4);
}

#[test]
fn bad_input_is_an_error_naming_document_object_and_field() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {memory: 12Qi}}\n";
    let out = kolo(&["snapshot", "inspect", "-"], Some(&format!("kind: Namespace\n---\n{pod}")));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.trim_end(),
        "kolo: -: document 2 (Pod ns/p): spec.containers[\"c\"].resources.requests: \
         resource \"memory\": invalid quantity \"12Qi\": unknown suffix \"Qi\""
    );

    let out = kolo(&["snapshot", "inspect", "no/such/file.yaml"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("kolo: reading no/such/file.yaml: "), "{err}");
}

#[test]
fn version_and_crds() {
    let out = kolo(&["version"], None);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("kolo {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = kolo(&["crds"], None);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let want = kolo_api::crd::all_crds().len();
    assert!(want >= 9, "Koordinator's eight and Katalyst's CNR");
    assert_eq!(text.matches("kind: CustomResourceDefinition").count(), want, "{text}");
}

#[test]
fn usage_errors_exit_with_status_2() {
    let out = kolo(&["snapshot", "inspect"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = kolo(&["no-such-command"], None);
    assert_eq!(out.status.code(), Some(2));
}
