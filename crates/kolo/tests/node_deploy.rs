//! On a real node (`scripts/cluster`: a kubelet running pods with containerd
//! and runc, and kube-controller-manager): a Deployment whose pods name
//! kolo's scheduler is rolled out by the controller-manager, its pod is
//! bound by `kolo scheduler` to the node, started by the kubelet, and
//! reaches Running with its container ready, in the cgroup the kubelet made
//! for it under the node's kubepods tree.
//!
//! Needs the `KOLO_TEST_NODE_*` variables `scripts/test` sets when it
//! starts the one-node cluster; skips loudly without them.

mod common;
mod e2e_common;
mod node_common;

use std::path::Path;
use std::time::Duration;

use common::{kubectl, run};
use e2e_common::{Daemon, component_args, create, get_json, scheduler_config, wait_for};
use node_common::{TestNamespace, busybox_container, real_node};

/// Pulling nothing (the image is local), a pod starts in a few seconds; the
/// bound leaves room for a busy machine.
const TIMEOUT: Duration = Duration::from_secs(90);

fn deployment(name: &str, namespace: &str, scheduler: &str, node: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "koordinator.sh/qosClass": "LS"}},
                "spec": {
                    "schedulerName": scheduler,
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "terminationGracePeriodSeconds": 1,
                    "containers": [busybox_container(
                        "c", "echo started; exec sleep 3600", "100m", "200m",
                    )],
                },
            },
        },
    })
}

/// The Deployment's one pod, once it has one.
fn the_pod(config: &Path, namespace: &str, app: &str) -> Option<serde_json::Value> {
    let list = get_json(config, &["pods", "-n", namespace, "-l", &format!("app={app}")])?;
    list["items"].as_array()?.first().cloned()
}

#[test]
fn a_deployment_scheduled_by_kolo_runs_on_the_real_node() {
    let Some(real) = real_node("node_deploy") else { return };
    let (config, node) = (&real.config, &real.name);
    let id = e2e_common::run_id("node");
    e2e_common::install_crds(config);
    let _namespace = TestNamespace::create(&real, &id);
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["scheduler".to_string()];
    args.extend(component_args(config));
    args.extend(["--config".into(), scheduler_config(dir.path(), &id).display().to_string()]);
    args.push("--leader-elect=false".into());
    let scheduler = Daemon::start("node-scheduler", &args);

    create(config, &deployment("web", &id, &id, node));
    let pod = wait_for("the pod to run", TIMEOUT, || {
        let pod = the_pod(config, &id, "web")?;
        let ready = pod["status"]["containerStatuses"][0]["ready"].as_bool() == Some(true);
        (pod["status"]["phase"] == "Running" && ready).then_some(pod)
    });
    assert_eq!(pod["spec"]["nodeName"], node.as_str(), "{pod}\n{}", scheduler.log());
    let name = pod["metadata"]["name"].as_str().unwrap();
    let scheduled = get_json(
        config,
        &["events", "-n", &id, "--field-selector", &format!("involvedObject.name={name}")],
    )
    .unwrap();
    let by_kolo = scheduled["items"].as_array().unwrap().iter().any(|e| {
        e["reason"] == "Scheduled"
            && (e["reportingComponent"] == "kolo-scheduler"
                || e["source"]["component"] == "kolo-scheduler")
    });
    assert!(by_kolo, "no Scheduled Event from kolo-scheduler: {scheduled}");
    // The kubelet started the container: its output, and its cgroup is
    // the pod's under the node's burstable QoS tree.
    let logs = run(kubectl(config).args(["logs", "-n", &id, name]), None).stdout;
    assert_eq!(String::from_utf8_lossy(&logs).trim(), "started");
    let cgroup = run(
        kubectl(config).args(["exec", "-n", &id, name, "--", "cat", "/proc/self/cgroup"]),
        None,
    )
    .stdout;
    let cgroup = String::from_utf8_lossy(&cgroup);
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let cpu_line =
        cgroup.lines().find(|l| l.contains(":cpu,") || l.contains(":cpu:")).unwrap_or("");
    assert!(
        cpu_line.contains(&format!("/kubepods/burstable/pod{uid}/")),
        "the container's cgroup is not the pod's burstable one: {cgroup}"
    );
}
