//! The framework's side of job scheduling: Permit plugins deciding about
//! pods other than the one asked about ([`Permit::take_verdicts`]), and
//! plugins told of pending pods and scheduling objects
//! ([`ClusterEventHandler::on_object`]).

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::{PodGroup, PodGroupSpec};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::{
    ClusterEvent, ClusterEventHandler, CycleContext, CycleState, ExtensionPoints, NodeInfo,
    ObjectEvent, ObjectKind, ObjectRef, Permit, PermitOutcome, Plugin, PodInfo, Rejection, Reserve,
    SchedulingObject, WaitingVerdict,
};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

/// Holds pods at Permit until `size` are held, then lets them all go; an
/// unreserved pod rejects the others held. Logs what it is told.
#[derive(Default)]
struct Pairs {
    size: usize,
    held: Mutex<Vec<Box<str>>>,
    verdicts: Mutex<Vec<WaitingVerdict>>,
    log: Mutex<Vec<String>>,
}

impl Plugin for Pairs {
    fn name(&self) -> &'static str {
        "Pairs"
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).reserve().permit().event_handler().into()
    }
}

impl Permit for Pairs {
    fn permit(
        &self,
        _: &CycleContext,
        _: &CycleState,
        pod: &PodInfo,
        _: &NodeInfo,
    ) -> PermitOutcome {
        let mut held = self.held.lock().unwrap();
        if held.len() + 1 < self.size {
            held.push(pod.key().into());
            return PermitOutcome::Wait(std::time::Duration::from_secs(30));
        }
        let mut verdicts = self.verdicts.lock().unwrap();
        verdicts.extend(held.drain(..).map(WaitingVerdict::Allow));
        PermitOutcome::Allow
    }

    fn take_verdicts(&self) -> Vec<WaitingVerdict> {
        std::mem::take(&mut *self.verdicts.lock().unwrap())
    }
}

impl Reserve for Pairs {
    fn reserve(
        &self,
        _: &CycleContext,
        _: &CycleState,
        _: &PodInfo,
        _: &NodeInfo,
    ) -> Result<(), Rejection> {
        Ok(())
    }
    fn unreserve(&self, _: &CycleContext, pod: &PodInfo, _: &NodeInfo) {
        let mut held = self.held.lock().unwrap();
        let before = held.len();
        held.retain(|k| **k != *pod.key());
        if before != held.len() || !held.is_empty() {
            let rejection = Rejection::unschedulable(format!("{} was unreserved", pod.key()));
            let mut verdicts = self.verdicts.lock().unwrap();
            verdicts.extend(
                held.drain(..)
                    .map(|pod| WaitingVerdict::Reject { pod, rejection: rejection.clone() }),
            );
        }
    }
}

impl ClusterEventHandler for Pairs {
    fn on_event(&self, _: &ClusterEvent<'_>) {}
    fn on_object(&self, event: &ObjectEvent<'_>) {
        let line = match event {
            ObjectEvent::Applied(o) => format!("applied {:?} {}", o.kind(), o.reference().key),
            ObjectEvent::Removed(r) => format!("removed {:?} {}", r.kind, r.key),
            ObjectEvent::PendingPodAdded(p) => format!("pending {}", p.key()),
            ObjectEvent::PendingPodRemoved(p) => format!("not pending {}", p.key()),
        };
        self.log.lock().unwrap().push(line);
    }
}

fn node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut spec = serde_json::json!({
        "schedulerName": "kolo-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    });
    if let Some(node) = node {
        spec["nodeName"] = serde_json::json!(node);
    }
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": spec,
    }))
    .unwrap()
}

fn scheduler(size: usize) -> (Scheduler, Arc<Pairs>, Arc<InMemoryBinder>) {
    let plugin = Arc::new(Pairs { size, ..Pairs::default() });
    let mut registry = registry();
    // A factory is a plain function: it hands out this test thread's
    // instance, so the test can read what the plugin was told.
    registry.register("Pairs", |_| Ok(PAIRS.with(|p| p.borrow().clone().unwrap())));
    PAIRS.with(|p| *p.borrow_mut() = Some(plugin.clone()));
    let config = SchedulerConfig::from_yaml(
        "profiles:\n- plugins:\n    reserve:\n      enabled: [{name: Pairs}]\n    permit:\n      enabled: [{name: Pairs}]\n",
    )
    .unwrap();
    let binder = Arc::new(InMemoryBinder::new());
    let s = Scheduler::new(&config, &registry, DEFAULT_PLUGINS, binder.clone()).unwrap();
    (s, plugin, binder)
}

thread_local! {
    static PAIRS: std::cell::RefCell<Option<Arc<Pairs>>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn the_last_of_a_group_allows_those_waiting_for_it() {
    let (mut s, _, binder) = scheduler(3);
    s.apply_node(node("n"), t(0)).unwrap();
    for name in ["a", "b", "c"] {
        s.apply_pod(pod(name, None), t(0)).unwrap();
    }
    for name in ["a", "b"] {
        let report = s.schedule_next(t(0)).unwrap();
        assert_eq!(report.pod, format!("ns/{name}"));
        assert_eq!(report.outcome, Outcome::Waiting { node: "n".into() });
    }
    assert!(binder.bindings().is_empty(), "nothing binds before the group is complete");
    assert_eq!(s.waiting_pods().count(), 2);
    let report = s.schedule_next(t(0)).unwrap();
    assert!(matches!(report.outcome, Outcome::Scheduled { .. }), "{report:?}");
    let mut bound: Vec<_> = binder.bindings().into_iter().map(|b| b.pod).collect();
    bound.sort();
    assert_eq!(bound, ["ns/a", "ns/b", "ns/c"], "the verdicts bound the two waiting pods");
    assert_eq!(s.waiting_pods().count(), 0);
}

#[test]
fn an_unreserved_member_rejects_the_others_and_frees_their_room() {
    let (mut s, _, binder) = scheduler(3);
    s.apply_node(node("n"), t(0)).unwrap();
    for name in ["a", "b"] {
        s.apply_pod(pod(name, None), t(0)).unwrap();
        s.schedule_next(t(0)).unwrap();
    }
    assert_eq!(pods_on(&s, "n"), 2, "both assumed");
    // "a" is deleted while it waits: it is unreserved, and the plugin
    // rejects "b" in turn; neither holds room any more.
    s.remove_pod("ns/a", t(1));
    assert_eq!(s.waiting_pods().count(), 0);
    assert_eq!(pods_on(&s, "n"), 0, "no room held");
    assert!(binder.bindings().is_empty());
    // "b" is back in the queue (backing off) and waits again when tried.
    let report = s.schedule_next(t(60)).unwrap();
    assert_eq!(report.pod, "ns/b");
    assert_eq!(report.outcome, Outcome::Waiting { node: "n".into() });
}

#[test]
fn a_member_that_times_out_rejects_the_others() {
    let (mut s, _, binder) = scheduler(3);
    s.apply_node(node("n"), t(0)).unwrap();
    s.apply_pod(pod("a", None), t(0)).unwrap();
    s.schedule_next(t(0)).unwrap();
    s.apply_pod(pod("b", None), t(10)).unwrap();
    s.schedule_next(t(10)).unwrap();
    assert_eq!(pods_on(&s, "n"), 2);
    // "a" waited 30 s: it expires, and its unreserve rejects "b".
    s.schedule_next(t(31));
    assert_eq!(s.waiting_pods().count(), 0);
    assert_eq!(pods_on(&s, "n"), 0);
    assert!(binder.bindings().is_empty());
}

fn pods_on(s: &Scheduler, node: &str) -> u32 {
    let cache = s.cache();
    cache.node(cache.node_id(node).unwrap()).unwrap().pod_count()
}

#[test]
fn plugins_hear_of_pending_pods_and_scheduling_objects() {
    let (mut s, plugin, _) = scheduler(1);
    s.apply_node(node("n"), t(0)).unwrap();
    s.apply_pod(pod("a", None), t(0)).unwrap();
    s.apply_pod(pod("other", None), t(0)).unwrap();
    s.remove_pod("ns/other", t(0));
    s.apply_pod(pod("a", Some("n")), t(1)).unwrap();
    let group = PodGroup {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("g".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        spec: PodGroupSpec { min_member: Some(2), ..Default::default() },
        status: None,
    };
    s.apply_object(SchedulingObject::PodGroup(Arc::new(group)), t(2));
    s.remove_object(&ObjectRef { kind: ObjectKind::PodGroup, key: "ns/g".into() }, t(3));
    assert_eq!(
        *plugin.log.lock().unwrap(),
        [
            "pending ns/a",
            "pending ns/other",
            "not pending ns/other",
            "not pending ns/a",
            "applied PodGroup ns/g",
            "removed PodGroup ns/g",
        ]
    );
}
