//! VolumeBinding, VolumeZone and VolumeRestrictions through the in-memory
//! scheduler: bound claims steer pods to the nodes their volumes allow,
//! unbound ones are refused naming the claim until they bind, a
//! ReadWriteOncePod claim and an in-line disk have one user, and pods with
//! claims never share the equivalence cache with pods without.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::SchedulingObject;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn node(name: &str, cpu: &str, labels: &str) -> Node {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}, {labels}}}}}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n  capacity: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

/// A pod `ns/<name>` asking for 1 CPU, with these volumes (YAML flow
/// items).
fn pod(name: &str, volumes: &str) -> Pod {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{app: web}}}}\nspec:\n  schedulerName: kolo-scheduler\n  volumes: [{volumes}]\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '1'}}\n"
    ))
    .unwrap()
}

fn claim_volume(name: &str) -> String {
    format!("{{name: v, persistentVolumeClaim: {{claimName: {name}}}}}")
}

/// A claim `ns/<name>`, bound to `volume` when given, with `modes`.
fn pvc(name: &str, volume: Option<&str>, modes: &str) -> SchedulingObject {
    let bound = volume.map_or(String::new(), |v| {
        format!(
            "annotations: {{pv.kubernetes.io/bind-completed: 'yes'}}}}\nspec: {{volumeName: {v}, "
        )
    });
    let yaml = if bound.is_empty() {
        format!("metadata: {{name: {name}, namespace: ns}}\nspec: {{accessModes: [{modes}]}}")
    } else {
        format!("metadata: {{name: {name}, namespace: ns, {bound}accessModes: [{modes}]}}")
    };
    let claim: PersistentVolumeClaim = serde_saphyr::from_str(&yaml).unwrap();
    SchedulingObject::PersistentVolumeClaim(Arc::new(claim))
}

/// A volume usable only on `host`'s node (any node when `None`), with
/// these labels.
fn pv(name: &str, host: Option<&str>, labels: &str) -> SchedulingObject {
    let affinity = host.map_or(String::new(), |h| {
        format!("nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{h}]}}]}}]}}}}")
    });
    let volume: PersistentVolume = serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{{labels}}}}}\nspec: {{{affinity}}}"
    ))
    .unwrap();
    SchedulingObject::PersistentVolume(Arc::new(volume))
}

/// Nodes a (16 CPU, zone z1), b and c (4 CPU, zones z2 and z3): pods
/// without volumes prefer a, the least allocated.
fn scheduler() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    let mut s =
        Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new()))
            .unwrap();
    for (name, cpu, zone) in [("a", "16", "z1"), ("b", "4", "z2"), ("c", "4", "z3")] {
        s.apply_node(node(name, cpu, &format!("topology.kubernetes.io/zone: {zone}")), t(0))
            .unwrap();
    }
    s
}

fn scheduled_on(report: &CycleReport) -> &str {
    match &report.outcome {
        Outcome::Scheduled { node, .. } => node,
        other => panic!("{} was not scheduled: {other:?}", report.pod),
    }
}

fn refusal(report: &CycleReport) -> &str {
    match &report.outcome {
        Outcome::Unschedulable { message, .. } => message,
        other => panic!("{} was not refused: {other:?}", report.pod),
    }
}

#[test]
fn a_bound_claim_places_the_pod_where_its_volume_is() {
    let mut s = scheduler();
    s.apply_object(pv("pv-b", Some("b"), ""), t(0));
    s.apply_object(pvc("data", Some("pv-b"), "ReadWriteOnce"), t(0));
    s.apply_pod(pod("p", &claim_volume("data")), t(0)).unwrap();
    assert_eq!(scheduled_on(&s.schedule_next(t(0)).unwrap()), "b");
}

#[test]
fn an_unbound_claim_is_refused_by_name_and_retried_when_it_binds() {
    let mut s = scheduler();
    s.apply_object(pvc("data", None, "ReadWriteOnce"), t(0));
    s.apply_pod(pod("p", &claim_volume("data")), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(
        refusal(&report),
        "0/3 nodes are available: persistentvolumeclaim \"data\" is not bound; \
         kolo-scheduler does not bind volumes."
    );
    // Backoff over, a pod placed elsewhere: it waits
    // (nodes added or changed would retry it, as kube-scheduler does).
    s.apply_pod(pod("other", ""), t(5)).unwrap();
    assert_eq!(s.schedule_next(t(5)).expect("the other pod").pod, "ns/other");
    assert!(s.schedule_next(t(5)).is_none(), "woken by a pod");
    // The volume appears, the claim binds: the pod is tried again at once.
    s.apply_object(pv("pv-c", Some("c"), ""), t(6));
    s.apply_object(pvc("data", Some("pv-c"), "ReadWriteOnce"), t(6));
    assert_eq!(scheduled_on(&s.schedule_next(t(6)).expect("woken by the claim")), "c");
}

#[test]
fn missing_claims_and_volumes_are_named() {
    let mut s = scheduler();
    s.apply_object(pvc("orphan", Some("pv-gone"), "ReadWriteOnce"), t(0));
    s.apply_pod(pod("p", &claim_volume("nope")), t(0)).unwrap();
    s.apply_pod(pod("q", &claim_volume("orphan")), t(0)).unwrap();
    let messages: Vec<String> =
        s.run_until_idle(t(0)).iter().map(|r| refusal(r).to_string()).collect();
    assert_eq!(
        messages,
        [
            "0/3 nodes are available: persistentvolumeclaim \"nope\" not found.",
            "0/3 nodes are available: persistentvolume \"pv-gone\" of persistentvolumeclaim \"orphan\" not found."
        ]
    );
}

#[test]
fn a_zoned_volume_keeps_the_pod_in_its_zone() {
    let mut s = scheduler();
    s.apply_object(pv("pv-z2", None, "topology.kubernetes.io/zone: z2"), t(0));
    s.apply_object(pvc("data", Some("pv-z2"), "ReadWriteOnce"), t(0));
    s.apply_pod(pod("p", &claim_volume("data")), t(0)).unwrap();
    assert_eq!(scheduled_on(&s.schedule_next(t(0)).unwrap()), "b");
    s.apply_object(pv("pv-z9", None, "topology.kubernetes.io/zone: z9"), t(0));
    s.apply_object(pvc("far", Some("pv-z9"), "ReadWriteOnce"), t(0));
    s.apply_pod(pod("q", &claim_volume("far")), t(0)).unwrap();
    assert_eq!(
        refusal(&s.schedule_next(t(0)).unwrap()),
        "0/3 nodes are available: 3 node(s) had no available volume zone."
    );
}

#[test]
fn a_read_write_once_pod_claim_waits_for_its_user_to_go() {
    let mut s = scheduler();
    s.apply_object(pv("pv-any", None, ""), t(0));
    s.apply_object(pvc("solo", Some("pv-any"), "ReadWriteOncePod"), t(0));
    s.apply_pod(pod("first", &claim_volume("solo")), t(0)).unwrap();
    s.apply_pod(pod("second", &claim_volume("solo")), t(0)).unwrap();
    let reports = s.run_until_idle(t(0));
    scheduled_on(&reports[0]);
    assert_eq!(
        refusal(&reports[1]),
        "0/3 nodes are available: persistentvolumeclaim \"solo\" has access mode \
         ReadWriteOncePod and is used by pod ns/first."
    );
    s.remove_pod("ns/first", t(5));
    assert_eq!(s.schedule_next(t(5)).expect("woken by the delete").pod, "ns/second");
}

#[test]
fn an_rbd_image_is_written_from_one_node_at_a_time() {
    let mut s = scheduler();
    let rbd = "{name: d, rbd: {monitors: [m1], image: img}}";
    let mut nodes = Vec::new();
    for name in ["p1", "p2", "p3"] {
        s.apply_pod(pod(name, rbd), t(0)).unwrap();
        nodes.push(scheduled_on(&s.schedule_next(t(0)).unwrap()).to_string());
    }
    nodes.sort();
    // a would take all three (least allocated) but for the disk.
    assert_eq!(nodes, ["a", "b", "c"]);
    s.apply_pod(pod("p4", rbd), t(0)).unwrap();
    assert_eq!(
        refusal(&s.schedule_next(t(0)).unwrap()),
        "0/3 nodes are available: 3 node(s) had no available disk."
    );
}

/// Replicas differing only in a claim have the same pod signature: were
/// the volume plugins' results cached, the replica with the claim would
/// reuse the plain replicas' verdicts and land on a.
#[test]
fn pods_with_claims_share_no_cached_results_with_pods_without() {
    let mut s = scheduler();
    s.apply_object(pv("pv-c", Some("c"), ""), t(0));
    s.apply_object(pvc("data", Some("pv-c"), "ReadWriteOnce"), t(0));
    let plain = "{name: e, emptyDir: {}}";
    let mut placed = Vec::new();
    for (name, volumes) in [
        ("x1", plain.to_string()),
        ("x2", plain.to_string()),
        ("x3", format!("{plain}, {}", claim_volume("data"))),
        ("x4", plain.to_string()),
    ] {
        s.apply_pod(pod(name, &volumes), t(0)).unwrap();
        placed.push(scheduled_on(&s.schedule_next(t(0)).unwrap()).to_string());
    }
    assert_eq!(placed, ["a", "a", "c", "a"]);
}
