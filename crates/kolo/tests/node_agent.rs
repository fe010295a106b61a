//! On a real node (`scripts/cluster`): `kolo agent cluster` reads the pods
//! from the real kubelet (`/pods`), measures them in the cgroups the kubelet
//! created (under its own cgroup root), and writes the node's NodeMetric
//! with the busy pod's CPU — what the kubelet runs, measured where it runs.
//!
//! Needs `KOLO_TEST_NODE_KUBECONFIG`, `KOLO_TEST_NODE_NAME`,
//! `KOLO_TEST_NODE_KUBELET` and `KOLO_TEST_NODE_CGROUP_ROOT`, which
//! `scripts/test` sets when it starts the one-node cluster; skips loudly
//! without them.

mod common;
mod e2e_common;
mod node_common;

use std::path::Path;
use std::time::Duration;

use e2e_common::{Daemon, create, get_json, wait_for};
use node_common::{TestNamespace, busybox_container, real_node};

const TIMEOUT: Duration = Duration::from_secs(90);
const FIRST_POD_TIMEOUT: Duration = Duration::from_secs(180);

/// A pod on the node spinning one CPU-bound loop under a 300m CPU limit.
fn busy_pod(name: &str, namespace: &str, node: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"koordinator.sh/qosClass": "LS"}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [busybox_container("spin", "while :; do :; done", "300m", "300m")],
        },
    })
}

/// The CPU (milli-cores) the node's NodeMetric reports for the pod.
fn reported_cpu(config: &Path, node: &str, namespace: &str, pod: &str) -> Option<i64> {
    let metric = get_json(config, &["nodemetric", node])?;
    let pods = metric["status"]["podsMetric"].as_array()?;
    let entry = pods.iter().find(|p| p["namespace"] == namespace && p["name"] == pod)?;
    let cpu = entry["podUsage"]["resources"]["cpu"].as_str()?;
    kolo_api::quantity::Quantity::parse(cpu).ok().map(|q| q.milli_value())
}

#[test]
fn the_agent_reports_what_the_kubelet_runs_from_its_cgroups() {
    let Some(node) = real_node("node_agent") else { return };
    let config = &node.config;
    let id = e2e_common::run_id("agent");
    e2e_common::install_crds(config);
    let _namespace = TestNamespace::create(&node, &id).also_delete(&[
        "delete",
        "nodemetric",
        &node.name,
        "--ignore-not-found",
    ]);

    create(config, &busy_pod("spin", &id, &node.name));
    // The run's first pod on the node (its first sandbox): more time than
    // the rest, and what held it up if it never runs.
    let started = std::time::Instant::now();
    node_common::wait_running(&node, &id, "spin", FIRST_POD_TIMEOUT);
    eprintln!("the busy pod ran {:?} after it was created", started.elapsed());

    let agent = Daemon::start("node-agent", &node_common::agent_args(&node));
    // The limit holds the loop at 300m; the kernel's CFS accounting lets a
    // window read a little over or under.
    let cpu = wait_for("the NodeMetric to report the busy pod", TIMEOUT, || {
        reported_cpu(config, &node.name, &id, "spin").filter(|cpu| *cpu >= 150)
    });
    assert!((150..=400).contains(&cpu), "busy pod reported at {cpu}m\n{}", agent.log());
}
