//! End-to-end: `kolo scheduler` against a real kube-apiserver binds a pod
//! to the node that load-aware scoring prefers (through `pods/binding`,
//! with a `Scheduled` Event), gives a pod that fits nowhere a
//! `FailedScheduling` Event and a `PodScheduled=False` condition with the
//! explanation, with two instances only the leader binds, and a pod whose
//! PersistentVolumeClaim is bound goes where the volume's node affinity
//! says while one whose claim is not bound gets a `FailedScheduling` Event
//! naming the claim (and is bound once the claim is).

mod common;
mod e2e_common;

use std::path::Path;
use std::time::Duration;

use common::{kubectl, run};
use e2e_common::{
    Daemon, TestObjects, component_args, create, create_node, events, get_json, node_of, patch,
    pod, report_usage, scheduler_config, wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(30);

fn two_nodes(config: &Path, id: &str) -> (String, String) {
    e2e_common::install_crds(config);
    run(kubectl(config).args(["create", "namespace", id]), None);
    e2e_common::busy_and_idle_nodes(config, id)
}

fn scheduler(config: &Path, dir: &Path, id: &str, extra: &[&str]) -> Daemon {
    let mut args = vec!["scheduler".to_string()];
    args.extend(component_args(config));
    if let Some(listen) = extra.iter().find_map(|a| a.strip_prefix("--health-listen=")) {
        let default = args.iter().position(|a| a == "127.0.0.1:0").expect("component_args");
        args[default] = listen.to_string();
    }
    let extra: Vec<&str> =
        extra.iter().copied().filter(|a| !a.starts_with("--health-listen=")).collect();
    args.push("--config".into());
    args.push(scheduler_config(dir, id).display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    Daemon::start(
        &format!("e2e-scheduler-{}", extra.join("")),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
}

#[test]
fn scheduler_binds_by_load_and_explains_failures() {
    let Some(config) = common::kubeconfig("e2e_scheduler") else { return };
    let id = e2e_common::run_id("sched");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics",
        namespaced: "events,leases",
    };
    let (_busy, idle) = two_nodes(&config, &id);
    let dir = tempfile::tempdir().unwrap();
    let port = e2e_common::free_port();
    let listen = format!("--health-listen=127.0.0.1:{port}");
    let _scheduler = scheduler(&config, dir.path(), &id, &["--leader-elect=false", &listen]);

    create(&config, &pod("web", &id, &id, &id, "2"));
    create(&config, &pod("huge", &id, &id, &id, "100"));

    // The idle node wins: same requests on both, far less load.
    let node = wait_for("web to be bound", TIMEOUT, || node_of(&config, &id, "web"));
    assert_eq!(node, idle);
    wait_for("the Scheduled Event", TIMEOUT, || {
        events(&config, &id)
            .into_iter()
            .find(|(pod, reason, _)| pod == "web" && reason == "Scheduled")
            .filter(|(_, _, message)| message.contains(&idle))
    });

    // 100 cores fit nowhere: an Event and a condition say why.
    let (_, _, message) = wait_for("the FailedScheduling Event", TIMEOUT, || {
        events(&config, &id)
            .into_iter()
            .find(|(pod, reason, _)| pod == "huge" && reason == "FailedScheduling")
    });
    assert!(message.contains("Insufficient cpu"), "{message}");
    assert!(message.contains("nodes are available"), "{message}");
    let condition = wait_for("the PodScheduled condition", TIMEOUT, || {
        let p = get_json(&config, &["pod", "huge", "-n", &id])?;
        p["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "PodScheduled").cloned()
    });
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "Unschedulable", "{condition}");
    assert_eq!(condition["message"].as_str(), Some(message.as_str()), "{condition}");
    assert_eq!(node_of(&config, &id, "huge"), None);

    // Its /metrics: what docs/metrics.md lists, with this run's numbers.
    let metrics = common::metrics_doc::http_get(port, "/metrics").expect("/metrics");
    common::metrics_doc::check("scheduler", &metrics, &[]);
    for line in [
        "kolo_scheduler_binds_total{result=\"ok\"} 1",
        "kolo_scheduler_pod_scheduling_duration_seconds_count 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    assert!(
        metrics.lines().any(|l| l
            .starts_with("kolo_scheduler_schedule_attempts_total{result=\"unschedulable\"} ")
            && !l.ends_with(" 0")),
        "{metrics}"
    );
}

#[test]
fn with_two_instances_only_the_leader_binds() {
    let Some(config) = common::kubeconfig("e2e_scheduler leader election") else { return };
    let id = e2e_common::run_id("leader");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics",
        namespaced: "events,leases",
    };
    two_nodes(&config, &id);
    let dir = tempfile::tempdir().unwrap();
    let lease = ["--leader-elect-namespace", &id, "--leader-elect-lease-seconds", "3"];
    let mut a = scheduler(
        &config,
        dir.path(),
        &id,
        &[&lease[..], &["--leader-elect-identity", "a"]].concat(),
    );
    let mut b = scheduler(
        &config,
        dir.path(),
        &id,
        &[&lease[..], &["--leader-elect-identity", "b"]].concat(),
    );

    for name in ["p1", "p2", "p3"] {
        create(&config, &pod(name, &id, &id, &id, "1"));
    }
    for name in ["p1", "p2", "p3"] {
        wait_for(name, TIMEOUT, || node_of(&config, &id, name));
    }
    let holder = wait_for("the Lease", TIMEOUT, || {
        let l = get_json(&config, &["lease", "kolo-scheduler", "-n", &id])?;
        l["spec"]["holderIdentity"].as_str().map(String::from)
    });
    let (leader, standby) = if holder == "a" { (&mut a, &mut b) } else { (&mut b, &mut a) };
    let bound = |d: &Daemon| d.log().matches("bound").count();
    assert_eq!(bound(leader), 3, "leader {holder} log:\n{}", leader.log());
    assert_eq!(bound(standby), 0, "standby log:\n{}", standby.log());
    // Each pod was bound exactly once: one Scheduled Event per pod.
    let scheduled: Vec<String> = events(&config, &id)
        .into_iter()
        .filter(|(_, reason, _)| reason == "Scheduled")
        .map(|(pod, _, _)| pod)
        .collect();
    assert_eq!(scheduled.len(), 3, "{scheduled:?}");

    // The leader dies without releasing the Lease: the standby takes over
    // once it expires, and binds what comes next.
    leader.kill();
    create(&config, &pod("p4", &id, &id, &id, "1"));
    wait_for("p4 bound by the new leader", TIMEOUT, || node_of(&config, &id, "p4"));
    assert_eq!(bound(standby), 1, "new leader log:\n{}", standby.log());
}

/// Takes the `kubernetes.io/pv-protection` and `pvc-protection`
/// finalizers (added by the API server's admission) off this test's
/// volumes and claims: there is no controller in the test cluster to
/// remove them, and their deletion would wait forever.
struct Unprotect<'a> {
    config: &'a Path,
    id: String,
}

impl Drop for Unprotect<'_> {
    fn drop(&mut self) {
        let none = serde_json::json!({"metadata": {"finalizers": null}});
        let selector = format!("kolo-test={}", self.id);
        let lists = [
            get_json(self.config, &["pv", "-l", &selector]),
            get_json(self.config, &["pvc", "-n", &self.id]),
        ];
        for item in lists.iter().flatten().filter_map(|l| l["items"].as_array()).flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            match item["metadata"]["namespace"].as_str() {
                Some(ns) => patch(self.config, &["pvc", name, "-n", ns], &none),
                None => patch(self.config, &["pv", name], &none),
            }
        }
    }
}

/// A PersistentVolume `<id>-<suffix>` usable only on `node` (the
/// API-only test cluster has no PersistentVolume controller: nothing binds
/// or changes it).
fn local_volume(config: &Path, id: &str, suffix: &str, node: &str) -> String {
    let name = format!("{id}-{suffix}");
    create(
        config,
        &serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"kolo-test": id}},
            "spec": {
                "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "", "local": {"path": "/mnt/data"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
            },
        }),
    );
    name
}

/// A claim `name` in the namespace `id`, bound to `volume` as the
/// PersistentVolume controller leaves a bound claim (`spec.volumeName` and
/// the `bind-completed` annotation) when given.
fn claim(config: &Path, id: &str, name: &str, volume: Option<&str>) {
    let mut object = serde_json::json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": id},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
    });
    if let Some(volume) = volume {
        object["metadata"]["annotations"] =
            serde_json::json!({"pv.kubernetes.io/bind-completed": "yes"});
        object["spec"]["volumeName"] = volume.into();
    }
    create(config, &object);
}

/// A pod of this test using the claim `claim`.
fn pod_with_claim(id: &str, name: &str, claim: &str) -> serde_json::Value {
    let mut p = pod(name, id, id, id, "1");
    p["spec"]["volumes"] =
        serde_json::json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
    p
}

#[test]
fn bound_claims_place_pods_by_volume_and_unbound_ones_are_named() {
    let Some(config) = common::kubeconfig("e2e_scheduler volumes") else { return };
    let id = e2e_common::run_id("volumes");
    let _cleanup = TestObjects {
        config: &config,
        id: id.clone(),
        labelled: "nodes,nodemetrics,persistentvolumes",
        namespaced: "events,persistentvolumeclaims",
    };
    // Dropped first: lets the cleanup delete the claims and volumes.
    let _unprotect = Unprotect { config: &config, id: id.clone() };
    // Nodes `<id>-big` (32 CPU) and `<id>-small` (8 CPU), 1 CPU in use on
    // each: scores alone pick the big one; the volume lives on the small.
    e2e_common::install_crds(&config);
    run(kubectl(&config).args(["create", "namespace", &id]), None);
    for (suffix, cpu) in [("big", "32"), ("small", "8")] {
        let node = format!("{id}-{suffix}");
        create_node(&config, &node, &id, cpu, "32Gi");
        create(
            &config,
            &serde_json::json!({
                "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                "metadata": {"name": node, "labels": {"kolo-test": id}}, "spec": {},
            }),
        );
        report_usage(&config, &node, "1", "4Gi");
    }
    let small = format!("{id}-small");
    let volume = local_volume(&config, &id, "pv", &small);
    claim(&config, &id, "data", Some(&volume));
    claim(&config, &id, "fresh", None);
    let dir = tempfile::tempdir().unwrap();
    let scheduler = scheduler(&config, dir.path(), &id, &["--leader-elect=false"]);

    create(&config, &pod_with_claim(&id, "db", "data"));
    create(&config, &pod_with_claim(&id, "waiter", "fresh"));
    let node = wait_for("db to be bound", TIMEOUT, || node_of(&config, &id, "db"));
    assert_eq!(node, small, "scheduler log:\n{}", scheduler.log());
    let (_, _, message) = wait_for("the FailedScheduling Event", TIMEOUT, || {
        events(&config, &id)
            .into_iter()
            .find(|(pod, reason, _)| pod == "waiter" && reason == "FailedScheduling")
    });
    assert!(
        message.contains(
            "persistentvolumeclaim \"fresh\" is not bound; kolo-scheduler does not bind volumes"
        ),
        "{message}"
    );
    assert_eq!(node_of(&config, &id, "waiter"), None);

    // The claim is bound (as the PersistentVolume controller would, to a
    // second volume on the small node): the watch wakes the pod.
    let second = local_volume(&config, &id, "pv2", &small);
    patch(
        &config,
        &["pvc", "fresh", "-n", &id],
        &serde_json::json!({
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"volumeName": second},
        }),
    );
    let node = wait_for("waiter to be bound", TIMEOUT, || node_of(&config, &id, "waiter"));
    assert_eq!(node, small, "scheduler log:\n{}", scheduler.log());
}
