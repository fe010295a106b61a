//! Helpers of the real-node tests (`node_*.rs`): the cluster `scripts/test`
//! starts with `scripts/cluster` (its first node, or all of its nodes), pods
//! of the local busybox image, and a test namespace removed afterwards.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{cleanup, kubectl, run};

/// The one-node cluster, as `scripts/cluster start` describes it in
/// `DIR/node.env` and `scripts/test` exports it.
pub struct RealNode {
    /// `KOLO_TEST_NODE_KUBECONFIG`.
    pub config: PathBuf,
    /// `KOLO_TEST_NODE_NAME`: the node the kubelet registered.
    pub name: String,
    /// `KOLO_TEST_NODE_KUBELET`: the kubelet's address (`127.0.0.1:PORT`).
    pub kubelet: String,
    /// `KOLO_TEST_NODE_CGROUP_ROOT`: the kubelet's `--cgroup-root`.
    pub cgroup_root: String,
    /// `KOLO_TEST_NODE_1_HOOK_SOCKET`: where the node's runtime proxy calls
    /// the agent's hooks (`scripts/cluster start --runtime-proxy`), if the
    /// kubelet runs through one.
    pub hook_socket: Option<String>,
}

/// The one-node cluster, or `None` after saying loudly that `test` skips.
pub fn real_node(test: &str) -> Option<RealNode> {
    let var = |name: &str| std::env::var(name).ok();
    match (
        var("KOLO_TEST_NODE_KUBECONFIG"),
        var("KOLO_TEST_NODE_NAME"),
        var("KOLO_TEST_NODE_KUBELET"),
        var("KOLO_TEST_NODE_CGROUP_ROOT"),
    ) {
        (Some(config), Some(name), Some(kubelet), Some(cgroup_root)) => {
            let hook_socket = var("KOLO_TEST_NODE_1_HOOK_SOCKET");
            Some(RealNode { config: config.into(), name, kubelet, cgroup_root, hook_socket })
        }
        _ => {
            // Straight to stderr, past the harness's capture, so the skip shows.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED {test} test: KOLO_TEST_NODE_* are not set. Run scripts/test \
                 (which starts a one-node cluster with scripts/cluster) to run it. ***"
            );
            None
        }
    }
}

/// One kubelet of the cluster, as `DIR/node.env` describes it
/// (`KOLO_TEST_NODE_<i>_NAME`, `_KUBELET`, `_CGROUP_ROOT`; the first node
/// is also `RealNode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    /// The node's name.
    pub name: String,
    /// Its kubelet's address (`127.0.0.1:PORT`).
    pub kubelet: String,
    /// Its kubelet's `--cgroup-root` (every node has its own).
    pub cgroup_root: String,
}

/// Every node of `real`'s cluster, the first (`real` itself) first, from
/// `KOLO_TEST_NODE_NAMES` and `KOLO_TEST_NODE_<i>_*` (`scripts/cluster
/// start --nodes N`, `add-node`); just `real` when the list is not set (a
/// `node.env` written before clusters had more than one node). Panics when
/// the variables contradict each other: a skip would hide the mistake.
pub fn cluster_nodes(real: &RealNode) -> Vec<ClusterNode> {
    let first = ClusterNode {
        name: real.name.clone(),
        kubelet: real.kubelet.clone(),
        cgroup_root: real.cgroup_root.clone(),
    };
    let Ok(names) = std::env::var("KOLO_TEST_NODE_NAMES") else { return vec![first] };
    let nodes: Vec<ClusterNode> = names
        .split_whitespace()
        .enumerate()
        .map(|(i, name)| {
            let var = |what: &str| {
                let key = format!("KOLO_TEST_NODE_{}_{what}", i + 1);
                std::env::var(&key).unwrap_or_else(|_| {
                    panic!("KOLO_TEST_NODE_NAMES lists {name} but {key} is not set")
                })
            };
            let node = ClusterNode {
                name: var("NAME"),
                kubelet: var("KUBELET"),
                cgroup_root: var("CGROUP_ROOT"),
            };
            assert_eq!(node.name, name, "KOLO_TEST_NODE_{}_NAME", i + 1);
            node
        })
        .collect();
    assert_eq!(
        nodes.first(),
        Some(&first),
        "KOLO_TEST_NODE_1_* must be the node of KOLO_TEST_NODE_NAME, _KUBELET, _CGROUP_ROOT"
    );
    nodes
}

/// The cluster and its nodes when it has at least `count`, or `None` after
/// saying loudly that `test` skips (like `real_node`).
pub fn real_nodes(test: &str, count: usize) -> Option<(RealNode, Vec<ClusterNode>)> {
    let real = real_node(test)?;
    let nodes = cluster_nodes(&real);
    if nodes.len() < count {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED {test} test: the cluster has {} node(s), the test needs {count}. \
             Run scripts/test (which starts two) or scripts/cluster start --nodes {count}. ***",
            nodes.len()
        );
        return None;
    }
    Some((real, nodes))
}

/// A container of the local busybox image (never pulled) running `script`
/// with these CPU request and limit (memory 32Mi / 64Mi).
pub fn busybox_container(name: &str, script: &str, cpu_request: &str, cpu_limit: &str) -> Value {
    serde_json::json!({
        "name": name,
        "image": "docker.io/local/busybox:1",
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        "resources": {"requests": {"cpu": cpu_request, "memory": "32Mi"},
                      "limits": {"cpu": cpu_limit, "memory": "64Mi"}},
    })
}

/// A namespace for one test, deleted (with what `extra` deletes first)
/// when dropped.
pub struct TestNamespace<'a> {
    node: &'a RealNode,
    /// Its name.
    pub name: String,
    extra: Vec<Vec<String>>,
}

impl<'a> TestNamespace<'a> {
    /// Creates namespace `name` on `node`'s cluster.
    pub fn create(node: &'a RealNode, name: &str) -> TestNamespace<'a> {
        run(kubectl(&node.config).args(["create", "namespace", name]), None);
        TestNamespace { node, name: name.to_string(), extra: Vec::new() }
    }

    /// Also runs `kubectl ARGS` when dropped, before the namespace goes.
    pub fn also_delete(mut self, args: &[&str]) -> TestNamespace<'a> {
        self.extra.push(args.iter().map(|s| s.to_string()).collect());
        self
    }
}

impl Drop for TestNamespace<'_> {
    fn drop(&mut self) {
        let ns = self.name.as_str();
        let mut steps = vec![vec![
            "delete",
            "deployments,pods",
            "--all",
            "-n",
            ns,
            "--grace-period=1",
            "--timeout=60s",
        ]];
        steps.extend(self.extra.iter().map(|a| a.iter().map(String::as_str).collect()));
        steps.push(vec!["delete", "namespace", ns, "--wait=false"]);
        cleanup(&self.node.config, &steps, ns);
    }
}

/// `kolo agent cluster` for `node`: pods from its kubelet, cgroups under
/// its cgroup root, the NodeMetric written every 2 s until the manager's
/// NodeMetric spec says otherwise, `/metrics` on a free port, and the hook
/// server where the node's runtime proxy calls it (if it has one).
pub fn agent_args(node: &RealNode) -> Vec<String> {
    let hooks = node.hook_socket.iter().flat_map(|s| ["--hook-socket".to_string(), s.clone()]);
    [
        "agent",
        "cluster",
        "--kubeconfig",
        node.config.to_str().unwrap(),
        "--node-name",
        &node.name,
        "--kubelet",
        &node.kubelet,
        "--kubelet-cgroup-root",
        &node.cgroup_root,
        "--report-interval-seconds",
        "2",
        "--listen",
        "127.0.0.1:0",
    ]
    .map(String::from)
    .into_iter()
    .chain(hooks)
    .collect()
}

/// The node's hook socket, asserting it has one in CI (where scripts/test
/// starts the nodes with their runtime proxies); `None` after saying
/// loudly that the hook checks of `test` skip.
pub fn hook_socket<'n>(node: &'n RealNode, test: &str) -> Option<&'n str> {
    match node.hook_socket.as_deref() {
        Some(socket) => Some(socket),
        None => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "KOLO_TEST_NODE_1_HOOK_SOCKET unset: CI runs the nodes through kolo's runtime proxy"
            );
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED the runtime-hook checks of {test}: the node's kubelet does not run \
                 through kolo's runtime proxy (scripts/cluster start --runtime-proxy). ***"
            );
            None
        }
    }
}

/// Waits until pod `namespace/name` is Running and returns it; on timeout
/// panics with what explains a pod that never ran: `kubectl describe`
/// (its conditions and Events), the node's conditions, and the errors of
/// the cluster's kubelet logs (`DIR/logs`, DIR holding the kubeconfig).
pub fn wait_running(node: &RealNode, namespace: &str, name: &str, timeout: Duration) -> Value {
    let start = Instant::now();
    loop {
        let (_, out) = crate::common::try_run(
            kubectl(&node.config).args(["get", "pod", name, "-n", namespace, "-o", "json"]),
            None,
        );
        let pod: Option<Value> =
            out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten();
        if let Some(pod) = pod.filter(|p| p["status"]["phase"] == "Running") {
            return pod;
        }
        if start.elapsed() >= timeout {
            panic!(
                "timed out after {timeout:?} waiting for pod {namespace}/{name} to run\n{}",
                why_not_running(node, namespace, name)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What the cluster says of a pod that is not running (for a failure
/// message).
fn why_not_running(node: &RealNode, namespace: &str, name: &str) -> String {
    let kubectl_text = |args: &[&str]| {
        let (_, out) = crate::common::try_run(kubectl(&node.config).args(args), None);
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let mut text = format!(
        "---- kubectl describe pod ----\n{}",
        kubectl_text(&["describe", "pod", name, "-n", namespace])
    );
    text += &format!(
        "---- node {} ----\n{}",
        node.name,
        kubectl_text(&["get", "node", &node.name, "-o", "wide"])
    );
    let logs = node.config.parent().map(|d| d.join("logs")).unwrap_or_default();
    for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        let path = entry.path();
        if !path.file_name().is_some_and(|f| f.to_string_lossy().starts_with("kubelet")) {
            continue;
        }
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        let errors: Vec<&str> =
            log.lines().filter(|l| l.starts_with('E') || l.starts_with('W')).collect();
        let tail = &errors[errors.len().saturating_sub(20)..];
        text += &format!(
            "---- {} (last errors and warnings) ----\n{}\n",
            path.display(),
            tail.join("\n")
        );
    }
    text
}
