//! End-to-end: `kolo scheduler` against a real kube-apiserver binds a pod
//! to the node that load-aware scoring prefers (through `pods/binding`,
//! with a `Scheduled` Event), gives a pod that fits nowhere a
//! `FailedScheduling` Event and a `PodScheduled=False` condition with the
//! explanation, and with two instances only the leader binds.

mod common;
mod e2e_common;

use std::path::Path;
use std::time::Duration;

use common::{kubectl, run};
use e2e_common::{
    Daemon, TestObjects, component_args, create, events, get_json, node_of, pod, scheduler_config,
    wait_for,
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
    let _scheduler = scheduler(&config, dir.path(), &id, &["--leader-elect=false"]);

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
