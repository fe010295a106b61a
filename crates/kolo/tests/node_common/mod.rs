//! Helpers of the real-node tests (`node_*.rs`): the one-node cluster
//! `scripts/test` starts with `scripts/cluster`, pods of the local busybox
//! image, and a test namespace removed afterwards.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Write;
use std::path::PathBuf;

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
            Some(RealNode { config: config.into(), name, kubelet, cgroup_root })
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
        let mut steps =
            vec![vec!["delete", "deployments,pods", "--all", "-n", ns, "--grace-period=1"]];
        steps.extend(self.extra.iter().map(|a| a.iter().map(String::as_str).collect()));
        steps.push(vec!["delete", "namespace", ns, "--wait=false"]);
        cleanup(&self.node.config, &steps, ns);
    }
}
