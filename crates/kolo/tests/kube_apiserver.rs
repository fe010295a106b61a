//! End-to-end against a real kube-apiserver: `kolo crds` is accepted, a
//! NodeMetric dumped from a Koordinator cluster can be stored and read back,
//! and `kolo snapshot inspect` reads `kubectl get -o yaml` output.
//!
//! Runs when `KOLO_TEST_KUBECONFIG` names a kubeconfig (for example the one
//! `scripts/cluster start --api-only` prints, which `scripts/test`
//! sets up); otherwise it says loudly that it skipped.

use std::path::Path;

use kolo_api::crd::{CustomNodeResource, NodeMetric};
use kolo_core::snapshot::Snapshot;

mod common;

use common::{kolo, kubectl, run};

fn example_node_metric() -> (String, NodeMetric) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../kolo-api/tests/fixtures/nodemetric-master-01.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let metric: NodeMetric = serde_saphyr::from_str(&text).unwrap();
    (text, metric)
}

/// `kolo crds | kubectl apply -f -`, then waits until every CRD is
/// Established. Once per process: two tests applying the same new CRDs at
/// once would race to create them.
fn install_crds(config: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| apply_crds(config));
}

fn apply_crds(config: &Path) {
    let crds = run(kolo().arg("crds"), None).stdout;
    run(kubectl(config).args(["apply", "-f", "-"]), Some(&crds));
    let mut wait = kubectl(config);
    wait.args(["wait", "--for=condition=Established", "--timeout=60s"]);
    // The names themselves are pinned by the unit test of `kolo crds`.
    for crd in kolo_api::crd::all_crds() {
        wait.arg(format!("crd/{}", crd.metadata.name.unwrap()));
    }
    run(&mut wait, None);
}

#[test]
fn crds_are_accepted_and_a_dumped_node_metric_round_trips() {
    let Some(config) = common::kubeconfig("kube_apiserver") else { return };

    // 1. kolo crds | kubectl apply -f -, and every CRD becomes Established.
    install_crds(&config);

    // 1b. A NodeMetric without spec is stored (the reference's CRD does not
    // require one; an agent may write its status before a manager exists),
    // and reads back with the default spec.
    let bare = r#"{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric","metadata":{"name":"kolo-test-no-spec"}}"#;
    run(kubectl(&config).args(["apply", "-f", "-"]), Some(bare.as_bytes()));
    let stored =
        run(kubectl(&config).args(["get", "nodemetric", "kolo-test-no-spec", "-o", "json"]), None)
            .stdout;
    let stored: NodeMetric = serde_json::from_slice(&stored).unwrap();
    assert_eq!(stored.spec, kolo_api::crd::NodeMetricSpec::default());
    run(kubectl(&config).args(["delete", "nodemetric", "kolo-test-no-spec"]), None);

    // 2. Store the NodeMetric dumped from a Koordinator cluster. Server-set
    // metadata must go, and status is a subresource, so it is written with
    // a second request, as the node agent does.
    let (_, original) = example_node_metric();
    let name = original.metadata.name.clone().unwrap();
    let mut object = serde_json::to_value(&original).unwrap();
    let metadata = object["metadata"].as_object_mut().unwrap();
    for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
        metadata.remove(field);
    }
    let status = object.as_object_mut().unwrap().remove("status").unwrap();
    run(kubectl(&config).args(["apply", "-f", "-"]), Some(object.to_string().as_bytes()));
    let patch = serde_json::json!({ "status": status }).to_string();
    run(
        kubectl(&config).args([
            "patch",
            "nodemetric",
            &name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ]),
        None,
    );

    // 3. Read it back the way an operator would dump a cluster.
    let dump = run(kubectl(&config).args(["get", "nodemetrics", "-o", "yaml"]), None).stdout;
    let dir = tempfile::tempdir().unwrap();
    let dump_path = dir.path().join("nodemetrics.yaml");
    std::fs::write(&dump_path, &dump).unwrap();

    // The API server kept every field of the status exactly.
    let snapshot = Snapshot::load(&dump_path).unwrap();
    let stored = snapshot
        .node_metrics
        .iter()
        .find(|m| m.metadata.name.as_deref() == Some(&name))
        .expect("the NodeMetric is in the dump");
    assert_eq!(stored.status, original.status);
    assert_eq!(stored.spec, original.spec);

    // 4. kolo snapshot inspect reads the dump.
    let json = run(kolo().args(["snapshot", "inspect", "-o", "json"]).arg(&dump_path), None).stdout;
    let summary: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(summary["node_metrics"]["count"], 1, "{summary}");
    assert_eq!(summary["node_metrics"]["node_usage"]["cpu"], 515, "{summary}");
    assert_eq!(summary["node_metrics"]["prod_reclaimable"]["cpu"], 2380, "{summary}");
    let text = run(kolo().args(["snapshot", "inspect"]).arg(&dump_path), None).stdout;
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("prod reclaimable: cpu 2380m"), "{text}");

    run(kubectl(&config).args(["delete", "nodemetric", &name]), None);
}

/// Katalyst's CNR: a CNR in the shape Katalyst writes is stored by the API
/// server (spec, then status through the status subresource) and reads back
/// with nothing pruned, schemaless zone children included.
#[test]
fn a_katalyst_cnr_is_stored_and_read_back_unchanged() {
    let Some(config) = common::kubeconfig("kube_apiserver") else { return };
    install_crds(&config);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kolo-api/tests/fixtures/cnr-node-a.yaml");
    let original: CustomNodeResource =
        serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut object = serde_json::to_value(&original).unwrap();
    let status = object.as_object_mut().unwrap().remove("status").unwrap();
    run(kubectl(&config).args(["apply", "-f", "-"]), Some(object.to_string().as_bytes()));
    let patch = serde_json::json!({ "status": status }).to_string();
    let name = original.metadata.name.clone().unwrap();
    run(
        kubectl(&config).args([
            "patch",
            "kcnr",
            &name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ]),
        None,
    );
    let stored = run(kubectl(&config).args(["get", "kcnr", &name, "-o", "json"]), None).stdout;
    let stored: CustomNodeResource = serde_json::from_slice(&stored).unwrap();
    assert_eq!(stored.status, original.status);
    assert_eq!(stored.spec, original.spec);
    run(kubectl(&config).args(["delete", "kcnr", &name]), None);
}
