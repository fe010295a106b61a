//! `kolo schedule` on a dump of a real kube-apiserver: nodes (status through
//! the `/status` subresource, as a kubelet writes it), a NodeMetric, a bound
//! pod and pending pods are created with `kubectl`, dumped with
//! `kubectl get nodes,pods,nodemetrics -A -o yaml`, and scheduled.
//!
//! Runs when `KOLO_TEST_KUBECONFIG` names a kubeconfig (for example the one
//! `scripts/cluster start --api-only` prints, which `scripts/test`
//! sets up); otherwise it says loudly that it skipped.
//!
//! Everything it creates carries a unique name and the label
//! `kolo-test=<run>`, the dump is restricted to that label (the cluster may
//! hold other tests' objects), and it is all deleted at the end, also when an
//! assertion fails.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

mod common;

use common::{NamespaceCleanup as Cleanup, kolo, kubectl, run};

/// A node object without status, and its status (written separately).
fn node(name: &str, label: &str, cpu: &str, memory: &str, taint: bool) -> (Value, Value) {
    let mut object = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kolo-test": label, "kubernetes.io/hostname": name}},
    });
    if taint {
        object["spec"] =
            json!({"taints": [{"key": "dedicated", "value": "kolo-test", "effect": "NoSchedule"}]});
    }
    let resources = json!({"cpu": cpu, "memory": memory, "pods": "110"});
    let status = json!({
        "capacity": resources, "allocatable": resources,
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }],
    });
    (object, status)
}

fn pod(name: &str, namespace: &str, label: &str, cpu: &str, extra_spec: Value) -> Value {
    let mut spec = json!({
        "schedulerName": "kolo-scheduler",
        "containers": [{
            "name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
        }],
    });
    for (k, v) in extra_spec.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kolo-test": label}},
        "spec": spec,
    })
}

#[test]
fn schedules_a_dump_of_a_real_api_server() {
    let Some(config) = common::kubeconfig("kube_schedule") else { return };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let run_id = format!("s{}-{}", std::process::id(), stamp.as_millis() % 1_000_000);
    let namespace = format!("kolo-schedule-{run_id}");
    let (big, small, tainted) =
        (format!("{run_id}-big"), format!("{run_id}-small"), format!("{run_id}-tainted"));
    let _cleanup = Cleanup { config: &config, label: run_id.clone(), namespace: namespace.clone() };

    // 1. NodeMetric is a kolo CRD: make sure the cluster knows it.
    let crds = run(kolo().arg("crds"), None).stdout;
    run(kubectl(&config).args(["apply", "-f", "-"]), Some(&crds));
    run(
        kubectl(&config).args([
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/nodemetrics.slo.koordinator.sh",
        ]),
        None,
    );
    run(kubectl(&config).args(["create", "namespace", &namespace]), None);

    // 2. Nodes: the object, then its status through the subresource.
    for (name, cpu, memory, taint) in
        [(&big, "16", "32Gi", false), (&small, "8", "16Gi", false), (&tainted, "64", "128Gi", true)]
    {
        let (object, status) = node(name, &run_id, cpu, memory, taint);
        run(kubectl(&config).args(["create", "-f", "-"]), Some(object.to_string().as_bytes()));
        let patch = json!({ "status": status }).to_string();
        run(
            kubectl(&config).args([
                "patch",
                "node",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ]),
            None,
        );
        // The API server taints every new node node.kubernetes.io/not-ready
        // (admission plugin TaintNodesByCondition); the node lifecycle
        // controller lifts it once the node is Ready. There is no controller
        // here, so the test plays its part and leaves only its own taints.
        let taints = object["spec"]["taints"].clone();
        let patch = json!({ "spec": { "taints": taints } }).to_string();
        run(kubectl(&config).args(["patch", "node", name, "--type=merge", "-p", &patch]), None);
    }

    // 3. The tainted node's agent reports it busy: 60 of 64 cores. The
    // report is stamped now, so it is fresh as of the dump.
    // Whole seconds, as metav1.Time is written by the node agent.
    let now = kolo_core::clock::Timestamp::now();
    let update_time =
        kolo_core::clock::Timestamp::from_second(now.as_second()).unwrap().to_string();
    let metric = json!({
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": tainted, "labels": {"kolo-test": run_id}},
        "spec": {},
    });
    run(kubectl(&config).args(["create", "-f", "-"]), Some(metric.to_string().as_bytes()));
    let status = json!({"status": {
        "updateTime": update_time,
        "nodeMetric": {"nodeUsage": {"resources": {"cpu": "60", "memory": "20Gi"}}},
    }});
    run(
        kubectl(&config).args([
            "patch",
            "nodemetric",
            &tainted,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]),
        None,
    );

    // 4. Pods. `running` is bound to the big node (10 of its 16 cores). The
    // pending ones are named in creation order, which is also the queue
    // order: same priority, creation times equal or increasing, and the
    // dump lists them by name.
    let pods = [
        pod("running", &namespace, &run_id, "10", json!({"nodeName": big})),
        pod("p1-web", &namespace, &run_id, "1", json!({})),
        pod("p2-batch", &namespace, &run_id, "7", json!({})),
        pod("p3-hog", &namespace, &run_id, "8", json!({})),
        pod(
            "p4-tolerant",
            &namespace,
            &run_id,
            "4",
            json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "kolo-test", "effect": "NoSchedule"}]}),
        ),
        pod("p5-other", &namespace, &run_id, "1", json!({"schedulerName": "default-scheduler"})),
    ];
    for pod in &pods {
        run(kubectl(&config).args(["create", "-f", "-"]), Some(pod.to_string().as_bytes()));
    }

    // 5. Dump the way an operator would (restricted to this test's objects)
    // and schedule the dump.
    let selector = format!("kolo-test={run_id}");
    let dump = common::dump_labelled(&config, &selector);
    let dir = tempfile::tempdir().unwrap();
    let dump_path = dir.path().join("dump.yaml");
    std::fs::write(&dump_path, &dump).unwrap();
    let output = run(kolo().args(["schedule", "-o", "json", "--snapshot"]).arg(&dump_path), None);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();

    // The dump is judged as of its NodeMetric's update time.
    assert_eq!(report["now"], update_time.as_str(), "{report:#}");

    // p1-web: big has 6 cores free of 16, small 8 of 8: small is emptier.
    // p2-batch (7 cores): 6 free on big, 7 on small.
    // p3-hog (8 cores): nothing left on big or small; the taint keeps it
    // off the third node.
    // p4-tolerant: may use the tainted node, but its agent reports 60 of
    // 64 cores used (+ 3.4 estimated > 65%); big has 6 cores free.
    // p5-other asks for another scheduler.
    let ns = |name: &str| format!("{namespace}/{name}");
    let want = [
        (ns("p1-web"), json!(small), Value::Null),
        (ns("p2-batch"), json!(small), Value::Null),
        (
            ns("p3-hog"),
            Value::Null,
            json!(
                "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: kolo-test}."
            ),
        ),
        (ns("p4-tolerant"), json!(big), Value::Null),
    ];
    let got: Vec<(String, Value, Value)> = report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pod"].as_str().unwrap().to_string(), p["node"].clone(), p["message"].clone()))
        .collect();
    assert_eq!(got, want, "{report:#}");
    assert_eq!(
        report["summary"],
        json!({"pods": 4, "scheduled": 3, "unschedulable": 1, "skipped": 1}),
        "{report:#}"
    );

    // --explain-all says why p4-tolerant did not go to the tainted node.
    let output = run(
        kolo().args(["schedule", "-o", "json", "--explain-all", "--snapshot"]).arg(&dump_path),
        None,
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let p4 = report["pods"].as_array().unwrap().iter().find(|p| p["pod"] == ns("p4-tolerant"));
    let p4 = p4.unwrap_or_else(|| panic!("{report:#}"));
    let verdict = p4["nodes"].as_array().unwrap().iter().find(|n| n["node"] == tainted.as_str());
    let verdict = verdict.unwrap_or_else(|| panic!("{p4:#}"));
    assert_eq!(verdict["rejected_by"], "LoadAwareScheduling", "{p4:#}");
    assert_eq!(
        verdict["reasons"],
        json!(["node(s) cpu usage exceed threshold (cpu usage 99% > 65%)"]),
        "{p4:#}"
    );
}
