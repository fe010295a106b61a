//! End-to-end: `kolo agent cluster` with a pods file as its pod source
//! (the DaemonSet names the kubelet instead; neither needs `--standalone`)
//! writes its node's NodeMetric status to a real kube-apiserver (creating
//! the object when the manager has not), and follows its NodeSLO.

mod common;
mod e2e_common;

use std::time::Duration;

use common::{cleanup, kubectl, run};
use e2e_common::{Daemon, create, get_json, wait_for};

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn agent_reports_its_node_metric_and_follows_its_node_slo() {
    let Some(config) = common::kubeconfig("e2e_agent") else { return };
    let id = e2e_common::run_id("agent");
    e2e_common::install_crds(&config);
    let node = format!("{id}-node");
    let _cleanup = Cleanup { config: config.clone(), node: node.clone() };
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods.json");
    std::fs::write(&pods, kolo_agent::sandbox::pods_file(&[])).unwrap();
    let args = [
        "agent",
        "cluster",
        "--kubeconfig",
        config.to_str().unwrap(),
        "--pods",
        pods.to_str().unwrap(),
        "--node-name",
        &node,
        "--interval-ms",
        "200",
        "--report-interval-seconds",
        "1",
        "--dry-run",
    ];
    let agent = Daemon::start("e2e-agent", &args);

    // The NodeMetric appears with this machine's usage.
    let metric = wait_for("the NodeMetric status", TIMEOUT, || {
        let m = get_json(&config, &["nodemetric", &node])?;
        m["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"].is_string().then_some(m)
    });
    assert!(metric["status"]["updateTime"].is_string(), "{metric}");
    // And it keeps being refreshed.
    let first = metric["status"]["updateTime"].clone();
    wait_for("a later report", TIMEOUT, || {
        let m = get_json(&config, &["nodemetric", &node])?;
        (m["status"]["updateTime"] != first).then_some(())
    });

    // The node's NodeSLO reaches the agent.
    create(
        &config,
        &serde_json::json!({
            "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": node},
            "spec": {"resourceUsedThresholdWithBE": {"enable": true, "cpuSuppressThresholdPercent": 55}},
        }),
    );
    wait_for("the agent to see its NodeSLO", TIMEOUT, || {
        agent.log().contains("NodeSLO updated").then_some(())
    });
    run(kubectl(&config).args(["get", "nodemetric", &node]), None);
}

struct Cleanup {
    config: std::path::PathBuf,
    node: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let steps = vec![vec!["delete", "nodemetric,nodeslo", &self.node, "--ignore-not-found"]];
        cleanup(&self.config, &steps, "");
    }
}
