//! DefaultPreemption through the in-memory scheduler: who is evicted, where,
//! and how the nominated node's room is kept for the preemptor.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::{ObjectKind, ObjectRef, SchedulingObject};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::report::Victim;
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn node(name: &str, cpu: &str, extra: &str) -> Node {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n{extra}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n  capacity: {{cpu: '{cpu}', memory: 64Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

/// A pod `ns/<name>` of a koord class with an explicit priority, asking for
/// `cpu`; on `node` if given; `spec` adds fields to its spec.
fn pod(name: &str, class: &str, priority: i32, cpu: &str, node: Option<&str>, spec: &str) -> Pod {
    let node = node.map(|n| format!("  nodeName: {n}\n")).unwrap_or_default();
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{koordinator.sh/priority-class: {class}}}}}\nspec:\n  schedulerName: kolo-scheduler\n  priority: {priority}\n{node}{spec}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}'}}\n"
    ))
    .unwrap()
}

fn scheduler() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new())).unwrap()
}

/// The node nominated in this cycle and the victims' keys.
fn preemption(report: &CycleReport) -> (Option<&str>, BTreeSet<&str>) {
    match &report.outcome {
        Outcome::Unschedulable { nominated, victims, .. } => {
            (nominated.as_deref(), victims.iter().map(|v: &Victim| v.pod.as_str()).collect())
        }
        other => panic!("{} was not unschedulable: {other:?}", report.pod),
    }
}

fn scheduled_on(report: &CycleReport) -> Option<&str> {
    match &report.outcome {
        Outcome::Scheduled { node, .. } => Some(node),
        _ => None,
    }
}

/// Node a: two koord-batch pods (5500), 2 CPU each. Node b: a koord-mid pod
/// (7500, 2 CPU) and two koord-free pods (3500, 1 CPU each). Both full at 4
/// CPU.
fn two_full_nodes() -> Scheduler {
    let mut s = scheduler();
    s.apply_node(node("a", "4", ""), t(0)).unwrap();
    s.apply_node(node("b", "4", ""), t(0)).unwrap();
    for (name, class, priority, cpu, on) in [
        ("batch-1", "koord-batch", 5500, "2", "a"),
        ("batch-2", "koord-batch", 5500, "2", "a"),
        ("mid", "koord-mid", 7500, "2", "b"),
        ("free-1", "koord-free", 3500, "1", "b"),
        ("free-2", "koord-free", 3500, "1", "b"),
    ] {
        s.apply_pod(pod(name, class, priority, cpu, Some(on), ""), t(0)).unwrap();
    }
    s
}

#[test]
fn a_high_priority_pod_preempts_the_minimal_set_on_the_best_node() {
    let mut s = two_full_nodes();
    s.apply_pod(pod("web", "koord-prod", 9500, "2", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    // On a, one batch pod (5500) would do; on b, the two free pods (3500)
    // must go and the mid pod is reprieved. kube's order prefers the lower
    // highest victim priority (3500 < 5500) before fewer victims.
    assert_eq!(preemption(&report), (Some("b"), BTreeSet::from(["ns/free-1", "ns/free-2"])));
    assert_eq!(s.nominated_node("ns/web"), Some("b"));
    assert_eq!(s.stats().preemptions, 1);

    // Tried again before the victims are gone: it waits, nominating
    // nothing new and keeping its node.
    s.apply_pod(pod("web", "koord-prod", 9500, "2", None, ""), t(1)).unwrap();
    let again = s.schedule_next(t(1)).unwrap();
    assert_eq!(preemption(&again), (None, BTreeSet::new()));
    assert_eq!(s.nominated_node("ns/web"), Some("b"));

    // The victims are deleted (the cluster driver evicted them): the
    // preemptor lands on b and its nomination is over.
    s.remove_pod("ns/free-1", t(2));
    s.remove_pod("ns/free-2", t(2));
    let reports = s.run_until_idle(t(30));
    let placed: Vec<_> = reports.iter().filter_map(scheduled_on).collect();
    assert_eq!(placed, ["b"], "{reports:?}");
    assert_eq!(s.nominated_node("ns/web"), None);
}

#[test]
fn a_pod_disruption_budget_moves_preemption_to_a_node_without_violations() {
    let budget: PodDisruptionBudget = serde_saphyr::from_str(
        "metadata: {name: free, namespace: ns}\n\
         spec: {selector: {matchLabels: {koordinator.sh/priority-class: koord-free}}}\n\
         status: {disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2}",
    )
    .unwrap();
    let mut s = two_full_nodes();
    s.apply_object(SchedulingObject::PodDisruptionBudget(Arc::new(budget)), t(0));
    s.apply_pod(pod("web", "koord-prod", 9500, "2", None, ""), t(0)).unwrap();
    // Without the budget b wins (see above); with it, evicting both free
    // pods breaks it once, so kube's first criterion (fewest violations)
    // picks a.
    assert_eq!(
        preemption(&s.schedule_next(t(0)).unwrap()),
        (Some("a"), BTreeSet::from(["ns/batch-2"]))
    );

    // The budget deleted, a fresh preemptor goes back to b.
    let mut s = two_full_nodes();
    s.apply_object(
        SchedulingObject::PodDisruptionBudget(Arc::new(serde_saphyr::from_str(
            "metadata: {name: free, namespace: ns}\nspec: {selector: {matchLabels: {koordinator.sh/priority-class: koord-free}}}",
        ).unwrap())),
        t(0),
    );
    s.remove_object(
        &ObjectRef { kind: ObjectKind::PodDisruptionBudget, key: "ns/free".into() },
        t(0),
    );
    s.apply_pod(pod("web", "koord-prod", 9500, "2", None, ""), t(0)).unwrap();
    assert_eq!(preemption(&s.schedule_next(t(0)).unwrap()).0, Some("b"));
}

#[test]
fn preemption_policy_never_does_not_preempt() {
    let mut s = two_full_nodes();
    let never = "  preemptionPolicy: Never\n";
    s.apply_pod(pod("polite", "koord-prod", 9500, "2", None, never), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(preemption(&report), (None, BTreeSet::new()));
    assert_eq!(s.nominated_node("ns/polite"), None);
    assert_eq!(s.stats().preemptions, 0);
}

#[test]
fn a_best_effort_pod_never_preempts_a_prod_pod() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("prod", "koord-prod", 9000, "4", Some("n"), ""), t(0)).unwrap();
    // A koord-batch pod whose explicit priority is above the prod pod's.
    s.apply_pod(pod("batch", "koord-batch", 9999, "1", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(preemption(&report), (None, BTreeSet::new()));
    // The same priority in the prod class does preempt: the class rule,
    // not the numbers, kept the batch pod out.
    s.apply_pod(pod("prod-2", "koord-prod", 9999, "1", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(report.pod, "ns/prod-2");
    assert_eq!(preemption(&report), (Some("n"), BTreeSet::from(["ns/prod"])));
}

#[test]
fn a_nominated_nodes_room_is_not_taken_by_a_lower_priority_pod() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("old", "koord-batch", 5500, "4", Some("n"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(preemption(&report), (Some("n"), BTreeSet::from(["ns/old"])));
    // The victim goes; before the preemptor's next cycle (it backs off), a
    // lower-priority pod arrives that would fit the freed room.
    s.remove_pod("ns/old", t(0));
    s.apply_pod(pod("late", "koord-batch", 5500, "2", None, ""), t(0)).unwrap();
    let reports = s.run_until_idle(t(0));
    let late = reports.iter().find(|r| r.pod == "ns/late").expect("late was tried");
    assert_eq!(scheduled_on(late), None, "{late:?}");
    let Outcome::Unschedulable { message, .. } = &late.outcome else { panic!("{late:?}") };
    assert_eq!(message, "0/1 nodes are available: 1 Insufficient cpu.");
    // The preemptor gets the node; the pod of lower priority still waits.
    let reports = s.run_until_idle(t(30));
    let web = reports.iter().find(|r| r.pod == "ns/web").expect("web was retried");
    assert_eq!(scheduled_on(web), Some("n"), "{reports:?}");
    assert_eq!(s.nominated_node("ns/web"), None);
}

#[test]
fn a_higher_priority_pod_is_not_held_back_by_a_lower_nomination() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("old", "koord-batch", 5500, "4", Some("n"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-mid", 7500, "4", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(preemption(&report), (Some("n"), BTreeSet::from(["ns/old"])));
    s.remove_pod("ns/old", t(0));
    // A prod pod outranks the nominated mid pod: the nomination does not
    // count against it (kube counts only nominations of higher or equal
    // priority).
    s.apply_pod(pod("vip", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    let reports = s.run_until_idle(t(0));
    let vip = reports.iter().find(|r| r.pod == "ns/vip").expect("vip was tried");
    assert_eq!(scheduled_on(vip), Some("n"), "{reports:?}");
}

#[test]
fn victims_on_a_node_rejected_as_unresolvable_are_never_chosen() {
    let mut s = scheduler();
    // The tainted node holds the cheapest victim (koord-free, 3500), but
    // the preemptor does not tolerate its taint: removing pods cannot help.
    let taint = "spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}";
    s.apply_node(node("tainted", "4", taint), t(0)).unwrap();
    s.apply_node(node("plain", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("free", "koord-free", 3500, "4", Some("tainted"), ""), t(0)).unwrap();
    s.apply_pod(pod("batch", "koord-batch", 5500, "4", Some("plain"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    let report = s.schedule_next(t(0)).unwrap();
    assert_eq!(preemption(&report), (Some("plain"), BTreeSet::from(["ns/batch"])));
    // Victims carry the UID the eviction checks and their priority.
    let Outcome::Unschedulable { victims, .. } = &report.outcome else { unreachable!() };
    assert_eq!(
        victims,
        &[Victim { pod: "ns/batch".into(), uid: "u-batch".into(), priority: 5500 }]
    );
}

#[test]
fn a_deleted_preemptor_loses_its_nomination() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("old", "koord-batch", 5500, "4", Some("n"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    s.schedule_next(t(0)).unwrap();
    assert_eq!(s.nominated_node("ns/web"), Some("n"));
    s.remove_pod("ns/web", t(1));
    assert_eq!(s.nominated_node("ns/web"), None);
    // Bound elsewhere by someone else: also over.
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(2)).unwrap();
    s.schedule_next(t(2)).unwrap();
    assert_eq!(s.nominated_node("ns/web"), Some("n"));
    s.apply_node(node("m", "8", ""), t(3)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", Some("m"), ""), t(3)).unwrap();
    assert_eq!(s.nominated_node("ns/web"), None);
}

#[test]
fn a_cleared_nomination_lets_the_pod_preempt_again() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("old", "koord-batch", 5500, "4", Some("n"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    s.schedule_next(t(0)).unwrap();
    // The driver could not evict the victim (a PodDisruptionBudget
    // refused): it drops the nomination.
    assert!(s.clear_nomination("ns/web"));
    assert!(!s.clear_nomination("ns/web"));
    // Tried again, the pod no longer waits for that victim: it preempts
    // anew (here the same choice, the only one there is).
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(1)).unwrap();
    let report = s.schedule_next(t(1)).unwrap();
    assert_eq!(preemption(&report), (Some("n"), BTreeSet::from(["ns/old"])));
}

#[test]
fn a_nomination_on_a_node_that_now_rejects_the_pod_for_good_is_dropped() {
    let mut s = scheduler();
    s.apply_node(node("n", "4", ""), t(0)).unwrap();
    s.apply_pod(pod("old", "koord-batch", 5500, "4", Some("n"), ""), t(0)).unwrap();
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(0)).unwrap();
    assert_eq!(preemption(&s.schedule_next(t(0)).unwrap()).0, Some("n"));
    // While the victim is still there the pod waits for it...
    s.apply_pod(pod("web", "koord-prod", 9500, "4", None, ""), t(1)).unwrap();
    assert_eq!(preemption(&s.schedule_next(t(1)).unwrap()), (None, BTreeSet::new()));
    assert_eq!(s.nominated_node("ns/web"), Some("n"));
    // ... until the node is tainted against it: kube-scheduler's
    // PodEligibleToPreemptOthers lets it preempt again, there is nowhere
    // to, and the nomination goes.
    let tainted = "spec: {taints: [{key: maintenance, effect: NoSchedule}]}";
    s.apply_node(node("n", "4", tainted), t(2)).unwrap();
    let reports = s.run_until_idle(t(30));
    assert!(!reports.is_empty(), "the node update retries the pod");
    assert!(reports.iter().all(|r| preemption(r) == (None, BTreeSet::new())), "{reports:?}");
    assert_eq!(s.nominated_node("ns/web"), None);
}
