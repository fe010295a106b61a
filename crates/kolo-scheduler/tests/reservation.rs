//! Reservations through the scheduler (Reservation plugin, spec §9.1): a
//! reservation is scheduled as its reserve pod and holds its resources;
//! owner pods use them, other pods cannot; allocateOnce, expiry and the
//! reservation-affinity annotation. The test plays the driver the way
//! `kolo_scheduler::plugins::reservation` documents it: it feeds
//! reservations with `apply_reservation`, and writes their status with
//! `next_status` after a bind request targets them.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::Reservation;
use kolo_api::names::annotation;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::{BindRequest, BindTarget, InMemoryBinder};
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::reservation::feed::apply_reservation;
use kolo_scheduler::plugins::reservation::plugin::NO_MATCHING_RESERVATION;
use kolo_scheduler::plugins::reservation::status::{Observed, next_status};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler};
use serde_json::json;

/// 1,800,000,000 s is 2027-01-15T08:00:00Z, the reservations' creation.
fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}
    }))
    .unwrap()
}

/// A pending pod `default/<name>` requesting `cpu`, with these labels and
/// annotations.
fn pod(name: &str, cpu: &str, labels: serde_json::Value, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "labels": labels, "annotations": annotations},
        "spec": {"schedulerName": "kolo-scheduler",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }))
    .unwrap()
}

/// Reservation `name` of `cpu` for pods labelled `owner: <owner>`, pinned
/// to `on` if given, with `spec` fields merged in.
fn reservation(
    name: &str,
    cpu: &str,
    owner: &str,
    on: Option<&str>,
    spec: serde_json::Value,
) -> Reservation {
    let mut template = json!({"schedulerName": "kolo-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]});
    if let Some(on) = on {
        template["nodeName"] = json!(on);
    }
    let mut value = json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"),
                     "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {"template": {"spec": template},
                 "owners": [{"labelSelector": {"matchLabels": {"owner": owner}}}]},
    });
    for (k, v) in spec.as_object().unwrap() {
        value["spec"][k] = v.clone();
    }
    serde_json::from_value(value).unwrap()
}

fn scheduler() -> (Scheduler, Arc<InMemoryBinder>) {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    let binder = Arc::new(InMemoryBinder::new());
    let s = Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, binder.clone()).unwrap();
    (s, binder)
}

fn scheduled_on(report: &CycleReport) -> Option<&str> {
    match &report.outcome {
        Outcome::Scheduled { node, .. } => Some(node),
        _ => None,
    }
}

fn unschedulable_message(report: &CycleReport) -> &str {
    match &report.outcome {
        Outcome::Unschedulable { message, .. } => message,
        other => panic!("{} was not unschedulable: {other:?}", report.pod),
    }
}

/// Runs one cycle for the pod just fed.
fn schedule(s: &mut Scheduler, pod: Pod, now: Timestamp) -> CycleReport {
    let key = format!("default/{}", pod.metadata.name.as_deref().unwrap());
    s.apply_pod(pod, now).unwrap();
    let report = s.schedule_next(now).unwrap();
    assert_eq!(report.pod, key);
    report
}

fn binding(binder: &InMemoryBinder, pod: &str) -> BindRequest {
    let bindings = binder.bindings();
    let found = bindings.iter().rev().find(|b| b.pod == pod);
    found.unwrap_or_else(|| panic!("{pod} not bound")).clone()
}

fn allocated_annotation(request: &BindRequest) -> Option<serde_json::Value> {
    let text = request.annotations.get(annotation::RESERVATION_ALLOCATED)?;
    Some(serde_json::from_str(text).unwrap())
}

/// Feeds a reservation, schedules it, and plays the driver: the bind
/// request must target the reservation; its status is written from it and
/// the reservation fed again (now assigned to the node).
fn place(
    s: &mut Scheduler,
    binder: &InMemoryBinder,
    r: Reservation,
    now: Timestamp,
) -> Reservation {
    let name = r.metadata.name.clone().unwrap();
    apply_reservation(s, Arc::new(r.clone()), now).unwrap();
    let report = s.schedule_next(now).unwrap();
    assert_eq!(report.pod, format!("Reservation/{name}"));
    let bound = binding(binder, &report.pod);
    assert_eq!(bound.target, BindTarget::Reservation { name: name.clone() });
    assert_eq!(bound.uid, format!("uid-{name}"));
    let observed = Observed { node: Some(&bound.node), ..Observed::default() };
    let mut r = r;
    r.status = Some(next_status(&r, &observed, now).unwrap());
    assert_eq!(r.status.as_ref().unwrap().phase.as_deref(), Some("Available"));
    apply_reservation(s, Arc::new(r.clone()), now).unwrap();
    s.process_bind_results(now);
    r
}

fn requested_cpu(s: &Scheduler, node: &str) -> i64 {
    let cache = s.cache();
    let node = cache.node(cache.node_id(node).unwrap()).unwrap();
    node.requested(kolo_core::resources::ResourceName::Cpu)
}

#[test]
fn a_reservation_is_scheduled_and_holds_its_resources_against_other_pods() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    let r = place(&mut s, &binder, reservation("r1", "3", "web", None, json!({})), t(0));
    assert_eq!(r.status.as_ref().unwrap().node_name.as_deref(), Some("n1"));
    assert_eq!(requested_cpu(&s, "n1"), 3000, "the reserve pod is counted once, confirmed");
    // 1 CPU is free: a 2-CPU pod that is not an owner cannot use the rest.
    let report = schedule(&mut s, pod("other", "2", json!({"owner": "db"}), json!({})), t(1));
    assert!(unschedulable_message(&report).contains("Insufficient cpu"), "{report:?}");
    // A 1-CPU pod fits beside the reservation.
    let report = schedule(&mut s, pod("small", "1", json!({}), json!({})), t(1));
    assert_eq!(scheduled_on(&report), Some("n1"));
    assert_eq!(binding(&binder, "default/small").target, BindTarget::Pod);
}

#[test]
fn an_owner_uses_the_reserved_resources_of_a_full_node_and_prefers_it() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    s.apply_node(node("n2", "8"), t(0)).unwrap();
    // web-1 owns it by UID; so does any pod labelled owner=web.
    let owners = json!({"owners": [{"object": {"uid": "uid-web-1"}},
                                   {"labelSelector": {"matchLabels": {"owner": "web"}}}]});
    place(&mut s, &binder, reservation("r1", "3", "web", Some("n1"), owners), t(0));
    // Fill n1's last CPU with a pod that is not an owner.
    let filler = pod("filler", "1", json!({}), json!({}));
    let mut filler_on_n1 = filler.clone();
    filler_on_n1.spec.as_mut().unwrap().node_name = Some("n1".into());
    s.apply_pod(filler_on_n1, t(0)).unwrap();
    assert_eq!(requested_cpu(&s, "n1"), 4000, "n1 is full: reservation 3 + filler 1");
    // A pod exactly like the owner but not one goes to n2 (and its
    // results may be cached: the owner's must not come from there).
    let twin = schedule(&mut s, pod("twin", "3", json!({}), json!({})), t(1));
    assert_eq!(scheduled_on(&twin), Some("n2"));
    // The owner lands on n1 although n2 has room: the reservation wins.
    let report = schedule(&mut s, pod("web-1", "3", json!({}), json!({})), t(1));
    assert_eq!(scheduled_on(&report), Some("n1"), "{report:?}");
    let bound = binding(&binder, "default/web-1");
    assert_eq!(allocated_annotation(&bound), Some(json!({"name": "r1", "uid": "uid-r1"})));
    // The reservation is used up (allocateOnce): a second owner is an
    // ordinary pod now and n1 has no room for it.
    let report = schedule(&mut s, pod("web-2", "1", json!({"owner": "web"}), json!({})), t(2));
    assert_eq!(scheduled_on(&report), Some("n2"));
    assert_eq!(allocated_annotation(&binding(&binder, "default/web-2")), None);
}

#[test]
fn an_owner_takes_the_rest_from_the_node_under_aligned_but_not_restricted() {
    for (policy, want) in [("Aligned", Some("n1")), ("Restricted", None)] {
        let (mut s, binder) = scheduler();
        s.apply_node(node("n1", "4"), t(0)).unwrap();
        let spec = json!({"allocatePolicy": policy});
        place(&mut s, &binder, reservation("r1", "2", "web", None, spec), t(0));
        // 3 CPU: 2 from the reservation and 1 of n1's 2 free ones.
        let report = schedule(&mut s, pod("web-1", "3", json!({"owner": "web"}), json!({})), t(1));
        assert_eq!(scheduled_on(&report), want, "{policy}: {report:?}");
    }
}

#[test]
fn allocate_once_lets_only_the_first_owner_take_and_succeeds() {
    for (allocate_once, second_uses_it) in [(true, false), (false, true)] {
        let (mut s, binder) = scheduler();
        s.apply_node(node("n1", "5"), t(0)).unwrap();
        let spec = json!({"allocateOnce": allocate_once});
        let r = place(&mut s, &binder, reservation("r1", "4", "web", None, spec), t(0));
        let a = schedule(&mut s, pod("a", "2", json!({"owner": "web"}), json!({})), t(1));
        assert_eq!(scheduled_on(&a), Some("n1"));
        let b = schedule(&mut s, pod("b", "1", json!({"owner": "web"}), json!({})), t(1));
        if second_uses_it {
            // 2 of the reservation's 4 CPU are left for b.
            assert_eq!(scheduled_on(&b), Some("n1"), "{b:?}");
            let bound = binding(&binder, "default/b");
            assert_eq!(allocated_annotation(&bound).unwrap()["name"], "r1");
            continue;
        }
        // Used up by a; its hold stays counted until the driver marks it
        // Succeeded (reservation 4 + a 2 on a 5-CPU node: no room for b).
        assert!(unschedulable_message(&b).contains("Insufficient cpu"), "{b:?}");
        let bound_a = binding(&binder, "default/a");
        let owner = kolo_scheduler::plugins::reservation::status::Owner {
            reference: k8s_openapi::api::core::v1::ObjectReference {
                kind: Some("Pod".into()),
                namespace: Some("default".into()),
                name: Some("a".into()),
                uid: Some(bound_a.uid.clone()),
                ..Default::default()
            },
            requests: kolo_core::resources::ResourceVector::cpu_memory(2000, 0),
        };
        let mut r = r;
        let observed = Observed { owners: std::slice::from_ref(&owner), ..Observed::default() };
        r.status = Some(next_status(&r, &observed, t(2)).unwrap());
        assert_eq!(r.status.as_ref().unwrap().phase.as_deref(), Some("Succeeded"));
        apply_reservation(&mut s, Arc::new(r), t(2)).unwrap();
        assert_eq!(requested_cpu(&s, "n1"), 2000, "only a is counted now");
        let reports = s.run_until_idle(t(400));
        let b = reports.iter().find(|r| r.pod == "default/b").expect("b retried");
        assert_eq!(scheduled_on(b), Some("n1"));
    }
}

#[test]
fn expiry_frees_the_reserved_resources() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    let r = place(&mut s, &binder, reservation("r1", "4", "web", None, json!({"ttl": "1h"})), t(0));
    let report = schedule(&mut s, pod("other", "2", json!({}), json!({})), t(10));
    assert!(unschedulable_message(&report).contains("Insufficient cpu"));
    // At its expiry an owner may no longer use it, even before the driver
    // writes the status.
    s.apply_pod(pod("web-1", "1", json!({"owner": "web"}), json!({})), t(3_600)).unwrap();
    let reports = s.run_until_idle(t(3_600));
    let late = reports.iter().find(|r| r.pod == "default/web-1").unwrap();
    assert!(unschedulable_message(late).contains("Insufficient cpu"), "{late:?}");
    assert!(binder.bindings().iter().all(|b| b.pod != "default/web-1"));
    // The driver writes Failed and feeds it: the hold is gone.
    let mut r = r;
    r.status = Some(next_status(&r, &Observed::default(), t(3_600)).unwrap());
    assert_eq!(r.status.as_ref().unwrap().phase.as_deref(), Some("Failed"));
    apply_reservation(&mut s, Arc::new(r), t(3_600)).unwrap();
    assert_eq!(requested_cpu(&s, "n1"), 0);
    let reports = s.run_until_idle(t(4_000));
    for key in ["default/other", "default/web-1"] {
        let report = reports.iter().find(|r| r.pod == key).expect("retried");
        assert_eq!(scheduled_on(report), Some("n1"), "{report:?}");
    }
}

#[test]
fn reservation_affinity_picks_a_reservation_by_name_or_none() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    s.apply_node(node("n2", "4"), t(0)).unwrap();
    place(&mut s, &binder, reservation("r1", "2", "web", Some("n1"), json!({})), t(0));
    place(&mut s, &binder, reservation("r2", "2", "web", Some("n2"), json!({})), t(0));
    let affinity =
        |name: &str| json!({ annotation::RESERVATION_AFFINITY: format!(r#"{{"name":"{name}"}}"#) });
    let report = schedule(&mut s, pod("web-1", "2", json!({"owner": "web"}), affinity("r2")), t(1));
    assert_eq!(scheduled_on(&report), Some("n2"), "{report:?}");
    let bound = binding(&binder, "default/web-1");
    assert_eq!(allocated_annotation(&bound), Some(json!({"name": "r2", "uid": "uid-r2"})));
    // r2 is used up: a pod that must use it fits nowhere, although r1 and
    // free room remain.
    let report = schedule(&mut s, pod("web-2", "1", json!({"owner": "web"}), affinity("r2")), t(1));
    assert!(unschedulable_message(&report).contains(NO_MATCHING_RESERVATION), "{report:?}");
    // An affinity the plugin does not implement is refused, naming it.
    let refused = json!({ annotation::RESERVATION_AFFINITY: r#"{"tolerations":[{"key":"a"}]}"# });
    let report = schedule(&mut s, pod("web-3", "1", json!({"owner": "web"}), refused), t(1));
    assert!(unschedulable_message(&report).contains("tolerations"), "{report:?}");
}

#[test]
fn an_unschedulable_reservation_is_reported_pending() {
    let (mut s, _binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    let r = reservation("big", "16", "web", None, json!({}));
    apply_reservation(&mut s, Arc::new(r.clone()), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(report.pod, "Reservation/big");
    let message = unschedulable_message(&report).to_string();
    let observed = Observed { unschedulable: Some(&message), ..Observed::default() };
    let status = next_status(&r, &observed, t(0)).unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let scheduled = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (
            scheduled.condition_type.as_deref(),
            scheduled.status.as_deref(),
            scheduled.reason.as_deref()
        ),
        (Some("Scheduled"), Some("False"), Some("Unschedulable"))
    );
    assert!(scheduled.message.as_deref().unwrap().contains("Insufficient cpu"));
}

#[test]
fn a_reserve_pod_is_never_a_preemption_victim() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    place(&mut s, &binder, reservation("r1", "4", "web", None, json!({})), t(0));
    let mut urgent = pod("urgent", "2", json!({}), json!({}));
    urgent.spec.as_mut().unwrap().priority = Some(1_000_000);
    let report = schedule(&mut s, urgent, t(1));
    match &report.outcome {
        Outcome::Unschedulable { nominated, victims, .. } => {
            assert_eq!((nominated, victims.len()), (&None, 0), "{report:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reservation_ignored_pod_uses_any_reserved_room_and_takes_none() {
    let (mut s, binder) = scheduler();
    s.apply_node(node("n1", "4"), t(0)).unwrap();
    place(&mut s, &binder, reservation("r1", "4", "web", None, json!({})), t(0));
    let ignored = json!({ kolo_api::names::label::RESERVATION_IGNORED: "true" });
    let report = schedule(&mut s, pod("system", "2", ignored, json!({})), t(1));
    assert_eq!(scheduled_on(&report), Some("n1"), "{report:?}");
    assert_eq!(allocated_annotation(&binding(&binder, "default/system")), None);
    // It took nothing from the reservation (allocateOnce is not used up):
    // an owner still uses it, for the room the node has left.
    let report = schedule(&mut s, pod("web-1", "2", json!({"owner": "web"}), json!({})), t(1));
    assert_eq!(scheduled_on(&report), Some("n1"), "{report:?}");
    assert!(allocated_annotation(&binding(&binder, "default/web-1")).is_some());
}
