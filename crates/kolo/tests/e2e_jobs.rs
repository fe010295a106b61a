//! End-to-end: job scheduling against a real kube-apiserver (v1.20), with
//! `kolo scheduler` (Coscheduling, ElasticQuota and Reservation plugins)
//! and `kolo manager` (PodGroup and ElasticQuota status):
//!
//! * a gang of 3 (PodGroup `minMember: 3`) of which only 2 fit binds none;
//!   once a node is added all 3 bind, and the PodGroup's status says so;
//! * an ElasticQuota's `max` holds a pod over it pending with the quota's
//!   message in its FailedScheduling Event, and the manager writes the
//!   quota's `status.used`;
//! * a Reservation is scheduled (its status names the node, phase
//!   `Available`) and its owner pod consumes it: it lands on the reserved
//!   node, where only the reservation has room, with the
//!   `reservation-allocated` annotation.
//!
//! These tests start an API-only cluster of their own (`scripts/cluster
//! start --api-only`) with RBAC on, shared by the tests of this file that
//! run at the same time and stopped when the last one ends; they skip,
//! loudly, only when the Kubernetes binaries are not built. The scheduler
//! and the manager run as their service accounts (impersonated) with the
//! roles of `deploy/rbac-*.yaml`, so a permission those lack fails here.

mod common;
mod e2e_common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{kubectl, run};
use e2e_common::rbac_cluster::{self, RbacCluster};
use e2e_common::{
    Daemon, TestObjects, component_args, create, create_node, events, get_json, node_of, patch,
    pod, wait_for,
};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);

/// This file's cluster with kolo's CRDs and the scheduler's and manager's
/// roles; `None` (said loudly) without the Kubernetes binaries.
fn cluster(test: &str) -> Option<Arc<RbacCluster>> {
    rbac_cluster::shared(
        "e2e_jobs",
        test,
        &["namespace.yaml", "rbac-scheduler.yaml", "rbac-manager.yaml"],
        &[
            "elasticquotas.scheduling.sigs.k8s.io",
            "podgroups.scheduling.sigs.k8s.io",
            "reservations.scheduling.koordinator.sh",
        ],
    )
}

/// A test's namespace (`id`) and its cleanup.
fn namespace<'a>(config: &'a Path, id: &str) -> TestObjects<'a> {
    run(kubectl(config).args(["create", "namespace", id]), None);
    TestObjects {
        config,
        id: id.into(),
        labelled: "nodes,reservations",
        namespaced: "podgroups,elasticquotas,events",
    }
}

/// `kolo scheduler` as its service account, with one profile
/// (`schedulerName: <id>`): kolo's default plugins (Coscheduling and
/// Reservation among them), LoadAwareScheduling off (the test nodes have
/// no NodeMetrics).
fn scheduler(cluster: &RbacCluster, dir: &Path, id: &str) -> Daemon {
    let config = cluster.kubeconfig_as("kolo-scheduler");
    let file = dir.join("scheduler.yaml");
    let yaml = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "profiles:",
        &format!("- schedulerName: {id}"),
        "  plugins:",
        "    multiPoint:",
        "      disabled: [{name: LoadAwareScheduling}]",
    ];
    std::fs::write(&file, yaml.join("\n")).unwrap();
    let mut args = vec!["scheduler".to_string()];
    args.extend(component_args(&config));
    args.extend(["--config".into(), file.display().to_string(), "--leader-elect=false".into()]);
    Daemon::start(&format!("e2e-jobs-scheduler-{id}"), &args)
}

/// `kolo manager run` as its service account, for this test's nodes, a
/// pass every 2 s, its (absent) ConfigMap in kolo-system where its role
/// may read it; then `extra`.
fn manager(cluster: &RbacCluster, id: &str, extra: &[&str]) -> Daemon {
    let config = cluster.kubeconfig_as("kolo-manager");
    let mut args = vec!["manager".to_string(), "run".into()];
    args.extend(component_args(&config));
    let selector = format!("kolo-test={id}");
    args.extend(
        ["--leader-elect=false", "--config-namespace", "kolo-system", "--node-selector", &selector]
            .map(String::from),
    );
    args.extend(["--resync-seconds", "2"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    Daemon::start(&format!("e2e-jobs-manager-{id}"), &args)
}

/// The pods of `names` bound so far, with their nodes.
fn bound(config: &Path, id: &str, names: &[&str]) -> Vec<(String, String)> {
    names.iter().filter_map(|n| node_of(config, id, n).map(|node| (n.to_string(), node))).collect()
}

/// The first FailedScheduling Event message of a pod.
fn failed_scheduling(config: &Path, id: &str, name: &str) -> Option<String> {
    events(config, id)
        .into_iter()
        .find(|(pod, reason, _)| pod == name && reason == "FailedScheduling")
        .map(|(_, _, message)| message)
}

#[test]
fn a_gang_binds_all_or_nothing_and_its_status_is_written() {
    let Some(cluster) = cluster("gang") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("gang");
    let _cleanup = namespace(&config, &id);
    let dir = tempfile::tempdir().unwrap();
    create_node(&config, &format!("{id}-a"), &id, "4", "32Gi");
    let scheduler = scheduler(&cluster, dir.path(), &id);
    let _manager = manager(&cluster, &id, &[]);
    create(
        &config,
        &json!({
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "job", "namespace": id},
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 30},
        }),
    );
    let members = ["m1", "m2", "m3"];
    for name in members {
        let mut p = pod(name, &id, &id, &id, "2");
        p["metadata"]["labels"]["pod-group.scheduling.sigs.k8s.io"] = "job".into();
        create(&config, &p);
    }
    // Two members fit on the 4-core node, the third does not: the gang
    // fails as a whole and none is bound.
    wait_for("a member's FailedScheduling Event", TIMEOUT, || {
        members.iter().find_map(|m| failed_scheduling(&config, &id, m))
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(bound(&config, &id, &members), vec![], "scheduler log:\n{}", scheduler.log());

    // Room for the third: all three bind.
    create_node(&config, &format!("{id}-b"), &id, "4", "32Gi");
    wait_for("all three members bound", TIMEOUT, || {
        (bound(&config, &id, &members).len() == 3).then_some(())
    });
    let status = wait_for("the PodGroup status", TIMEOUT, || {
        let g = get_json(&config, &["podgroup", "job", "-n", &id])?;
        (g["status"]["phase"] == "Scheduled").then(|| g["status"].clone())
    });
    assert_eq!(status["scheduled"], 3, "{status}");
    assert_eq!(status["running"], 0, "{status}");
    assert!(status["scheduleStartTime"].is_string(), "{status}");
}

#[test]
fn a_quota_max_holds_a_pod_back_its_used_is_written_and_over_use_is_revoked() {
    let Some(cluster) = cluster("quota") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("quota");
    let _cleanup = namespace(&config, &id);
    let dir = tempfile::tempdir().unwrap();
    create_node(&config, &format!("{id}-a"), &id, "16", "32Gi");
    create(
        &config,
        &json!({
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": id, "namespace": id},
            "spec": {"min": {"cpu": "1", "memory": "4Gi"}, "max": {"cpu": "3", "memory": "8Gi"}},
        }),
    );
    let scheduler = scheduler(&cluster, dir.path(), &id);
    let revoke = r#"{"monitorAllQuotas": true, "delayEvictTime": "1s"}"#;
    let manager = manager(&cluster, &id, &["--elastic-quota-args", revoke]);
    let quota_pod = |name: &str| {
        let mut p = pod(name, &id, &id, &id, "2");
        p["metadata"]["labels"]["quota.scheduling.koordinator.sh/name"] = id.clone().into();
        p
    };
    create(&config, &quota_pod("first"));
    wait_for("the first pod bound", TIMEOUT, || node_of(&config, &id, "first"));
    // 2 + 2 cores exceed the quota's max of 3, though the node has room.
    create(&config, &quota_pod("second"));
    let message = wait_for("the second pod's FailedScheduling Event", TIMEOUT, || {
        failed_scheduling(&config, &id, "second")
    });
    assert!(message.contains("Insufficient quotas"), "{message}");
    assert!(message.contains(&id), "{message}");
    assert_eq!(node_of(&config, &id, "second"), None, "scheduler log:\n{}", scheduler.log());

    // The manager writes what the bound pod uses (masked to max's keys).
    let used = wait_for("the quota's status.used", TIMEOUT, || {
        let q = get_json(&config, &["elasticquota", &id, "-n", &id])?;
        let used = q["status"]["used"].clone();
        used.is_object().then_some(used)
    });
    assert_eq!(used, json!({"cpu": "2", "memory": "1Gi"}));

    // The quota shrinks below what its bound pod uses: over its runtime
    // for longer than delayEvictTime, the pod is evicted (Eviction API;
    // with no kubelet it stays terminating).
    patch(&config, &["elasticquota", &id, "-n", &id], &json!({"spec": {"max": {"cpu": "1"}}}));
    wait_for("the first pod evicted", TIMEOUT, || {
        let p = get_json(&config, &["pod", "first", "-n", &id])?;
        p["metadata"]["deletionTimestamp"].as_str().map(String::from)
    });
    assert!(manager.log().contains("its quota is over its runtime"), "{}", manager.log());
    let second = get_json(&config, &["pod", "second", "-n", &id]).unwrap();
    assert!(second["metadata"]["deletionTimestamp"].is_null(), "{second}");
}

/// A Reservation of `cpu` cores on this test's nodes for the pod `owner`.
fn reservation(id: &str, name: &str, cpu: &str) -> Value {
    json!({
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": name, "labels": {"kolo-test": id}},
        "spec": {
            "template": {
                "metadata": {"namespace": id},
                "spec": {
                    "schedulerName": id,
                    "nodeSelector": {"kolo-test": id},
                    "containers": [{"name": "c", "image": "registry.invalid/pause",
                                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                },
            },
            "owners": [{"object": {"kind": "Pod", "namespace": id, "name": "owner"}}],
            "ttl": "1h",
        },
    })
}

#[test]
fn a_reservation_is_scheduled_and_consumed_by_its_owner() {
    let Some(cluster) = cluster("reservation") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("resv");
    let _cleanup = namespace(&config, &id);
    let dir = tempfile::tempdir().unwrap();
    for n in ["a", "b"] {
        create_node(&config, &format!("{id}-{n}"), &id, "4", "32Gi");
    }
    let scheduler = scheduler(&cluster, dir.path(), &id);
    let name = format!("{id}-r");
    create(&config, &reservation(&id, &name, "3"));
    // One that fits nowhere stays Pending and says why.
    let big = format!("{id}-big");
    create(&config, &reservation(&id, &big, "100"));
    let status = wait_for("the Reservation scheduled", TIMEOUT, || {
        let r = get_json(&config, &["reservation", &name])?;
        (r["status"]["phase"] == "Available").then(|| r["status"].clone())
    });
    let reserved = status["nodeName"].as_str().expect("status.nodeName").to_string();
    assert_eq!(status["allocatable"]["cpu"], "3", "{status}");
    let scheduled = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Scheduled").cloned());
    assert_eq!(scheduled.map(|c| c["status"].clone()), Some("True".into()), "{status}");
    let condition = wait_for("the big Reservation's Scheduled condition", TIMEOUT, || {
        let r = get_json(&config, &["reservation", &big])?;
        r["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "Scheduled").cloned()
    });
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "Unschedulable", "{condition}");
    assert!(condition["message"].as_str().unwrap().contains("Insufficient cpu"), "{condition}");
    let big_status = get_json(&config, &["reservation", &big]).unwrap()["status"].clone();
    assert_eq!(big_status["phase"], "Pending", "{big_status}");

    // Another pod of 3 cores cannot use the reserved ones: it takes the
    // other node, so only the reservation has room left for the owner.
    create(&config, &pod("filler", &id, &id, &id, "3"));
    let filler = wait_for("the filler bound", TIMEOUT, || node_of(&config, &id, "filler"));
    assert_ne!(filler, reserved, "scheduler log:\n{}", scheduler.log());
    create(&config, &pod("owner", &id, &id, &id, "3"));
    let node = wait_for("the owner bound", TIMEOUT, || node_of(&config, &id, "owner"));
    assert_eq!(node, reserved, "scheduler log:\n{}", scheduler.log());
    let owner = get_json(&config, &["pod", "owner", "-n", &id]).unwrap();
    let allocated =
        owner["metadata"]["annotations"]["scheduling.koordinator.sh/reservation-allocated"]
            .as_str()
            .map(|s| serde_json::from_str::<Value>(s).unwrap());
    assert_eq!(allocated.map(|a| a["name"].clone()), Some(Value::from(name.as_str())), "{owner}");
    // allocateOnce (the default): taken by its owner, the reservation is
    // over, and its status names the owner.
    let status = wait_for("the Reservation Succeeded", TIMEOUT, || {
        let r = get_json(&config, &["reservation", &name])?;
        (r["status"]["phase"] == "Succeeded").then(|| r["status"].clone())
    });
    assert_eq!(status["currentOwners"][0]["name"], "owner", "{status}");
    assert_eq!(status["allocated"]["cpu"], "3", "{status}");
}
