//! `kolo manager webhook` registered with a real kube-apiserver: the test
//! starts the webhook (self-signed, on a free loopback port) with a state
//! dumped from the cluster (`kubectl get ... -o yaml` of a
//! ClusterColocationProfile, its PriorityClass and the test namespace),
//! registers a MutatingWebhookConfiguration and a
//! ValidatingWebhookConfiguration limited to the test namespace, and
//! creates pods through the API server: one comes back mutated by the
//! profile, one is denied by the QoS validation.
//!
//! Runs when `KOLO_TEST_KUBECONFIG` names a kubeconfig (for example the one
//! `scripts/cluster start --api-only` prints, which `scripts/test`
//! sets up); otherwise it says loudly that it skipped.
//!
//! Everything it creates carries a unique name; the webhook configurations
//! select only the test's namespace, so other tests sharing the cluster are
//! not affected. All of it is deleted at the end, also when an assertion
//! fails, and the webhook process is killed.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use kolo_api::quantity::Quantity;
use serde_json::{Value, json};

mod common;

use common::{kolo, kubectl, run, try_run};

/// Kills the webhook process when the test ends, however it ends.
struct WebhookProcess {
    child: Child,
    stderr: PathBuf,
}

impl WebhookProcess {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for WebhookProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Deletes what the test created in the cluster, webhook configurations
/// first, so that a failed assertion leaves nothing behind.
struct Cleanup<'a> {
    config: &'a Path,
    name: String,
    namespace: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let steps: [Vec<&str>; 5] = [
            vec!["delete", "mutatingwebhookconfiguration", &self.name, "--ignore-not-found"],
            vec!["delete", "validatingwebhookconfiguration", &self.name, "--ignore-not-found"],
            // Pods wait for a kubelet to confirm graceful deletion; there is
            // none, so they are deleted at once.
            vec!["delete", "pods", "-n", &self.namespace, "--all", "--grace-period=0", "--force"],
            vec![
                "delete",
                "clustercolocationprofile,priorityclass",
                &self.name,
                "--ignore-not-found",
            ],
            vec!["delete", "namespace", &self.namespace, "--wait=false", "--ignore-not-found"],
        ];
        common::cleanup(self.config, &steps, &self.namespace);
    }
}

/// A resource list's quantities by name (so `2k` equals `2000`).
fn quantities(list: &Value) -> BTreeMap<String, Quantity> {
    let Some(list) = list.as_object() else { return BTreeMap::new() };
    list.iter()
        .map(|(name, value)| {
            let text = value.as_str().unwrap_or_else(|| panic!("{name}: {value} is not a string"));
            (name.clone(), Quantity::parse(text).unwrap())
        })
        .collect()
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

fn create(config: &Path, object: &Value) {
    run(kubectl(config).args(["create", "-f", "-"]), Some(object.to_string().as_bytes()));
}

/// A pod with two containers (500m / 1Gi and 100m / 128Mi requests).
fn pod(name: &str, namespace: &str, labels: Value, second_resources: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "containers": [
                {"name": "app", "image": "busybox",
                 "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                               "limits": {"cpu": "2", "memory": "2Gi"}}},
                {"name": "sidecar", "image": "busybox", "resources": second_resources},
            ],
        },
    })
}

/// The two webhook configurations, calling `url_base` with `ca_bundle`,
/// for pods in namespaces labelled `kolo-webhook-test=<run>`.
fn webhook_configurations(name: &str, run_id: &str, url_base: &str, ca_bundle: &str) -> [Value; 2] {
    let webhook = |path: &str, operations: Value| {
        json!({
            "name": format!("{path}.{name}.kolo.test"),
            "clientConfig": {"url": format!("{url_base}/{path}"), "caBundle": ca_bundle},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations,
                       "resources": ["pods"], "scope": "Namespaced"}],
            "namespaceSelector": {"matchLabels": {"kolo-webhook-test": run_id}},
            // Fail rather than Ignore here: a webhook the API server cannot
            // reach must fail the test, not go unnoticed.
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        })
    };
    [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [webhook("mutate-pod", json!(["CREATE"]))],
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [webhook("validate-pod", json!(["CREATE", "UPDATE"]))],
        }),
    ]
}

/// The webhook's `/metrics`, fetched with curl trusting the generated CA
/// (curl is there wherever the test cluster is: its tool needs it).
fn metrics(addr: SocketAddr, ca: &Path) -> String {
    let (_, output) = try_run(
        std::process::Command::new("curl").args([
            "-sS",
            "--max-time",
            "5",
            "--cacert",
            &ca.display().to_string(),
            &format!("https://{addr}/metrics"),
        ]),
        None,
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// How many requests the webhook has answered on `/mutate-pod`.
fn mutate_requests(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("kolo_webhook_requests_total{webhook=\"mutate\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn pods_created_through_the_api_server_are_mutated_and_validated() {
    let Some(config) = common::kubeconfig("kube_webhook") else { return };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let run_id = format!("w{}-{}", std::process::id(), stamp.as_millis() % 1_000_000);
    let name = format!("kolo-test-{run_id}");
    let namespace = format!("kolo-webhook-{run_id}");
    let _cleanup = Cleanup { config: &config, name: name.clone(), namespace: namespace.clone() };
    let dir = tempfile::tempdir().unwrap();

    // 1. The profile is a kolo CRD: make sure the cluster knows it. Then
    // the objects the webhook decides with.
    let crds = run(kolo().arg("crds"), None).stdout;
    run(kubectl(&config).args(["apply", "-f", "-"]), Some(&crds));
    run(
        kubectl(&config).args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/clustercolocationprofiles.config.koordinator.sh",
        ]),
        None,
    );
    create(
        &config,
        &json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": namespace, "labels": {"kolo-webhook-test": run_id}}}),
    );
    create(
        &config,
        &json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": 5000, "preemptionPolicy": "Never"}),
    );
    create(
        &config,
        &json!({
            "apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kolo-webhook-test": run_id}},
                "selector": {"matchLabels": {"kolo-colocate": "true"}},
                "qosClass": "BE",
                "priorityClassName": name,
                "labels": {"a": "b"},
                "schedulerName": "kolo-scheduler",
            },
        }),
    );

    // 2. The state: a dump of those objects, as an operator would take it.
    let dump = run(
        kubectl(&config).args([
            "get",
            &format!("namespace/{namespace}"),
            &format!("priorityclass/{name}"),
            &format!("clustercolocationprofile/{name}"),
            "-o",
            "yaml",
        ]),
        None,
    )
    .stdout;
    let state = dir.path().join("state.yaml");
    std::fs::write(&state, dump).unwrap();

    // 3. The webhook, on a free loopback port (the API server runs on this
    // machine), with a generated CA.
    let port = free_port();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let ca = dir.path().join("ca.pem");
    let stderr = dir.path().join("webhook.log");
    let child = kolo()
        .args(["manager", "webhook", "--self-signed", "--listen", &addr.to_string(), "--ca-out"])
        .arg(&ca)
        .arg("--state")
        .arg(&state)
        .env("RUST_LOG", "info,kolo_kube=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut webhook = WebhookProcess { child, stderr };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        if let Some(status) = webhook.child.try_wait().unwrap() {
            panic!("kolo manager webhook exited ({status}):\n{}", webhook.log());
        }
        assert!(Instant::now() < deadline, "the webhook did not listen:\n{}", webhook.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&ca).unwrap());

    // 4. Register it for the test namespace only.
    for configuration in
        webhook_configurations(&name, &run_id, &format!("https://{addr}"), &ca_bundle)
    {
        create(&config, &configuration);
    }

    // The API server picks configurations up from a watch: wait until it
    // calls the webhook (server-side dry runs go through admission and
    // store nothing).
    let probe = pod("probe", &namespace, json!({"kolo-colocate": "true"}), json!({}));
    let deadline = Instant::now() + Duration::from_secs(30);
    while mutate_requests(&metrics(addr, &ca)) == 0 {
        assert!(
            Instant::now() < deadline,
            "the API server never called the webhook:\n{}",
            webhook.log()
        );
        let _ = try_run(
            kubectl(&config).args(["create", "--dry-run=server", "-o", "json", "-f", "-"]),
            Some(probe.to_string().as_bytes()),
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // 5. A pod the profile selects comes back mutated (Koordinator spec
    // §4.2): QoS label, the profile's labels, scheduler, priority, and
    // cpu / memory translated to batch resources.
    let created = run(
        kubectl(&config).args(["create", "-o", "json", "-f", "-"]),
        Some(
            pod(
                "colocated",
                &namespace,
                json!({"kolo-colocate": "true", "app": "batch-job"}),
                json!({"requests": {"cpu": "100m", "memory": "128Mi"}}),
            )
            .to_string()
            .as_bytes(),
        ),
    );
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    let labels = &created["metadata"]["labels"];
    assert_eq!(labels["koordinator.sh/qosClass"], "BE", "{created:#}\n{}", webhook.log());
    assert_eq!(labels["a"], "b", "{created:#}");
    assert_eq!(labels["app"], "batch-job", "{created:#}");
    let spec = &created["spec"];
    assert_eq!(spec["schedulerName"], "kolo-scheduler", "{created:#}");
    assert_eq!(spec["priorityClassName"], name.as_str(), "{created:#}");
    assert_eq!(spec["priority"], 5000, "{created:#}");
    let app = &spec["containers"][0]["resources"];
    assert_eq!(
        quantities(&app["requests"]),
        quantities(&json!({"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"})),
        "{created:#}"
    );
    assert_eq!(
        quantities(&app["limits"]),
        quantities(
            &json!({"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "2Gi"})
        ),
        "{created:#}"
    );
    assert_eq!(
        quantities(&spec["containers"][1]["resources"]["requests"]),
        quantities(
            &json!({"kubernetes.io/batch-cpu": "100", "kubernetes.io/batch-memory": "128Mi"})
        ),
        "{created:#}"
    );

    // A pod the profile does not select is stored as sent.
    let created = run(
        kubectl(&config).args(["create", "-o", "json", "-f", "-"]),
        Some(pod("plain", &namespace, json!({"app": "web"}), json!({})).to_string().as_bytes()),
    );
    let created: Value = serde_json::from_slice(&created.stdout).unwrap();
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}), "{created:#}");
    assert_eq!(created["spec"]["schedulerName"], "default-scheduler", "{created:#}");

    // 6. Batch resources on a pod whose QoS is LS: denied by the
    // validating webhook with the rule's message.
    let invalid = pod(
        "ls-with-batch",
        &namespace,
        json!({"koordinator.sh/qosClass": "LS"}),
        json!({"requests": {"kubernetes.io/batch-cpu": "100", "kubernetes.io/batch-memory": "128Mi"},
               "limits": {"kubernetes.io/batch-cpu": "100", "kubernetes.io/batch-memory": "128Mi"}}),
    );
    let (_, output) =
        try_run(kubectl(&config).args(["create", "-f", "-"]), Some(invalid.to_string().as_bytes()));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the pod was admitted:\n{}", webhook.log());
    assert!(
        message.contains(&format!(
            "admission webhook \"validate-pod.{name}.kolo.test\" denied the request"
        )) && message
            .contains("must specify koordinator QoS BE with koordinator colocation resources"),
        "{message}"
    );

    // The webhook is still up and answered every call it got.
    assert!(webhook.child.try_wait().unwrap().is_none(), "{}", webhook.log());
    let text = metrics(addr, &ca);
    assert!(
        text.contains(r#"kolo_webhook_handler_failures_total{webhook="mutate",reason="panic"} 0"#),
        "{text}"
    );
    // Every connection was served, and the webhook writes to no API server.
    common::metrics_doc::check(
        "webhook",
        &text,
        &["kolo_webhook_connection_errors_total", "kolo_webhook_actions_total"],
    );
    drop(webhook);
}
