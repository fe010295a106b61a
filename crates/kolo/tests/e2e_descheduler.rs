//! End-to-end: the descheduler against a real kube-apiserver (v1.20), as
//! its service account with the roles of `deploy/rbac-descheduler.yaml`
//! (so a permission those lack fails here):
//!
//! * a hot node (its NodeMetric over LowNodeLoad's 75 % high threshold,
//!   another node under the 45 % low one): its pod gets a PodMigrationJob
//!   (EvictDirectly), is evicted through the Eviction API, and the job
//!   succeeds once the pod is gone — one job, not one per round;
//! * the same with a PodDisruptionBudget that forbids it: the job fails
//!   with `FailedEvict`, the pod stays, a `FailedEvict` Event is on it;
//! * `--dry-run`: Events only — no job, no eviction;
//! * ReservationFirst, with `kolo scheduler` placing the Reservation: the
//!   job reserves room on the cool node, evicts, and succeeds once the
//!   ReplicaSet's replacement is bound into the Reservation and ready;
//! * each kind of action on its own: a job created with its status, its
//!   status and spec rewritten, deleted; a Reservation created (again:
//!   counts as created) and deleted; evictions (policy/v1beta1 on 1.20):
//!   a budget's 429 reported as a refusal, a replaced pod (UID
//!   precondition) never evicted; Events on a pod and on a job; a dry run
//!   writing nothing but Events;
//! * `kolo descheduler` takes its Lease, becomes ready, serves its
//!   metrics and stops cleanly on SIGTERM.
//!
//! There is no kubelet or controller-manager: the tests write what those
//! would (pod status, the end of an evicted pod, a ReplicaSet's
//! replacement pod).
//!
//! These tests start an API-only cluster of their own (`scripts/cluster
//! start --api-only`) with RBAC on, shared by the tests of this file that
//! run at the same time and stopped when the last one ends; they skip,
//! loudly, only when the Kubernetes binaries are not built.

mod common;
mod e2e_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::metrics_doc::http_get;
use common::{kolo, kubectl, run, try_run};
use e2e_common::rbac_cluster::{self, RbacCluster};
use e2e_common::{
    Daemon, TestObjects, component_args, create, create_node, events, free_port, get_json, wait_for,
};
use kolo_api::crd::{PodMigrationJob, PodMigrationJobSpec, PodMigrationJobStatus, Reservation};
use kolo_core::PodRef;
use kolo_kube::descheduler::apply::{Applier, Report};
use kolo_kube::descheduler::events::Events;
use kolo_kube::descheduler::evict::EvictionOutcome;
use kolo_kube::descheduler::metrics::DeschedulerMetrics;
use kolo_kube::descheduler::stores::Stores;
use kolo_kube::descheduler::{Action, Event, ObjectKey, eviction_client};
use kolo_kube::health::Health;
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

/// This file's cluster with kolo's CRDs and the descheduler's and
/// scheduler's roles; `None` (said loudly) without the Kubernetes binaries.
fn cluster(test: &str) -> Option<Arc<RbacCluster>> {
    rbac_cluster::shared(
        "e2e_descheduler",
        test,
        &["namespace.yaml", "rbac-descheduler.yaml", "rbac-scheduler.yaml"],
        &["podmigrationjobs.scheduling.koordinator.sh", "reservations.scheduling.koordinator.sh"],
    )
}

/// A test's namespace (`id`) and its cleanup (its nodes, NodeMetrics,
/// Reservations and jobs are labelled `kolo-test=<id>`).
fn namespace<'a>(config: &'a Path, id: &str) -> TestObjects<'a> {
    run(kubectl(config).args(["create", "namespace", id]), None);
    TestObjects {
        config,
        id: id.into(),
        labelled: "nodes,nodemetrics,reservations,podmigrationjobs",
        namespaced: "poddisruptionbudgets,replicasets,events",
    }
}

/// A Running pod on `node` (its status written as a kubelet would),
/// labelled `app=<app>`; returns its UID.
fn bound_pod(config: &Path, id: &str, name: &str, node: &str, app: &str) -> String {
    let object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": id, "labels": {"kolo-test": id, "app": app}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "registry.invalid/pause",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
    });
    create(config, &object);
    // Running (a Pending pod's eviction skips its budgets).
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": null},
    ]}});
    e2e_common::patch(config, &["pod", name, "-n", id, "--subresource=status"], &status);
    let pod = get_json(config, &["pod", name, "-n", id]).unwrap();
    pod["metadata"]["uid"].as_str().unwrap().to_string()
}

/// A PodDisruptionBudget (policy/v1beta1: Kubernetes 1.20) that lets no
/// pod labelled `app=<app>` go.
fn forbidding_budget(config: &Path, id: &str, app: &str) {
    create(
        config,
        &json!({
            "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": id},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": app}}},
        }),
    );
}

/// Whether the pod is going: gone, or terminating (no kubelet finishes it).
fn going(config: &Path, id: &str, name: &str) -> bool {
    get_json(config, &["pod", name, "-n", id])
        .is_none_or(|p| p["metadata"]["deletionTimestamp"].is_string())
}

/// A PodMigrationJob for `pod`, EvictDirectly, status Pending.
fn job(id: &str, name: &str, pod: &PodRef) -> PodMigrationJob {
    serde_json::from_value(json!({
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
        "metadata": {"name": name, "labels": {"kolo-test": id}},
        "spec": {
            "mode": "EvictDirectly", "ttl": "5m",
            "podRef": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
        },
        "status": {"phase": "Pending"},
    }))
    .unwrap()
}

fn status(phase: &str, reason: &str) -> Box<PodMigrationJobStatus> {
    Box::new(PodMigrationJobStatus {
        phase: Some(phase.into()),
        reason: Some(reason.into()),
        ..PodMigrationJobStatus::default()
    })
}

/// A Reservation of one core for `pod` on this test's nodes.
fn reservation(id: &str, name: &str, pod: &PodRef) -> Reservation {
    serde_json::from_value(json!({
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": name, "labels": {"kolo-test": id}},
        "spec": {
            "template": {
                "metadata": {"namespace": id},
                "spec": {"containers": [{"name": "c", "image": "registry.invalid/pause",
                                         "resources": {"requests": {"cpu": "1"}}}]},
            },
            "owners": [{"object": {"kind": "Pod", "namespace": id, "name": pod.name}}],
            "allocateOnce": true,
            "ttl": "5m",
        },
    }))
    .unwrap()
}

/// An applier and its stores as the descheduler's service account.
async fn applier(cluster: &RbacCluster, id: &str, dry_run: bool) -> (Applier, Stores, Arc<Health>) {
    let account = cluster.kubeconfig_as("kolo-descheduler");
    let client = kolo_kube::client::connect(Some(&account)).await.unwrap();
    let evictions = eviction_client(Some(&account)).await.unwrap();
    let health = Health::new("descheduler");
    let metrics = DeschedulerMetrics::new(&health);
    let events = Events::new(client.clone(), "kolo-descheduler", id, health.clone());
    let applier = Applier::new(client, evictions, events, health.clone(), metrics, dry_run);
    (applier, Stores::new(Some(id.into())), health)
}

fn event(kind: &'static str, namespace: &str, name: &str, reason: &str) -> Action {
    Action::Event(Event {
        regarding: ObjectKey {
            kind,
            namespace: namespace.into(),
            name: name.into(),
            uid: String::new(),
        },
        warning: false,
        reason: reason.into(),
        message: format!("e2e {reason}"),
    })
}

/// The Events about `name` in `namespace` as (reason, message).
fn events_of(config: &Path, namespace: &str, name: &str) -> Vec<(String, String)> {
    events(config, namespace)
        .into_iter()
        .filter(|(object, _, _)| object == name)
        .map(|(_, reason, message)| (reason, message))
        .collect()
}

#[test]
fn actions_are_carried_out_as_the_api_server_sees_them() {
    let Some(cluster) = cluster("actions") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("actions");
    let _cleanup = namespace(&config, &id);
    let node = format!("{id}-a");
    create_node(&config, &node, &id, "8", "32Gi");
    let free = PodRef::new(&id, "free", &bound_pod(&config, &id, "free", &node, "free"));
    let guarded =
        PodRef::new(&id, "guarded", &bound_pod(&config, &id, "guarded", &node, "guarded"));
    bound_pod(&config, &id, "replaced", &node, "replaced");
    forbidding_budget(&config, &id, "guarded");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (applier, mut stores, health) = runtime.block_on(applier(&cluster, &id, false));
    let apply =
        |action: Action, stores: &mut Stores| runtime.block_on(applier.apply(action, stores));
    let job_name = format!("{id}-job");

    // A job is created with its status (written through the status
    // subresource), and is in the driver's store at once.
    assert_eq!(apply(Action::CreateJob(Box::new(job(&id, &job_name, &free))), &mut stores), None);
    let stored = stores.job_named(&job_name).expect("the created job in the store").clone();
    assert!(stored.metadata.resource_version.is_some());
    let object = get_json(&config, &["podmigrationjob", &job_name]).expect("the job");
    assert_eq!(object["status"]["phase"], "Pending", "{object}");
    assert_eq!(object["spec"]["podRef"]["uid"], free.uid.as_str(), "{object}");

    // Its status and spec are rewritten over the version last seen.
    apply(
        Action::SetJobStatus { job: job_name.clone(), status: status("Running", "Evicting") },
        &mut stores,
    );
    let mut spec: PodMigrationJobSpec = stored.spec.clone();
    spec.paused = Some(true);
    apply(Action::SetJobSpec { job: job_name.clone(), spec: Box::new(spec) }, &mut stores);
    let object = get_json(&config, &["podmigrationjob", &job_name]).unwrap();
    assert_eq!(object["status"]["phase"], "Running", "{object}");
    assert_eq!(object["status"]["reason"], "Evicting", "{object}");
    assert_eq!(object["spec"]["paused"], true, "{object}");

    // Evictions: the free pod goes; the budget refuses the guarded one
    // (429, reported as a refusal); a replaced pod (another UID) is not
    // evicted.
    let evict = |pod: &PodRef, stores: &mut Stores| {
        let action =
            Action::Evict { pod: pod.clone(), job: Some(job_name.clone()), reason: "e2e".into() };
        match apply(action, stores) {
            Some(Report::Eviction(report)) => report,
            other => panic!("expected an eviction report, got {other:?}"),
        }
    };
    let report = evict(&free, &mut stores);
    assert_eq!(report.outcome, EvictionOutcome::Evicted);
    assert_eq!(report.job.as_deref(), Some(job_name.as_str()));
    assert!(going(&config, &id, "free"));
    let report = evict(&guarded, &mut stores);
    match &report.outcome {
        EvictionOutcome::Refused(m) => assert!(m.contains("disruption budget"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!going(&config, &id, "guarded"), "the guarded pod stays");
    let impostor = PodRef::new(&id, "replaced", "the-uid-of-an-earlier-pod");
    let report = evict(&impostor, &mut stores);
    assert!(matches!(report.outcome, EvictionOutcome::Failed(_)), "{report:?}");
    assert!(!going(&config, &id, "replaced"), "a pod of another UID stays");
    let metrics = health.encode();
    for line in [
        r#"kolo_descheduler_evictions_total{result="evicted"} 1"#,
        r#"kolo_descheduler_evictions_total{result="refused"} 1"#,
        r#"kolo_descheduler_evictions_total{result="error"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    // The evictions' Events are on the pods.
    wait_for("the FailedEvict Event on the guarded pod", TIMEOUT, || {
        events_of(&config, &id, "guarded").into_iter().find(|(r, _)| r == "FailedEvict")
    });
    wait_for("the Descheduled Event on the free pod", TIMEOUT, || {
        events_of(&config, &id, "free").into_iter().find(|(r, _)| r == "Descheduled")
    });

    // A Reservation is created and deleted.
    let resv = format!("{id}-r");
    let create = || Action::CreateReservation(Box::new(reservation(&id, &resv, &guarded)));
    let created = Some(Report::Reservation { name: resv.clone(), result: Ok(()) });
    assert_eq!(apply(create(), &mut stores), created);
    assert!(get_json(&config, &["reservation", &resv]).is_some(), "the Reservation created");
    assert_eq!(apply(create(), &mut stores), created, "one that exists counts as created");
    apply(Action::DeleteReservation { name: resv.clone() }, &mut stores);
    assert!(get_json(&config, &["reservation", &resv]).is_none(), "the Reservation deleted");

    // Events on the job (cluster-scoped: in `kube-system`) and on a pod.
    apply(event("PodMigrationJob", "", &job_name, "E2eJobEvent"), &mut stores);
    apply(event("Pod", &id, "guarded", "E2ePodEvent"), &mut stores);
    wait_for("the job's Event", TIMEOUT, || {
        events_of(&config, "kube-system", &job_name).into_iter().find(|(r, _)| r == "E2eJobEvent")
    });
    wait_for("the pod's Event", TIMEOUT, || {
        events_of(&config, &id, "guarded").into_iter().find(|(r, _)| r == "E2ePodEvent")
    });

    // The job is deleted, and leaves the store.
    apply(Action::DeleteJob { job: job_name.clone() }, &mut stores);
    assert!(get_json(&config, &["podmigrationjob", &job_name]).is_none());
    assert!(stores.job_named(&job_name).is_none());
    let written = health.encode();
    for (action, n) in [
        ("create_job", 1),
        ("update_job_status", 1),
        ("update_job", 1),
        ("delete_job", 1),
        ("create_reservation", 2),
        ("delete_reservation", 1),
    ] {
        let line =
            format!(r#"kolo_descheduler_actions_total{{action="{action}",result="ok"}} {n}"#);
        assert!(written.contains(&line), "{line} in\n{written}");
    }
}

#[test]
fn a_dry_run_writes_nothing_but_events() {
    let Some(cluster) = cluster("dry_run") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("dry");
    let _cleanup = namespace(&config, &id);
    let node = format!("{id}-a");
    create_node(&config, &node, &id, "8", "32Gi");
    let pod = PodRef::new(&id, "web", &bound_pod(&config, &id, "web", &node, "web"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (applier, mut stores, health) = runtime.block_on(applier(&cluster, &id, true));
    let job_name = format!("{id}-job");
    let actions = vec![
        Action::CreateJob(Box::new(job(&id, &job_name, &pod))),
        Action::CreateReservation(Box::new(reservation(&id, &format!("{id}-r"), &pod))),
        Action::Evict { pod: pod.clone(), job: None, reason: "e2e".into() },
        event("Pod", &id, "web", "WouldMigrate"),
    ];
    for action in actions {
        assert_eq!(runtime.block_on(applier.apply(action, &mut stores)), None);
    }
    wait_for("the dry run's Event", TIMEOUT, || {
        events_of(&config, &id, "web").into_iter().find(|(r, _)| r == "WouldMigrate")
    });
    assert!(get_json(&config, &["podmigrationjob", &job_name]).is_none(), "no job written");
    assert!(get_json(&config, &["reservation", &format!("{id}-r")]).is_none(), "no Reservation");
    assert!(!going(&config, &id, "web"), "the pod was not evicted");
    let metrics = health.encode();
    for action in ["create_job", "create_reservation", "evict"] {
        let line =
            format!(r#"kolo_descheduler_actions_total{{action="{action}",result="dry_run"}} 1"#);
        assert!(metrics.contains(&line), "{line} in\n{metrics}");
    }
}

/// Prints the daemon's log when the test fails.
struct ShowLog(PathBuf);

impl Drop for ShowLog {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.0).unwrap_or_default();
            eprintln!("---- log of kolo descheduler ----\n{text}");
        }
    }
}

#[test]
fn kolo_descheduler_leads_serves_its_metrics_and_stops_on_sigterm() {
    let Some(cluster) = cluster("daemon") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("daemon");
    let _cleanup = namespace(&config, &id);
    let account = cluster.kubeconfig_as("kolo-descheduler");
    let port = free_port();
    let mut args = vec!["descheduler".to_string()];
    let listen = format!("127.0.0.1:{port}");
    args.extend(
        component_args(&account)
            .into_iter()
            .map(|a| if a == "127.0.0.1:0" { listen.clone() } else { a }),
    );
    args.extend(["--namespace".into(), id.clone()]);
    args.extend(["--node-selector".into(), format!("kolo-test={id}")]);
    args.extend(["--leader-elect-namespace".into(), "kolo-system".into()]);
    args.extend(["--leader-elect-identity".into(), id.clone()]);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = kolo()
        .args(&args)
        .env("RUST_LOG", "info,kolo_kube=debug")
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let log_text = || std::fs::read_to_string(log.path()).unwrap_or_default();
    let _show = ShowLog(log.path().to_path_buf());
    wait_for("/readyz 200", TIMEOUT, || {
        http_get(port, "/readyz").filter(|a| a.starts_with("HTTP/1.1 200"))
    });
    let lease = get_json(&config, &["lease", "kolo-descheduler", "-n", "kolo-system"])
        .unwrap_or_else(|| panic!("the Lease\n{}", log_text()));
    assert_eq!(lease["spec"]["holderIdentity"], id.as_str(), "{lease}");
    let metrics = wait_for("a Balance round in /metrics", TIMEOUT, || {
        http_get(port, "/metrics").filter(|m| {
            m.lines().any(|l| {
                l.starts_with("kolo_descheduler_balance_rounds_total ") && !l.ends_with(" 0")
            })
        })
    });
    for line in ["kolo_descheduler_leader 1", "kolo_descheduler_reservation_crd_installed 1"] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    // Nothing moved in this test: no jobs, no evictions, no API writes,
    // and no node matches its node selector.
    common::metrics_doc::check(
        "descheduler",
        &metrics,
        &[
            "kolo_descheduler_nodes",
            "kolo_descheduler_migrations",
            "kolo_descheduler_evictions_total",
            "kolo_descheduler_actions_total",
        ],
    );
    run(Command::new("kill").args(["-TERM", &child.id().to_string()]), None);
    let status = wait_for("the descheduler to exit", TIMEOUT, || child.try_wait().unwrap());
    assert!(status.success(), "{status}\n{}", log_text());
    assert!(log_text().contains("SIGTERM"), "{}", log_text());
}

/// A DeschedulerConfiguration: LowNodeLoad (low 45 %, high 75 % of CPU
/// and memory; the first round over the threshold counts), migrations in
/// `mode` (`EvictDirectly`, `ReservationFirst`; Reservations for kolo's
/// scheduler named `id`), a Balance round every 2 s.
fn policy(dir: &Path, id: &str, mode: &str) -> PathBuf {
    let path = dir.join("policy.yaml");
    let yaml = [
        "apiVersion: descheduler/v1alpha2",
        "kind: DeschedulerConfiguration",
        "deschedulingInterval: 2s",
        "profiles:",
        "- name: kolo-descheduler",
        "  plugins:",
        "    balance:",
        "      enabled: [{name: LowNodeLoad}]",
        "  pluginConfig:",
        "  - name: LowNodeLoad",
        "    args:",
        "      lowThresholds: {cpu: 45, memory: 55}",
        "      highThresholds: {cpu: 75, memory: 80}",
        "      anomalyCondition: {consecutiveAbnormalities: 1}",
        "  - name: MigrationController",
        "    args:",
        &format!("      defaultJobMode: {mode}"),
        &format!("      schedulerNames: [{id}]"),
    ];
    std::fs::write(&path, yaml.join("\n")).unwrap();
    path
}

/// `kolo descheduler` as its service account, for this test's namespace
/// and nodes, with `policy`; then `extra`.
fn descheduler(cluster: &RbacCluster, id: &str, policy: &Path, extra: &[&str]) -> Daemon {
    let account = cluster.kubeconfig_as("kolo-descheduler");
    let mut args = vec!["descheduler".to_string()];
    args.extend(component_args(&account));
    args.extend(["--config".into(), policy.display().to_string(), "--leader-elect=false".into()]);
    args.extend(["--namespace".into(), id.to_string()]);
    args.extend(["--node-selector".into(), format!("kolo-test={id}")]);
    args.extend(extra.iter().map(|s| s.to_string()));
    Daemon::start(&format!("e2e-descheduler-{id}"), &args)
}

/// A ReplicaSet of 2 replicas (no controller-manager runs: it creates no
/// pods; the test does), labelled `app=<name>`; returns its UID.
fn replicaset(config: &Path, id: &str, name: &str) -> String {
    let labels = json!({"app": name, "kolo-test": id});
    create(
        config,
        &json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": id},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                    {"name": "c", "image": "registry.invalid/pause"}]}},
            },
        }),
    );
    let rs = get_json(config, &["replicaset", name, "-n", id]).unwrap();
    rs["metadata"]["uid"].as_str().unwrap().to_string()
}

/// A Running [`pending_replica`] placed on `node`; returns its UID.
fn replica(
    config: &Path,
    id: &str,
    name: &str,
    node: &str,
    owner: &str,
    owner_uid: &str,
) -> String {
    let mut object = pending_replica(id, name, owner, owner_uid);
    object["spec"]["nodeName"] = node.into();
    create(config, &object);
    mark_running(config, id, name);
    get_json(config, &["pod", name, "-n", id]).unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Writes a pod's status as its kubelet would once it runs and is ready.
fn mark_running(config: &Path, id: &str, name: &str) {
    let status = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": null},
    ]}});
    e2e_common::patch(config, &["pod", name, "-n", id, "--subresource=status"], &status);
}

/// A pod of ReplicaSet `owner` for scheduler `id`, not placed yet: LS,
/// Burstable (2 cores requested, 4 the limit).
fn pending_replica(id: &str, name: &str, owner: &str, owner_uid: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": id,
            "labels": {"kolo-test": id, "app": owner, "koordinator.sh/qosClass": "LS"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                 "uid": owner_uid, "controller": true}],
        },
        "spec": {
            "schedulerName": id,
            "nodeSelector": {"kolo-test": id},
            "containers": [{"name": "c", "image": "registry.invalid/pause",
                            "resources": {"requests": {"cpu": "2", "memory": "2Gi"},
                                          "limits": {"cpu": "4", "memory": "2Gi"}}}],
        },
    })
}

/// Writes a node's NodeMetric (created if missing) as its agent would:
/// `system_cpu` cores used outside pods, each pod's cores (LowNodeLoad's
/// node usage is their sum), and 4 GiB in all.
fn report(config: &Path, id: &str, node: &str, system_cpu: u32, pods: &[(&str, u32)]) {
    if get_json(config, &["nodemetric", node]).is_none() {
        create(
            config,
            &json!({
                "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                "metadata": {"name": node, "labels": {"kolo-test": id}}, "spec": {},
            }),
        );
    }
    let node_cpu = system_cpu + pods.iter().map(|(_, cpu)| cpu).sum::<u32>();
    let now = kolo_core::clock::Timestamp::now();
    let update_time = kolo_core::clock::Timestamp::from_second(now.as_second()).unwrap();
    let pods: Vec<_> = pods
        .iter()
        .map(|(name, cpu)| {
            json!({"namespace": id, "name": name,
                   "podUsage": {"resources": {"cpu": cpu.to_string(), "memory": "1Gi"}}})
        })
        .collect();
    let status = json!({"status": {
        "updateTime": update_time.to_string(),
        "nodeMetric": {
            "nodeUsage": {"resources": {"cpu": node_cpu.to_string(), "memory": "4Gi"}},
            "systemUsage": {"resources": {"cpu": system_cpu.to_string(), "memory": "2Gi"}},
        },
        "podsMetric": pods,
    }});
    e2e_common::patch(config, &["nodemetric", node, "--subresource=status"], &status);
}

/// A hot node (`<id>-hot`: 7 of 8 cores in use, over the 75 % high
/// threshold) running replica `web-1` (3 cores of that), and a cool one
/// (`<id>-cool`: 1 of 8 cores, under the 45 % low threshold; with web-1's
/// 3 it stays under 75 %). Returns web-1's UID.
fn hot_and_cool(config: &Path, id: &str) -> String {
    let (hot, cool) = (format!("{id}-hot"), format!("{id}-cool"));
    create_node(config, &hot, id, "8", "32Gi");
    create_node(config, &cool, id, "8", "32Gi");
    let owner = replicaset(config, id, "web");
    let uid = replica(config, id, "web-1", &hot, "web", &owner);
    report(config, id, &hot, 4, &[("web-1", 3)]);
    report(config, id, &cool, 1, &[]);
    uid
}

/// Removes a terminating pod, as its kubelet would once its containers
/// stopped (the API-only cluster has no kubelet).
fn finish(config: &Path, id: &str, name: &str) {
    run(
        kubectl(config).args(["delete", "pod", name, "-n", id, "--grace-period=0", "--force"]),
        None,
    );
}

/// The PodMigrationJobs of this test's pods.
fn jobs_of(config: &Path, id: &str) -> Vec<serde_json::Value> {
    let Some(list) = get_json(config, &["podmigrationjobs"]) else { return Vec::new() };
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|j| j["spec"]["podRef"]["namespace"] == id)
        .cloned()
        .collect()
}

/// Deletes the PodMigrationJobs of this test's pods when dropped (the
/// descheduler does not label them).
struct JobCleanup<'a>(&'a Path, String);

impl Drop for JobCleanup<'_> {
    fn drop(&mut self) {
        for job in jobs_of(self.0, &self.1) {
            let name = job["metadata"]["name"].as_str().unwrap_or_default();
            let _ = try_run(kubectl(self.0).args(["delete", "podmigrationjob", name]), None);
        }
    }
}

#[test]
fn a_hot_node_s_pod_is_migrated() {
    let Some(cluster) = cluster("migrate") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("hot");
    let _cleanup = namespace(&config, &id);
    let _jobs = JobCleanup(&config, id.clone());
    let dir = tempfile::tempdir().unwrap();
    let uid = hot_and_cool(&config, &id);
    let daemon = descheduler(&cluster, &id, &policy(dir.path(), &id, "EvictDirectly"), &[]);
    wait_for("web-1 evicted", TIMEOUT, || going(&config, &id, "web-1").then_some(()));
    let job = jobs_of(&config, &id).pop().expect("web-1's PodMigrationJob");
    assert_eq!(job["spec"]["podRef"]["name"], "web-1", "{job}");
    assert_eq!(job["spec"]["podRef"]["uid"], uid.as_str(), "{job}");
    assert_eq!(job["spec"]["mode"], "EvictDirectly", "{job}");
    finish(&config, &id, "web-1");
    let job = wait_for("web-1's PodMigrationJob Succeeded", TIMEOUT, || {
        jobs_of(&config, &id).into_iter().find(|j| j["status"]["phase"] == "Succeeded")
    });
    assert_eq!(jobs_of(&config, &id).len(), 1, "one job, not one per round\n{}", daemon.log());
    assert_eq!(job["spec"]["podRef"]["name"], "web-1", "{job}");
    let events = events_of(&config, &id, "web-1");
    assert!(events.iter().any(|(r, _)| r == "Descheduled"), "{events:?}");
}

#[test]
fn a_budget_that_forbids_it_stops_the_migration() {
    let Some(cluster) = cluster("budget") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("pdb");
    let _cleanup = namespace(&config, &id);
    let _jobs = JobCleanup(&config, id.clone());
    let dir = tempfile::tempdir().unwrap();
    hot_and_cool(&config, &id);
    forbidding_budget(&config, &id, "web");
    let daemon = descheduler(&cluster, &id, &policy(dir.path(), &id, "EvictDirectly"), &[]);
    let job = wait_for("web-1's PodMigrationJob Failed", TIMEOUT, || {
        jobs_of(&config, &id).into_iter().find(|j| j["status"]["phase"] == "Failed")
    });
    assert_eq!(job["status"]["reason"], "FailedEvict", "{job}\n{}", daemon.log());
    assert!(!going(&config, &id, "web-1"), "web-1 stays");
    let events = events_of(&config, &id, "web-1");
    assert!(events.iter().any(|(r, _)| r == "FailedEvict"), "{events:?}");
}

#[test]
fn a_dry_run_of_the_descheduler_writes_nothing_but_events() {
    let Some(cluster) = cluster("dry_daemon") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("drydaemon");
    let _cleanup = namespace(&config, &id);
    let _jobs = JobCleanup(&config, id.clone());
    let dir = tempfile::tempdir().unwrap();
    hot_and_cool(&config, &id);
    let daemon =
        descheduler(&cluster, &id, &policy(dir.path(), &id, "EvictDirectly"), &["--dry-run"]);
    // The decision is made and said (an Event on web-1), round after round.
    let event = wait_for("an Event on web-1", TIMEOUT, || events_of(&config, &id, "web-1").pop());
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(jobs_of(&config, &id), Vec::<serde_json::Value>::new(), "{event:?}");
    assert!(!going(&config, &id, "web-1"), "web-1 stays\n{}", daemon.log());
}

/// `kolo scheduler` as its service account, with one profile
/// (`schedulerName: <id>`) and kolo's default plugins (Reservation among
/// them).
fn scheduler(cluster: &RbacCluster, dir: &Path, id: &str) -> Daemon {
    let config = cluster.kubeconfig_as("kolo-scheduler");
    let file = e2e_common::scheduler_config(dir, id);
    let mut args = vec!["scheduler".to_string()];
    args.extend(component_args(&config));
    args.extend(["--config".into(), file.display().to_string(), "--leader-elect=false".into()]);
    Daemon::start(&format!("e2e-descheduler-scheduler-{id}"), &args)
}

#[test]
fn a_reservation_first_migration_reserves_evicts_and_binds_the_replacement() {
    let Some(cluster) = cluster("reservation_first") else { return };
    let config = cluster.kubeconfig();
    let id = e2e_common::run_id("rfirst");
    let _cleanup = namespace(&config, &id);
    let _jobs = JobCleanup(&config, id.clone());
    let dir = tempfile::tempdir().unwrap();
    hot_and_cool(&config, &id);
    let scheduler = scheduler(&cluster, dir.path(), &id);
    let daemon = descheduler(&cluster, &id, &policy(dir.path(), &id, "ReservationFirst"), &[]);
    // The job reserves room for web-1 off the hot node, then evicts it.
    let job = wait_for("web-1's job with a scheduled Reservation (or failed)", TIMEOUT, || {
        jobs_of(&config, &id)
            .into_iter()
            .find(|j| j["status"]["nodeName"].is_string() || j["status"]["phase"] == "Failed")
    });
    assert_ne!(job["status"]["phase"], "Failed", "{job}\n{}", daemon.log());
    assert_eq!(job["status"]["nodeName"], format!("{id}-cool"), "{job}\n{}", scheduler.log());
    let reservation = job["spec"]["reservationOptions"]["reservationRef"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("the job names its Reservation: {job}"))
        .to_string();
    wait_for("web-1 evicted", TIMEOUT, || going(&config, &id, "web-1").then_some(()));
    finish(&config, &id, "web-1");
    // The ReplicaSet's replacement (created here: no controller-manager)
    // takes the reservation, and once it is ready the job is done.
    let rs = get_json(&config, &["replicaset", "web", "-n", &id]).unwrap();
    let rs_uid = rs["metadata"]["uid"].as_str().unwrap();
    create(&config, &pending_replica(&id, "web-2", "web", rs_uid));
    let node = wait_for("web-2 bound", TIMEOUT, || e2e_common::node_of(&config, &id, "web-2"));
    assert_eq!(node, format!("{id}-cool"), "{}", scheduler.log());
    let pod = get_json(&config, &["pod", "web-2", "-n", &id]).unwrap();
    let allocated =
        pod["metadata"]["annotations"]["scheduling.koordinator.sh/reservation-allocated"]
            .as_str()
            .map(|s| serde_json::from_str::<serde_json::Value>(s).unwrap());
    assert_eq!(allocated.map(|a| a["name"].clone()), Some(reservation.as_str().into()), "{pod}");
    mark_running(&config, &id, "web-2");
    let job = wait_for("the job Succeeded", TIMEOUT, || {
        jobs_of(&config, &id).into_iter().find(|j| j["status"]["phase"] == "Succeeded")
    });
    assert_eq!(job["status"]["podRef"]["name"], "web-2", "{job}\n{}", daemon.log());
}
