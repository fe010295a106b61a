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

/// A Secret's key, decoded.
fn secret_key(secret: &Value, key: &str) -> String {
    use base64::Engine;
    let b64 = secret["data"][key].as_str().unwrap_or_default();
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).unwrap()).unwrap()
}

/// Whether curl trusting only `ca_pem` completes a TLS handshake with the
/// webhook on `port` (any HTTP answer counts).
fn trusted_with(dir: &Path, port: u16, ca_pem: &str) -> bool {
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let (_, out) = try_run(
        std::process::Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "--max-time", "5"])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("https://127.0.0.1:{port}/")),
        None,
    );
    out.status.success()
}

#[test]
fn an_expiring_webhook_certificate_is_renewed_served_and_registered() {
    use kolo_kube::webhook::server::tls::{SelfSignedOptions, generate_self_signed};
    let Some(config) = common::kubeconfig("e2e_webhook_flow") else { return };
    let id = e2e_common::run_id("renew");
    e2e_common::install_crds(&config);
    let _cleanup = Cleanup { config: &config, id: id.clone() };
    create(&config, &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": id}}));
    create(
        &config,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "slo-controller-config", "namespace": id}, "data": {}}),
    );
    // The Secret an earlier replica made, its certificate expiring tomorrow.
    let old = generate_self_signed(&SelfSignedOptions {
        validity_days: 1,
        ..SelfSignedOptions::default()
    })
    .unwrap();
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    create(
        &config,
        &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "webhook-certs", "namespace": id},
                "data": {"ca.crt": b64(&old.ca_cert_pem), "tls.crt": b64(&old.cert_chain_pem),
                         "tls.key": b64(&old.key_pem)}}),
    );
    let (port, health) = (free_port(), free_port());
    let mut extra = e2e_common::webhook_args(&id, port, &format!("kolo-renew={id}"));
    extra.extend(["--webhook-cert-check-seconds".to_string(), "1".to_string()]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut args = e2e_common::manager_args(&config, &id, &extra);
    let default = args.iter().position(|a| a == "127.0.0.1:0").unwrap();
    args[default] = format!("127.0.0.1:{health}");
    let manager = Daemon::start("e2e-renew-manager", &args);

    // Renewed: a new serving certificate; the bundle trusts the new CA and
    // the old one, so replicas not yet switched stay trusted.
    let secret = wait_for("the renewed Secret", TIMEOUT, || {
        let s = get_json(&config, &["secret", "webhook-certs", "-n", &id])?;
        (secret_key(&s, "tls.crt") != old.cert_chain_pem).then_some(s)
    });
    let bundle = secret_key(&secret, "ca.crt");
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2, "{bundle}");
    assert!(bundle.ends_with(&old.ca_cert_pem), "the old CA is kept");
    let new_ca = bundle.strip_suffix(&old.ca_cert_pem).unwrap().to_string();
    // Registered: the configurations carry the new bundle.
    wait_for("the new caBundle registered", TIMEOUT, || {
        let m = get_json(&config, &["mutatingwebhookconfiguration", &id])?;
        (m["webhooks"][0]["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]).then_some(())
    });
    // Served without a restart: the new CA alone verifies the server, the
    // old one alone no longer does.
    let dir = tempfile::tempdir().unwrap();
    wait_for("the new certificate served", TIMEOUT, || {
        trusted_with(dir.path(), port, &new_ca).then_some(())
    });
    assert!(!trusted_with(dir.path(), port, &old.ca_cert_pem), "{}", manager.log());
    let metrics = common::metrics_doc::http_get(health, "/metrics").unwrap();
    assert!(metrics.contains("\nkolo_webhook_certificate_renewals_total 1\n"), "{metrics}");
    let expiry: i64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kolo_webhook_certificate_expiry_timestamp_seconds "))
        .unwrap_or_else(|| panic!("{metrics}"))
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
        as i64;
    assert!(expiry > now + 300 * 86_400, "a year's certificate: {expiry}");
    drop(manager);
}
