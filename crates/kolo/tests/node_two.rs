//! On two real nodes (`scripts/cluster start --nodes 2`: two kubelets on
//! this machine, each with its own containerd, root directory, ports and
//! cgroup root): a pod bound to each node is started by that node's
//! kubelet, reaches Running, prints its output (`kubectl logs`, which the
//! API server fetches from that kubelet), runs in a cgroup under that
//! node's own kubepods tree (`kubectl exec`), and reaches the other node's
//! pod over the pod network. What descheduling, spread, anti-affinity and
//! migration tests need: pods on distinct, real nodes.
//!
//! Needs the `KOLO_TEST_NODE_*` variables `scripts/test` sets when it
//! starts the cluster, with at least two nodes; skips loudly without them.

mod common;
mod e2e_common;
mod node_common;

use std::time::Duration;

use common::{kubectl, run};
use e2e_common::{create, get_json, wait_for};
use node_common::{ClusterNode, TestNamespace, busybox_container, real_nodes};

/// Pulling nothing (the image is local), a pod starts in a few seconds; the
/// bound leaves room for a busy machine.
const TIMEOUT: Duration = Duration::from_secs(90);

/// A pod bound to `node` (no scheduler) that prints which node it was
/// meant for and serves its /etc over HTTP on port 8080.
fn pod_on(name: &str, namespace: &str, node: &ClusterNode) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node.name,
            "terminationGracePeriodSeconds": 1,
            "containers": [busybox_container(
                "c",
                &format!("echo on {}; exec httpd -f -p 8080 -h /etc", node.name),
                "100m",
                "200m",
            )],
        },
    })
}

/// `kubectl exec` in the pod's container; its stdout.
fn exec(config: &std::path::Path, namespace: &str, pod: &str, command: &[&str]) -> String {
    let output =
        run(kubectl(config).args(["exec", "-n", namespace, pod, "--"]).args(command), None);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn pods_run_on_two_real_nodes_each_under_its_own_cgroup_root() {
    let Some((real, nodes)) = real_nodes("node_two", 2) else { return };
    let config = &real.config;
    let id = e2e_common::run_id("two");
    let _namespace = TestNamespace::create(&real, &id);
    let nodes = &nodes[..2];
    assert_ne!(nodes[0].cgroup_root, nodes[1].cgroup_root, "two nodes, one cgroup root");

    let names: Vec<String> = (0..nodes.len()).map(|i| format!("p{i}")).collect();
    for (name, node) in names.iter().zip(nodes) {
        create(config, &pod_on(name, &id, node));
    }
    let pods: Vec<serde_json::Value> = names
        .iter()
        .map(|name| {
            wait_for(&format!("pod {name} to run"), TIMEOUT, || {
                let pod = get_json(config, &["pod", name, "-n", &id])?;
                let ready = pod["status"]["containerStatuses"][0]["ready"].as_bool() == Some(true);
                (pod["status"]["phase"] == "Running" && ready).then_some(pod)
            })
        })
        .collect();

    for ((name, node), pod) in names.iter().zip(nodes).zip(&pods) {
        assert_eq!(pod["spec"]["nodeName"], node.name.as_str(), "{pod}");
        // The API server fetched the log from this node's kubelet.
        let logs = run(kubectl(config).args(["logs", "-n", &id, name]), None).stdout;
        assert_eq!(String::from_utf8_lossy(&logs).trim(), format!("on {}", node.name));
        // This node's kubelet made the pod's cgroup, under its own root.
        let cgroup = exec(config, &id, name, &["cat", "/proc/self/cgroup"]);
        let uid = pod["metadata"]["uid"].as_str().unwrap();
        let cpu_path = cgroup
            .lines()
            .find_map(|l| {
                let (_, rest) = l.split_once(':')?;
                let (controllers, path) = rest.split_once(':')?;
                controllers.split(',').any(|c| c == "cpu").then_some(path)
            })
            .unwrap_or_else(|| panic!("no cpu cgroup in {cgroup}"));
        let expected = format!("{}/kubepods/burstable/pod{uid}/", node.cgroup_root);
        assert!(
            cpu_path.starts_with(&expected),
            "pod {name} on {}: its cgroup {cpu_path} is not under {expected}",
            node.name
        );
    }

    // One pod network across the nodes: the first node's pod fetches a file
    // from the second's.
    let ips: Vec<&str> = pods.iter().map(|p| p["status"]["podIP"].as_str().unwrap()).collect();
    assert_ne!(ips[0], ips[1], "two pods, one address");
    let reply = exec(
        config,
        &id,
        &names[0],
        &[
            "sh",
            "-c",
            &format!("printf 'GET /passwd HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {} 8080", ips[1]),
        ],
    );
    assert!(
        reply.starts_with("HTTP/1.1 200") && reply.contains("root:x:0:0"),
        "{} could not fetch /passwd from {} ({}): {reply}",
        names[0],
        names[1],
        ips[1]
    );
}
