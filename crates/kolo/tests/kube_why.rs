//! `kolo why` against a real kube-apiserver: a node (with an InternalIP),
//! its NodeMetric, an `slo-controller-config`, pods and a
//! `FailedScheduling` Event are created with `kubectl`; `kolo why pod`
//! explains the pending pod from the Event and a what-if, a BE pod from
//! what its node agent's `/actions` answers (a stand-in serving the
//! agent's own types: no node agent runs here) or says the agent is
//! unreachable; `kolo why node`'s batch figures equal `kolo noderesource`'s
//! on a dump of the same objects.
//!
//! Runs when `KOLO_TEST_KUBECONFIG` names a kubeconfig; otherwise it says
//! loudly that it skipped. Every object has a unique name and is deleted at
//! the end.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use kolo_agent::history::{
    Action, ActionKind, Current, DEFAULT_CAPACITY, HistoryView, Target, Usage,
};
use kolo_agent::qos::Figures;
use serde_json::{Value, json};

mod common;

use common::{NamespaceCleanup as Cleanup, kolo, kubectl, run};

fn create(config: &Path, object: &Value) {
    run(kubectl(config).args(["create", "-f", "-"]), Some(object.to_string().as_bytes()));
}

fn patch_status(config: &Path, kind: &str, name: &str, status: &Value) {
    let patch = json!({ "status": status }).to_string();
    run(
        kubectl(config)
            .args(["patch", kind, name, "--subresource=status", "--type=merge", "-p"])
            .arg(&patch),
        None,
    );
}

fn pod(name: &str, namespace: &str, label: &str, node: Option<&str>, be: bool) -> Value {
    let (qos, resources) = if be {
        (
            "BE",
            json!({"requests": {"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "4Gi"},
                      "limits": {"kubernetes.io/batch-cpu": "4000", "kubernetes.io/batch-memory": "4Gi"}}),
        )
    } else {
        ("LS", json!({"requests": {"cpu": "4", "memory": "8Gi"}}))
    };
    let mut spec = json!({
        "schedulerName": "kolo-scheduler",
        "nodeSelector": {"kolo-test": label},
        "containers": [{"name": "c", "image": "busybox", "resources": resources}],
    });
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"kolo-test": label, "koordinator.sh/qosClass": qos}},
        "spec": spec,
    })
}

/// A stand-in for the node agent's `/actions`: answers every request with
/// `view` until the test ends.
fn serve_actions(view: &HistoryView) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = serde_json::to_string(view).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn why(config: &Path, args: &[&str]) -> (Value, String) {
    let mut cmd = kolo();
    cmd.arg("why").args(args).arg("--kubeconfig").arg(config);
    let json: Value = serde_json::from_slice(&run(cmd.arg("-o").arg("json"), None).stdout).unwrap();
    let mut cmd = kolo();
    cmd.arg("why").args(args).arg("--kubeconfig").arg(config);
    let text = String::from_utf8(run(&mut cmd, None).stdout).unwrap();
    (json, text)
}

#[test]
fn why_explains_pods_and_nodes_of_a_real_api_server() {
    let Some(config) = common::kubeconfig("kube_why") else { return };
    let config = config.as_path();
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let id = format!("w{}-{}", std::process::id(), stamp.as_millis() % 1_000_000);
    let namespace = format!("kolo-why-{id}");
    let node = format!("{id}-node");
    let _cleanup = Cleanup { config, label: id.clone(), namespace: namespace.clone() };

    let crds = run(kolo().arg("crds"), None).stdout;
    run(kubectl(config).args(["apply", "-f", "-"]), Some(&crds));
    run(
        kubectl(config).args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/nodemetrics.slo.koordinator.sh",
        ]),
        None,
    );
    run(kubectl(config).args(["create", "namespace", &namespace]), None);

    // The node: 16 cores, 32 GiB, InternalIP 127.0.0.2 (where the agent
    // port is closed: no agent), no taints.
    create(
        config,
        &json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node, "labels": {"kolo-test": id, "kubernetes.io/hostname": node}}}),
    );
    let resources = json!({"cpu": "16", "memory": "32Gi", "pods": "110"});
    patch_status(
        config,
        "node",
        &node,
        &json!({
            "capacity": resources, "allocatable": resources,
            "addresses": [{"type": "InternalIP", "address": "127.0.0.2"}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        }),
    );
    run(
        kubectl(config).args([
            "patch",
            "node",
            &node,
            "--type=merge",
            "-p",
            r#"{"spec":{"taints":null}}"#,
        ]),
        None,
    );

    // Its NodeMetric, fresh: 6 cores and 12 GiB used, 4 cores and 8 GiB by
    // the LS pod.
    let now = kolo_core::clock::Timestamp::now();
    let update = kolo_core::clock::Timestamp::from_second(now.as_second()).unwrap().to_string();
    create(
        config,
        &json!({"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node, "labels": {"kolo-test": id}}, "spec": {}}),
    );
    patch_status(
        config,
        "nodemetric",
        &node,
        &json!({
            "updateTime": update,
            "nodeMetric": {"nodeUsage": {"resources": {"cpu": "6", "memory": "12Gi"}},
                           "systemUsage": {"resources": {"cpu": "1", "memory": "2Gi"}}},
            "podsMetric": [{"namespace": namespace, "name": "ls", "priority": "koord-prod", "qos": "LS",
                            "podUsage": {"resources": {"cpu": "4", "memory": "8Gi"}}}],
        }),
    );
    // Co-location on, in this test's own namespace (--config-namespace).
    create(
        config,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "slo-controller-config", "namespace": namespace},
        "data": {"colocation-config": r#"{"enable": true, "cpuReclaimThresholdPercent": 60, "memoryReclaimThresholdPercent": 65, "memoryCalculatePolicy": "usage"}"#}}),
    );

    // Pods: an LS pod and a BE pod bound to the node, a BE pod pending
    // (the node publishes no batch-cpu yet: no manager runs here).
    for p in [
        pod("ls", &namespace, &id, Some(&node), false),
        pod("be", &namespace, &id, Some(&node), true),
        pod("waiting", &namespace, &id, None, true),
    ] {
        create(config, &p);
    }
    let uid = |name: &str| {
        let out = run(
            kubectl(config).args([
                "get",
                "pod",
                name,
                "-n",
                &namespace,
                "-o",
                "jsonpath={.metadata.uid}",
            ]),
            None,
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let message = "0/1 nodes are available: 1 Insufficient kubernetes.io/batch-cpu.";
    let event_time = "2026-11-28T00:00:00.000000Z";
    create(
        config,
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": format!("waiting.{id}"), "namespace": namespace},
        "eventTime": event_time, "reportingController": "kolo-scheduler", "reportingInstance": "kolo-scheduler-0",
        "action": "Scheduling", "reason": "FailedScheduling", "type": "Warning", "note": message,
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": "waiting", "uid": uid("waiting")}}),
    );

    // 1. The pending pod: the Event's words, and the what-if now.
    let (json, text) =
        why(config, &["pod", &format!("{namespace}/waiting"), "--config-namespace", &namespace]);
    assert_eq!(json["verdict"], "pending", "{json:#}");
    assert_eq!(json["schedulingEvent"]["note"], message, "{json:#}");
    assert_eq!(json["schedulingEvent"]["reporter"], "kolo-scheduler", "{json:#}");
    assert_eq!(json["whatIf"]["node"], Value::Null, "{json:#}");
    let now_msg = json["whatIf"]["message"].as_str().unwrap_or_else(|| panic!("{json:#}"));
    assert!(now_msg.contains(" 1 Insufficient batch-cpu"), "{json:#}");
    assert!(
        text.contains(&format!(
            "scheduler (kolo-scheduler) at 2026-11-28T00:00:00Z, seen 1×: {message}"
        )),
        "{text}"
    );
    println!("--- kolo why pod (pending)\n{text}");

    // 2. The running BE pod, its agent unreachable (nothing on the port).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let be = format!("{namespace}/be");
    let (json, text) = why(config, &["pod", &be, "--agent-port", &closed.to_string()]);
    assert_eq!(json["verdict"], "running", "{json:#}");
    assert_eq!(json["agent"]["state"], "unreachable", "{json:#}");
    assert_eq!(json["agent"]["url"], format!("http://127.0.0.2:{closed}"), "{json:#}");
    assert!(text.contains("did not answer"), "{text}");

    // 3. The agent answers: the BE quota in force since when; then the
    // agent's eviction of the pod, with its rule and usage.
    let be_uid = uid("be");
    let current = Current {
        target: Target::QosClass { class: "BE".into() },
        resource: "cpu.cfs_quota_us".into(),
        value: "400000".into(),
        since: "2026-11-28T00:05:00Z".into(),
        seq: 3,
        strategy: "cpuSuppress".into(),
        reason: "BE may use 4.0 of 16 cores".into(),
        figures: Figures::BeBudget {
            budget_milli: 4_000,
            non_be_milli: 5_000,
            system_milli: 1_400,
            threshold_percent: 65,
        },
    };
    let mut history = HistoryView {
        node: node.clone(),
        dry_run: false,
        capacity: DEFAULT_CAPACITY,
        total: 3,
        current: vec![current],
        actions: vec![],
    };
    let port = serve_actions(&history);
    // The agent runs as a DaemonSet pod: found by its label on the node,
    // asked at its pod IP (127.0.0.1, where the stand-in listens).
    create(
        config,
        &json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "agent", "namespace": namespace,
                     "labels": {"kolo-test": id, "app.kubernetes.io/name": "kolo-agent"}},
        "spec": {"nodeName": node, "containers": [{"name": "agent", "image": "kolo"}]}}),
    );
    let ip = json!({"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}});
    run(
        kubectl(config)
            .args(["patch", "pod", "agent", "-n", &namespace, "--subresource=status"])
            .args(["--type=merge", "-p", &ip.to_string()]),
        None,
    );
    let port_arg = port.to_string();
    let (json, text) =
        why(config, &["pod", &be, "--agent-namespace", &namespace, "--agent-port", &port_arg]);
    assert_eq!(json["agent"]["url"], format!("http://127.0.0.1:{port}"), "{json:#}");
    assert_eq!(json["classState"][0]["value"], "400000", "{json:#}");
    assert_eq!(json["classState"][0]["since"], "2026-11-28T00:05:00Z", "{json:#}");
    assert!(
        text.contains("BE cpu.cfs_quota_us = 400000 since 2026-11-28T00:05:00Z [cpuSuppress]"),
        "{text}"
    );
    println!("--- kolo why pod (running BE)\n{text}");
    history.actions.push(Action {
        seq: 4,
        time: "2026-11-28T00:06:00Z".into(),
        kind: ActionKind::Evicted,
        strategy: "memoryEvict".into(),
        target: Target::Pod {
            namespace: namespace.clone(),
            name: "be".into(),
            uid: be_uid,
            container: None,
        },
        resource: None,
        old: None,
        new: None,
        reason: "node memory 75% ≥ threshold 70%: release 1.6 GiB".into(),
        figures: Figures::None,
        node_usage: Usage { cpu_milli: 6_000, memory_bytes: 24 << 30 },
        fast: false,
    });
    let port = serve_actions(&history);
    let url = format!("http://127.0.0.1:{port}");
    let (json, text) = why(config, &["pod", &be, "--agent-url", &url]);
    assert_eq!(json["verdict"], "evicted", "{json:#}");
    assert!(text.contains("evicted by kolo's agent (memoryEvict) at 2026-11-28T00:06:00Z: node memory 75% ≥ threshold 70%: release 1.6 GiB (node usage then: 6000m CPU, 24576 MiB)"), "{text}");
    println!("--- kolo why pod (evicted)\n{text}");

    // 4. The node: batch figures as `kolo noderesource` computes them on a
    // dump of the same objects.
    let (json, text) =
        why(config, &["node", &node, "--config-namespace", &namespace, "--agent-url", &url]);
    println!("--- kolo why node\n{text}");
    let selector = format!("kolo-test={id}");
    let mut dump = common::dump_labelled(config, &selector);
    dump.extend(b"\n---\n");
    dump.extend(
        run(
            kubectl(config).args([
                "get",
                "configmap",
                "slo-controller-config",
                "-n",
                &namespace,
                "-o",
                "yaml",
            ]),
            None,
        )
        .stdout,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dump.yaml");
    std::fs::write(&path, &dump).unwrap();
    let out = run(
        kolo().args(["noderesource", "-o", "json", "--node", &node, "--snapshot"]).arg(&path),
        None,
    );
    let offline: Value = serde_json::from_slice(&out.stdout).unwrap();
    let offline = &offline["nodes"][0];
    let live = &json["resources"];
    assert_eq!(live["state"], "computed", "{json:#}");
    assert_eq!(live["batch"], offline["batch"], "{json:#}\n{offline:#}");
    assert_eq!(live["terms"]["batch"], offline["terms"]["batch"], "{json:#}\n{offline:#}");
    assert_eq!(live["mid"], offline["mid"], "{json:#}\n{offline:#}");
    assert!(live["batch"]["cpu"].as_i64().unwrap() > 0, "{json:#}");
    assert_eq!(json["agent"]["history"]["actions"][0]["strategy"], "memoryEvict", "{json:#}");
    assert!(text.contains("QoS actions (agent at http://127.0.0.1:"), "{text}");
}
