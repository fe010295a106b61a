//! End-to-end, the whole path of a BE pod through kolo against a real
//! kube-apiserver: `kolo manager run --webhook-listen` registers its
//! admission webhooks (certificate from a Secret it creates, caBundle in
//! the webhook configurations it applies) and publishes batch allocatable
//! on the nodes; a plain pod created through the API server comes back with
//! the ClusterColocationProfile's QoS class, priority and batch resources;
//! `kolo scheduler` binds it to the node load-aware scoring prefers.

mod common;
mod e2e_common;

use std::path::Path;
use std::time::Duration;

use common::{cleanup, kubectl, run, try_run};
use e2e_common::{
    Daemon, busy_and_idle_nodes, component_args, create, free_port, get_json, node_of, pod,
    scheduler_config, wait_for,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(40);

struct Cleanup<'a> {
    config: &'a Path,
    id: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let id = self.id.as_str();
        let selector = format!("kolo-test={id}");
        let steps = vec![
            vec![
                "delete",
                "mutatingwebhookconfiguration,validatingwebhookconfiguration",
                id,
                "--ignore-not-found",
            ],
            vec!["delete", "clustercolocationprofile", id, "--ignore-not-found"],
            vec!["delete", "pods", "--all", "-n", id, "--grace-period=0", "--force"],
            vec!["delete", "nodes,nodemetrics,nodeslos", "-l", &selector],
            vec!["delete", "secrets,configmaps,events", "--all", "-n", id],
            vec!["delete", "namespace", id, "--wait=false"],
        ];
        cleanup(self.config, &steps, id);
    }
}

/// Creates a pod and returns it as stored (after admission).
fn create_pod(config: &Path, object: &Value) -> Value {
    let out = run(
        kubectl(config).args(["create", "-o", "json", "-f", "-"]),
        Some(object.to_string().as_bytes()),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_pod_admitted_through_the_webhook_is_scheduled_on_batch_resources() {
    let Some(config) = common::kubeconfig("e2e_webhook_flow") else { return };
    let id = e2e_common::run_id("flow");
    e2e_common::install_crds(&config);
    let _cleanup = Cleanup { config: &config, id: id.clone() };
    create(
        &config,
        &json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": id, "labels": {"kolo-webhook-e2e": id}}}),
    );
    let deploy = common::workspace_root().join("deploy/priorityclasses.yaml");
    run(kubectl(&config).args(["apply", "-f"]).arg(&deploy), None);
    create(
        &config,
        &json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "slo-controller-config", "namespace": id},
            "data": {"colocation-config": "{\"enable\": true}"},
        }),
    );
    // The profile: BE, koord-batch, this test's scheduler, for labelled
    // pods in this test's namespace.
    let profile = format!(
        "apiVersion: config.koordinator.sh/v1alpha1\nkind: ClusterColocationProfile\n\
         metadata: {{name: {id}}}\n\
         spec:\n  namespaceSelector: {{matchLabels: {{kolo-webhook-e2e: {id}}}}}\n  \
         selector: {{matchLabels: {{kolo-colocate: \"true\"}}}}\n  qosClass: BE\n  \
         priorityClassName: koord-batch\n  schedulerName: {id}\n"
    );
    run(kubectl(&config).args(["create", "-f", "-"]), Some(profile.as_bytes()));
    let (_busy, idle) = busy_and_idle_nodes(&config, &id);

    let namespace_label = format!("kolo-webhook-e2e={id}");
    let webhook = e2e_common::webhook_args(&id, free_port(), &namespace_label);
    let extra: Vec<&str> = webhook.iter().map(String::as_str).collect();
    let manager =
        Daemon::start("e2e-flow-manager", &e2e_common::manager_args(&config, &id, &extra));
    let dir = tempfile::tempdir().unwrap();
    let mut sargs = vec!["scheduler".to_string()];
    sargs.extend(component_args(&config));
    sargs.extend([
        "--leader-elect=false".to_string(),
        "--config".into(),
        scheduler_config(dir.path(), &id).display().to_string(),
    ]);
    let _scheduler = Daemon::start("e2e-flow-scheduler", &sargs);

    // The manager publishes batch resources on both nodes.
    wait_for("batch allocatable on the idle node", TIMEOUT, || {
        let n = get_json(&config, &["node", &idle])?;
        n["status"]["allocatable"]["kubernetes.io/batch-cpu"].is_string().then_some(())
    });
    // The webhook is registered with the CA of the Secret it created.
    let registered = wait_for("the MutatingWebhookConfiguration", TIMEOUT, || {
        get_json(&config, &["mutatingwebhookconfiguration", &id])
    });
    let hook = &registered["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Ignore", "{registered}");
    let secret_json = get_json(&config, &["secret", "webhook-certs", "-n", &id]).unwrap();
    assert_eq!(
        hook["clientConfig"]["caBundle"], secret_json["data"]["ca.crt"],
        "caBundle is the Secret's CA"
    );
    assert!(get_json(&config, &["validatingwebhookconfiguration", &id]).is_some());

    // A plain pod asking for 1 core: admitted with failurePolicy Ignore, so
    // until the webhook's state is loaded a pod may pass unchanged; retry
    // with fresh names until one is mutated.
    let mut attempt = 0;
    let created = wait_for("a pod mutated by the webhook", TIMEOUT, || {
        attempt += 1;
        let mut object = pod(&format!("be-{attempt}"), &id, &id, "default-scheduler", "1");
        object["metadata"]["labels"]["kolo-colocate"] = json!("true");
        object["spec"]["nodeSelector"] = json!({"kolo-test": id});
        let created = create_pod(&config, &object);
        if created["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE" {
            return Some(created);
        }
        let _ = try_run(
            kubectl(&config).args([
                "delete",
                "pod",
                "-n",
                &id,
                created["metadata"]["name"].as_str().unwrap(),
                "--grace-period=0",
                "--force",
            ]),
            None,
        );
        None
    });
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    let spec = &created["spec"];
    assert_eq!(spec["schedulerName"], id.as_str(), "{created:#}\n{}", manager.log());
    assert_eq!(spec["priorityClassName"], "koord-batch", "{created:#}");
    assert_eq!(spec["priority"], 5000, "{created:#}");
    let requests = &spec["containers"][0]["resources"]["requests"];
    assert!(requests["kubernetes.io/batch-cpu"].is_string(), "{created:#}");
    assert!(requests.get("cpu").is_none(), "cpu became batch-cpu: {created:#}");

    // The scheduler binds it where load-aware scoring says: the idle node.
    let node = wait_for("the BE pod to be bound", TIMEOUT, || node_of(&config, &id, &name));
    assert_eq!(node, idle);
}
