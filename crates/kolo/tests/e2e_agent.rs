//! End-to-end: `kolo agent cluster` with a pods file as its pod source
//! (the DaemonSet names the kubelet instead; neither needs `--standalone`)
//! writes its node's NodeMetric status to a real kube-apiserver (creating
//! the object when the manager has not), and follows its NodeSLO.

mod common;
mod e2e_common;

use std::path::Path;
use std::time::Duration;

use common::{cleanup, kubectl, run};
use e2e_common::{Daemon, create, get_json, wait_for};
use serde_json::json;

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
    let args = agent_args(&config, &pods, &node, &[]);
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

/// The bug of issue 17: the agent reported on its own
/// `--report-interval-seconds` whatever the manager wrote in its NodeMetric
/// spec. Here the agent starts with a 1 s interval (its flag, used until a
/// spec is seen); the manager, configured with a 30 s report interval and
/// one 1-minute aggregation window, writes the node's NodeMetric spec; the
/// agent then writes its status every 30 s, with that window only.
#[test]
fn agent_reports_on_the_interval_of_the_spec_the_manager_writes() {
    let Some(config) = common::kubeconfig("e2e_agent") else { return };
    let test = "agent_reports_on_the_interval_of_the_spec_the_manager_writes";
    let mut sandbox = match kolo_agent::sandbox::TestCgroups::new() {
        Ok(s) => s,
        Err(reason) => return kolo_agent::sandbox::skip(test, &reason),
    };
    let (id, node, _cleanup) = e2e_common::node_test(&config, "agent-spec");
    // A node with an LS and a BE pod (real cgroups; nothing is written
    // to them: --dry-run).
    let mut refs = Vec::new();
    for (n, name, qos, kube_qos) in [
        (1, "web", kolo_api::QoSClass::LS, kolo_api::kube_qos::KubeQoSClass::Burstable),
        (2, "batch", kolo_api::QoSClass::BE, kolo_api::kube_qos::KubeQoSClass::BestEffort),
    ] {
        refs.push(sandbox.add_single_container_pod(n, name, qos, kube_qos).0);
    }
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods.json");
    std::fs::write(&pods, kolo_agent::sandbox::pods_file(&refs)).unwrap();
    let cgroups = ["--cgroup-driver", "cgroupfs", "--kubelet-cgroup-root", sandbox.name()];
    let args = agent_args(&config, &pods, &node, &cgroups);
    let agent = Daemon::start("e2e-agent-spec", &args);

    // Before any spec: a report every second.
    let update_time = || -> Option<String> {
        let m = get_json(&config, &["nodemetric", &node])?;
        m["status"]["updateTime"].as_str().map(str::to_string)
    };
    let first = wait_for("the first report", TIMEOUT, update_time);
    wait_for("a report a second later", TIMEOUT, || update_time().filter(|t| *t != first));

    // The manager, with a 30 s report interval and a 1-minute window.
    let colocation = json!({"enable": true, "metricReportIntervalSeconds": 30,
                            "metricAggregatePolicy": {"durations": ["1m0s"]}});
    create(
        &config,
        &json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "slo-controller-config", "namespace": id},
            "data": {"colocation-config": colocation.to_string()},
        }),
    );
    e2e_common::create_node(&config, &node, &id, "2", "8Gi");
    let manager =
        Daemon::start("e2e-agent-spec-manager", &e2e_common::manager_args(&config, &id, &[]));
    wait_for("the manager's NodeMetric spec", TIMEOUT, || {
        let m = get_json(&config, &["nodemetric", &node])?;
        (m["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 30).then_some(())
    });
    wait_for("the agent to follow it", TIMEOUT, || {
        agent
            .log()
            .contains("following the NodeMetric spec report_interval_seconds=30")
            .then_some(())
    });

    // From now on the status is rewritten every 30 s, not every second:
    // quiet for 5 s (five reports at the old interval), then one report
    // 30 s after the last, carrying the spec's window only.
    let last = update_time().unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let quiet = update_time().unwrap();
    let next = wait_for("the next report", Duration::from_secs(45), || {
        let m = get_json(&config, &["nodemetric", &node])?;
        (m["status"]["updateTime"].as_str()? != quiet).then_some(m)
    });
    let seconds = |t: &str| t.parse::<kolo_core::clock::Timestamp>().unwrap().as_second();
    let gap = seconds(next["status"]["updateTime"].as_str().unwrap()) - seconds(&quiet);
    let windows: Vec<&str> = next["status"]["nodeMetric"]["aggregatedNodeUsages"]
        .as_array()
        .map(|a| a.iter().filter_map(|w| w["duration"].as_str()).collect())
        .unwrap_or_default();
    drop(manager);
    drop(agent);
    drop(sandbox);
    assert_eq!(quiet, last, "no report within 5 s of following a 30 s interval");
    assert!((25..=35).contains(&gap), "reports 30 s apart, got {gap} s: {next}");
    assert_eq!(windows, ["1m0s"], "the spec's aggregation window only: {next}");
}

/// `kolo agent cluster` for `node` with the pods of `pods`: a tick every
/// 200 ms, a report every second until a NodeMetric spec says otherwise,
/// nothing written to cgroups; then `extra`.
fn agent_args(config: &Path, pods: &Path, node: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["agent", "cluster", "--kubeconfig"].map(String::from).to_vec();
    args.push(config.display().to_string());
    args.extend(["--pods".to_string(), pods.display().to_string(), "--node-name".into()]);
    args.push(node.to_string());
    let rest = ["--interval-ms", "200", "--report-interval-seconds", "1", "--dry-run"];
    args.extend(rest.iter().chain(extra).map(|s| s.to_string()));
    args
}
