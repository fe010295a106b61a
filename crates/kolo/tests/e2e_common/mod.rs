//! Helpers of the end-to-end tests (`e2e_*.rs`): kolo components running as
//! child processes against the test cluster, and polling for what they do.

#![allow(dead_code)] // each test binary uses its own subset

pub mod rbac_cluster;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{kolo, kubectl, run, try_run};

/// A unique prefix for this test's objects (`e2e-<test>-<pid>-<ms>`), so
/// tests can share one cluster in parallel.
pub fn run_id(test: &str) -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() % 1_000_000);
    format!("e2e-{test}-{}-{ms}", std::process::id())
}

/// A kolo component running in the background; killed when dropped. Its
/// log goes to a file that is printed if the test fails.
pub struct Daemon {
    child: Child,
    log: PathBuf,
    name: String,
}

impl Daemon {
    /// Starts `kolo ARGS` with `RUST_LOG=info` (debug for kolo_kube).
    pub fn start<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(name: &str, args: &[S]) -> Daemon {
        let log = std::env::temp_dir().join(format!("{name}-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).unwrap();
        let child = kolo()
            .args(args)
            .env("RUST_LOG", "info,kolo_kube=debug")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start kolo {args:?}: {e}"));
        Daemon { child, log, name: name.into() }
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the process now (SIGKILL: no graceful lease release, like a
    /// crash).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.name, self.log());
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Polls `check` every 200 ms until it returns `Some`, or panics after
/// `timeout` with `what`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `kubectl get ARGS -o json`, or `None` if it fails (e.g. not found).
pub fn get_json(config: &Path, args: &[&str]) -> Option<Value> {
    let (_, output) = try_run(kubectl(config).args(["get", "-o", "json"]).args(args), None);
    output.status.success().then(|| serde_json::from_slice(&output.stdout).unwrap())
}

/// `kubectl create -f -` of a JSON object.
pub fn create(config: &Path, object: &Value) {
    run(kubectl(config).args(["create", "-f", "-"]), Some(object.to_string().as_bytes()));
}

/// Applies kolo's CRDs and waits until the ones the tests use (NodeMetric,
/// NodeSLO, ClusterColocationProfile) are served.
pub fn install_crds(config: &Path) {
    let crds = run(kolo().arg("crds"), None).stdout;
    // Tests running in parallel may apply them at the same moment; the
    // loser of a create race gets AlreadyExists, and applying again (an
    // update now) succeeds.
    for attempt in 1.. {
        let (description, output) =
            try_run(kubectl(config).args(["apply", "-f", "-"]), Some(&crds));
        if output.status.success() {
            break;
        }
        assert!(attempt < 3, "{description} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    run(
        kubectl(config).args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/nodemetrics.slo.koordinator.sh",
            "crd/nodeslos.slo.koordinator.sh",
            "crd/clustercolocationprofiles.config.koordinator.sh",
        ]),
        None,
    );
}

/// Creates a node labelled `kolo-test=<label>` with this capacity (and the
/// same allocatable) through the status subresource, as a kubelet would,
/// and lifts the `not-ready` taint the API server adds (there is no node
/// lifecycle controller in the test cluster).
pub fn create_node(config: &Path, name: &str, label: &str, cpu: &str, memory: &str) {
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kolo-test": label, "kubernetes.io/hostname": name}},
    });
    create(config, &object);
    let list = serde_json::json!({"cpu": cpu, "memory": memory, "pods": "110"});
    let status = serde_json::json!({"status": {
        "capacity": list, "allocatable": list,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "lastHeartbeatTime": null, "lastTransitionTime": null}],
    }});
    patch(config, &["node", name, "--subresource=status"], &status);
    patch(config, &["node", name], &serde_json::json!({"spec": {"taints": null}}));
}

/// `kubectl patch ARGS --type=merge -p PATCH`.
pub fn patch(config: &Path, args: &[&str], patch: &Value) {
    run(
        kubectl(config).arg("patch").args(args).args(["--type=merge", "-p", &patch.to_string()]),
        None,
    );
}

/// Sets a NodeMetric's status as the node agent reports it: usage now.
pub fn report_usage(config: &Path, node: &str, cpu: &str, memory: &str) {
    let now = kolo_core::clock::Timestamp::now();
    let update_time =
        kolo_core::clock::Timestamp::from_second(now.as_second()).unwrap().to_string();
    let status = serde_json::json!({"status": {
        "updateTime": update_time,
        "nodeMetric": {"nodeUsage": {"resources": {"cpu": cpu, "memory": memory}}},
    }});
    patch(config, &["nodemetric", node, "--subresource=status"], &status);
}

/// `kolo manager run` for this test: no leader election, its own
/// ConfigMap namespace (`id`), only its own nodes (`kolo-test=<id>`), a
/// pass every 2 s; then `extra`.
pub fn manager_args(config: &Path, id: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["manager".to_string(), "run".into()];
    args.extend(component_args(config));
    let selector = format!("kolo-test={id}");
    args.extend(
        ["--leader-elect=false", "--config-namespace", id, "--node-selector", &selector]
            .map(String::from),
    );
    args.extend(["--resync-seconds", "2"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// `kolo ... --kubeconfig` arguments shared by the components.
pub fn component_args(config: &Path) -> Vec<String> {
    vec![
        "--kubeconfig".into(),
        config.display().to_string(),
        "--health-listen".into(),
        "127.0.0.1:0".into(),
    ]
}

/// Runs a command, ignoring failure (cleanup).
pub fn best_effort(cmd: &mut Command) {
    let _ = try_run(cmd, None);
}

/// A pod for `scheduler` that requests `cpu` and may only go to this
/// test's nodes (`kolo-test=<label>`), so tests sharing the cluster never
/// see each other's pods placed on their nodes.
pub fn pod(name: &str, namespace: &str, label: &str, scheduler: &str, cpu: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kolo-test": label}},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"kolo-test": label},
            "containers": [{"name": "c", "image": "registry.invalid/pause",
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"},
                                          "limits": {"cpu": cpu, "memory": "1Gi"}}}],
        },
    })
}

/// A scheduler configuration file whose one profile has its own
/// `schedulerName` (so this test's scheduler touches only this test's
/// pods), with kolo's default plugins.
pub fn scheduler_config(dir: &Path, scheduler_name: &str) -> PathBuf {
    let path = dir.join("scheduler.yaml");
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- schedulerName: {scheduler_name}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The node a pod is bound to, if any.
pub fn node_of(config: &Path, namespace: &str, pod: &str) -> Option<String> {
    let p = get_json(config, &["pod", pod, "-n", namespace])?;
    p["spec"]["nodeName"].as_str().map(String::from)
}

/// The Events of a namespace as (involved object, reason, message).
pub fn events(config: &Path, namespace: &str) -> Vec<(String, String, String)> {
    let Some(list) = get_json(config, &["events", "-n", namespace]) else { return Vec::new() };
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| {
                    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                    (s(&e["involvedObject"]["name"]), s(&e["reason"]), s(&e["message"]))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Nodes `<id>-busy` and `<id>-idle` (16 cores, 32 GiB each, labelled
/// `kolo-test=<id>`) with fresh NodeMetrics: 12 cores in use on the busy
/// one, 1 on the idle one. Returns (busy, idle).
pub fn busy_and_idle_nodes(config: &Path, id: &str) -> (String, String) {
    let (busy, idle) = (format!("{id}-busy"), format!("{id}-idle"));
    for (node, cpu) in [(&busy, "12"), (&idle, "1")] {
        create_node(config, node, id, "16", "32Gi");
        create(
            config,
            &serde_json::json!({
                "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                "metadata": {"name": node, "labels": {"kolo-test": id}}, "spec": {},
            }),
        );
        report_usage(config, node, cpu, "8Gi");
    }
    (busy, idle)
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A test's objects: its id (`run_id(test)`, also its namespace, created
/// here, and its nodes' label), its node's name, the CRDs installed, and
/// their cleanup.
pub fn node_test(config: &Path, test: &str) -> (String, String, NodeCleanup) {
    let id = run_id(test);
    let node = format!("{id}-node");
    install_crds(config);
    run(kubectl(config).args(["create", "namespace", &id]), None);
    let cleanup =
        NodeCleanup { config: config.to_path_buf(), node: node.clone(), namespace: id.clone() };
    (id, node, cleanup)
}

/// Deletes a test's node, its NodeMetric and NodeSLO, and its namespace
/// (with the ConfigMaps in it) when dropped.
pub struct NodeCleanup {
    /// The kubeconfig.
    pub config: PathBuf,
    /// The node.
    pub node: String,
    /// The namespace.
    pub namespace: String,
}

impl Drop for NodeCleanup {
    fn drop(&mut self) {
        let steps = vec![
            vec!["delete", "node", &self.node, "--ignore-not-found"],
            vec!["delete", "nodemetric,nodeslo", &self.node, "--ignore-not-found"],
            vec!["delete", "configmap", "--all", "-n", &self.namespace],
            vec!["delete", "namespace", &self.namespace, "--wait=false"],
        ];
        crate::common::cleanup(&self.config, &steps, &self.namespace);
    }
}

/// `kolo manager run`'s webhook arguments: served on 127.0.0.1:`port`
/// (the API server calls it there), certificate in Secret
/// `<id>/webhook-certs`, configurations named `id`, for namespaces with
/// label `namespace_label` (`key=value`).
pub fn webhook_args(id: &str, port: u16, namespace_label: &str) -> Vec<String> {
    let listen = format!("127.0.0.1:{port}");
    let url = format!("https://127.0.0.1:{port}");
    let secret = format!("{id}/webhook-certs");
    [
        "--webhook-listen",
        &listen,
        "--webhook-url",
        &url,
        "--webhook-secret",
        &secret,
        "--webhook-configuration-name",
        id,
        "--webhook-namespace-label",
        namespace_label,
    ]
    .map(String::from)
    .to_vec()
}

/// A test's namespace `id` and the objects labelled `kolo-test=<id>`,
/// deleted when dropped (logging, not failing, on errors): its pods, the
/// labelled cluster objects of the kinds `labelled` lists (`nodes,nodemetrics`),
/// the namespaced objects of the kinds `namespaced` lists, the namespace.
pub struct TestObjects<'a> {
    /// The cluster's kubeconfig.
    pub config: &'a Path,
    /// The namespace, also the label value.
    pub id: String,
    /// Cluster-scoped kinds to delete by label (`kubectl delete` syntax).
    pub labelled: &'static str,
    /// Kinds to delete in the namespace.
    pub namespaced: &'static str,
}

impl Drop for TestObjects<'_> {
    fn drop(&mut self) {
        let selector = format!("kolo-test={}", self.id);
        let steps = vec![
            vec!["delete", "pods", "--all", "-n", &self.id, "--grace-period=0", "--force"],
            vec!["delete", self.labelled, "-l", &selector],
            vec!["delete", self.namespaced, "--all", "-n", &self.id],
            vec!["delete", "namespace", &self.id, "--wait=false"],
        ];
        crate::common::cleanup(self.config, &steps, &self.id);
    }
}
