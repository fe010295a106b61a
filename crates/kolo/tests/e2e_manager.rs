//! End-to-end: `kolo manager run` against a real kube-apiserver creates the
//! NodeMetric and NodeSLO of a node, and once the node's agent reports its
//! usage, patches the node's status with the batch allocatable that the
//! what-if `kolo noderesource` computes for the same objects; when the node
//! goes, the objects it created go too.

mod common;
mod e2e_common;

use std::time::Duration;

use common::{kubectl, run, run_kolo};
use e2e_common::{Daemon, create, create_node, get_json, report_usage, wait_for};
use kolo_manager::noderesource::ColocationResource;
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn manager_writes_nodemetric_nodeslo_and_batch_allocatable() {
    let Some(config) = common::kubeconfig("e2e_manager") else { return };
    let (id, node, _cleanup) = e2e_common::node_test(&config, "mgr");
    let colocation = json!({"enable": true, "cpuReclaimThresholdPercent": 60,
                            "memoryReclaimThresholdPercent": 65, "degradeTimeMinutes": 15});
    let configmap = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "slo-controller-config", "namespace": id},
        "data": {"colocation-config": colocation.to_string()},
    });
    create(&config, &configmap);
    create_node(&config, &node, &id, "16", "32Gi");

    let selector = format!("kolo-test={id}");
    let port = e2e_common::free_port();
    let mut args = e2e_common::manager_args(&config, &id, &[]);
    let default = args.iter().position(|a| a == "127.0.0.1:0").expect("component_args");
    args[default] = format!("127.0.0.1:{port}");
    let manager = Daemon::start("e2e-manager", &args);

    // 1. The manager creates the node's NodeMetric (collect policy) and
    // NodeSLO.
    let metric = wait_for("the NodeMetric", TIMEOUT, || get_json(&config, &["nodemetric", &node]));
    assert!(
        metric["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"].is_number(),
        "{metric}"
    );
    let slo = wait_for("the NodeSLO", TIMEOUT, || get_json(&config, &["nodeslo", &node]));
    assert!(slo["spec"]["resourceUsedThresholdWithBE"].is_object(), "{slo}");

    // 2. The agent's report: 4 cores and 8 GiB in use. The manager then
    // publishes batch resources.
    report_usage(&config, &node, "4", "8Gi");
    let status = wait_for("batch allocatable on the node", TIMEOUT, || {
        let n = get_json(&config, &["node", &node])?;
        n["status"]["allocatable"]["kubernetes.io/batch-cpu"].is_string().then_some(n)
    });

    // 3. The same numbers as the what-if on a dump of the same objects.
    let dump = run(
        kubectl(&config).args(["get", "nodes,nodemetrics", "-l", &selector, "-o", "yaml"]),
        None,
    )
    .stdout;
    let metric_dump =
        run(kubectl(&config).args(["get", "nodemetric", &node, "-o", "yaml"]), None).stdout;
    let dir = tempfile::tempdir().unwrap();
    let (nodes_file, metric_file, cm_file) =
        (dir.path().join("nodes.yaml"), dir.path().join("nm.yaml"), dir.path().join("cm.json"));
    std::fs::write(&nodes_file, dump).unwrap();
    std::fs::write(&metric_file, metric_dump).unwrap();
    std::fs::write(&cm_file, configmap.to_string()).unwrap();
    let whatif = common::json(&run_kolo(
        &[
            "noderesource",
            "--snapshot",
            nodes_file.to_str().unwrap(),
            "--snapshot",
            metric_file.to_str().unwrap(),
            "--config",
            cm_file.to_str().unwrap(),
            "-o",
            "json",
        ],
        None,
    ));
    let expected = whatif["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["node"] == node.as_str()))
        .unwrap_or_else(|| panic!("node {node} missing from {whatif}"));
    let published = &status["status"]["allocatable"];
    let want = &expected["patch"]["status"]["allocatable"];
    assert!(expected["batch"]["cpu"].as_i64().unwrap() > 0, "{expected}");
    for resource in ColocationResource::ALL {
        assert_eq!(published[resource.name()], want[resource.name()], "{resource:?}: {expected}");
    }
    // And the what-if sees nothing left to change.
    assert!(expected["change"].is_null(), "{expected}");

    // Its /metrics: what docs/metrics.md lists, the batch terms of the node
    // among them. No webhook here, and no mid resources configured.
    let metrics = common::metrics_doc::http_get(port, "/metrics").expect("/metrics");
    common::metrics_doc::check(
        "manager",
        &metrics,
        &[
            "kolo_webhook_requests_total",
            "kolo_webhook_request_duration_seconds",
            "kolo_webhook_handler_failures_total",
            "kolo_webhook_connection_errors_total",
            "kolo_webhook_certificate_expiry_timestamp_seconds",
            "kolo_webhook_certificate_renewals_total",
            "kolo_manager_node_mid_cpu_cores",
            "kolo_manager_node_mid_memory_bytes",
        ],
    );
    let allocatable =
        format!("kolo_manager_node_batch_cpu_cores{{node=\"{node}\",term=\"allocatable\"}} ");
    let line = metrics
        .lines()
        .find(|l| l.starts_with(&allocatable))
        .unwrap_or_else(|| panic!("{metrics}"));
    let published_cores = expected["batch"]["cpu"].as_f64().unwrap() / 1000.0;
    assert_eq!(line[allocatable.len()..].parse::<f64>().unwrap(), published_cores, "{line}");

    // 4. The node goes: the objects the manager created for it go too.
    run(kubectl(&config).args(["delete", "node", &node]), None);
    wait_for("the NodeSLO to be deleted", TIMEOUT, || {
        get_json(&config, &["nodeslo", &node]).is_none().then_some(())
    });
    wait_for("the NodeMetric to be deleted", TIMEOUT, || {
        get_json(&config, &["nodemetric", &node]).is_none().then_some(())
    });
    drop(manager);
}
