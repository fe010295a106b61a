//! Gang scheduling through the whole scheduler (spec §8): PodGroups and
//! annotation gangs, Strict and NonStrict, gang groups, once-satisfied,
//! the queue order, and a property test that no gang is ever left
//! half-placed or holding room past its wait.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_api::crd::PodGroup;
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::{ObjectKind, ObjectRef, SchedulingObject};
use kolo_scheduler::plugins::coscheduling::plugin::{BIND_GANG_GROUP_ID, BIND_GANG_MEMBER_COUNT};
use kolo_scheduler::plugins::coscheduling::{Coscheduling, CoschedulingArgs};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler};
use proptest::prelude::*;

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn rfc3339(seconds: i64) -> String {
    t(seconds - 1_000).to_string()
}

fn node(name: &str, cpu: u32) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu.to_string(), "memory": "64Gi", "pods": "110"}}
    }))
    .unwrap()
}

/// A pod of one CPU created at `created` (seconds), with these labels and
/// annotations.
fn pod(name: &str, created: i64, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Pod {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "creationTimestamp": rfc3339(created),
            "labels": map(labels), "annotations": map(annotations),
        },
        "spec": {
            "schedulerName": "kolo-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    }))
    .unwrap()
}

const PG_LABEL: &str = "pod-group.scheduling.sigs.k8s.io";

/// A member of PodGroup `group`.
fn member(name: &str, group: &str, created: i64) -> Pod {
    pod(name, created, &[(PG_LABEL, group)], &[])
}

fn pod_group(
    name: &str,
    min: i32,
    timeout: i32,
    created: i64,
    annotations: &[(&str, &str)],
) -> SchedulingObject {
    let annotations: BTreeMap<String, String> =
        annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let pg: PodGroup = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": rfc3339(created),
                     "annotations": annotations},
        "spec": {"minMember": min, "scheduleTimeoutSeconds": timeout},
    }))
    .unwrap();
    SchedulingObject::PodGroup(Arc::new(pg))
}

thread_local! {
    static PLUGIN: std::cell::RefCell<Option<Arc<Coscheduling>>> = const { std::cell::RefCell::new(None) };
}

/// A scheduler with the default profile, an in-memory binder whose
/// bindings are fed back as the API would (the pod seen with its node),
/// and the Coscheduling instance to look into.
struct Cluster {
    s: Scheduler,
    binder: Arc<InMemoryBinder>,
    plugin: Arc<Coscheduling>,
    pods: HashMap<String, Pod>,
    fed: usize,
}

impl Cluster {
    fn new() -> Cluster {
        let plugin = Arc::new(Coscheduling::new(CoschedulingArgs::default()));
        PLUGIN.with(|p| *p.borrow_mut() = Some(plugin.clone()));
        let mut registry = registry();
        registry.register("Coscheduling", |_| Ok(PLUGIN.with(|p| p.borrow().clone().unwrap())));
        let config = SchedulerConfig::from_yaml("{}").unwrap();
        let binder = Arc::new(InMemoryBinder::new());
        let s = Scheduler::new(&config, &registry, DEFAULT_PLUGINS, binder.clone()).unwrap();
        Cluster { s, binder, plugin, pods: HashMap::new(), fed: 0 }
    }

    fn node(&mut self, name: &str, cpu: u32, at: i64) {
        self.s.apply_node(node(name, cpu), t(at)).unwrap();
    }

    fn pod(&mut self, pod: Pod, at: i64) {
        let key = format!("ns/{}", pod.metadata.name.as_deref().unwrap());
        self.pods.insert(key, pod.clone());
        self.s.apply_pod(pod, t(at)).unwrap();
    }

    fn delete(&mut self, key: &str, at: i64) {
        self.s.remove_pod(key, t(at));
    }

    /// Runs cycles at `at` until idle, feeding every binding back.
    fn run(&mut self, at: i64) -> Vec<CycleReport> {
        let mut reports = Vec::new();
        loop {
            reports.extend(self.s.run_until_idle(t(at)));
            let bindings = self.binder.bindings();
            if bindings.len() == self.fed {
                return reports;
            }
            for b in &bindings[self.fed..] {
                let mut pod = self.pods[&b.pod].clone();
                pod.spec.as_mut().unwrap().node_name = Some(b.node.clone());
                self.s.apply_pod(pod, t(at)).unwrap();
            }
            self.fed = bindings.len();
        }
    }

    fn bound(&self) -> BTreeSet<String> {
        self.binder.bindings().into_iter().map(|b| b.pod).collect()
    }

    /// Pods holding room without being bound: waiting at Permit, or
    /// assumed.
    fn held(&self) -> usize {
        let assumed = self.s.cache().pods().filter(|p| p.assumed).count();
        assumed.max(self.s.waiting_pods().count())
    }

    fn annotations(&self, pod: &str) -> BTreeMap<String, String> {
        let b = self.binder.bindings().into_iter().find(|b| b.pod == pod).unwrap();
        b.annotations
    }
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

fn outcome_of<'a>(reports: &'a [CycleReport], pod: &str) -> Vec<&'a Outcome> {
    reports.iter().filter(|r| r.pod == pod).map(|r| &r.outcome).collect()
}

#[test]
fn a_strict_gang_that_cannot_complete_binds_none_then_all_when_room_appears() {
    let mut c = Cluster::new();
    c.node("n1", 1, 0);
    c.node("n2", 1, 0);
    c.s.apply_object(pod_group("g", 3, 600, 0, &[]), t(0));
    for name in ["a", "b", "c"] {
        c.pod(member(name, "g", 0), 0);
    }
    let reports = c.run(0);
    assert!(matches!(outcome_of(&reports, "ns/a")[..], [Outcome::Waiting { .. }]));
    assert!(matches!(outcome_of(&reports, "ns/c")[..], [Outcome::Unschedulable { .. }]));
    assert!(c.bound().is_empty(), "none of a gang of 3 binds on room for 2");
    assert_eq!(c.held(), 0, "c's failure rejected the two waiting (Strict)");

    // Retried while the room is short: still none bound, nothing held.
    c.run(5);
    c.run(30);
    assert!(c.bound().is_empty());
    assert_eq!(c.held(), 0);

    c.node("n3", 1, 60);
    c.run(60);
    assert_eq!(c.bound(), set(&["ns/a", "ns/b", "ns/c"]));
    assert_eq!(c.held(), 0);
    let annotations = c.annotations("ns/a");
    assert_eq!(annotations[BIND_GANG_GROUP_ID], "ns/g");
    assert_eq!(annotations[BIND_GANG_MEMBER_COUNT], "3");
    assert_eq!(annotations["scheduling.koordinator.sh/bind-gang-member-count"], "3");
}

#[test]
fn non_strict_members_hold_their_room_until_their_wait_ends_strict_ones_do_not() {
    for (mode, held_before_timeout) in [("NonStrict", 2), ("Strict", 0)] {
        let mut c = Cluster::new();
        c.node("n1", 1, 0);
        c.node("n2", 1, 0);
        let mode_annotation = ("gang.scheduling.koordinator.sh/mode", mode);
        c.s.apply_object(pod_group("g", 3, 30, 0, &[mode_annotation]), t(0));
        for name in ["a", "b", "c"] {
            c.pod(member(name, "g", 0), 0);
        }
        c.run(0);
        assert_eq!(c.held(), held_before_timeout, "{mode} at 0 s");
        c.run(29);
        assert!(c.held() <= held_before_timeout, "{mode} at 29 s");
        // A member held since 0 s expires at 30 s (c, which was refused
        // for room, may take the room they free: it waits on its own).
        c.s.schedule_next(t(30));
        let waiting: Vec<&str> = c.s.waiting_pods().map(|(k, _)| k).collect();
        assert!(!waiting.contains(&"ns/a") && !waiting.contains(&"ns/b"), "{mode}: {waiting:?}");
        assert!(c.bound().is_empty(), "{mode}");
    }
}

#[test]
fn a_member_that_never_comes_lets_the_others_go_at_their_timeout() {
    let mut c = Cluster::new();
    c.node("n", 8, 0);
    c.s.apply_object(pod_group("g", 3, 30, 0, &[]), t(0));
    c.pod(member("a", "g", 0), 0);
    c.pod(member("b", "g", 0), 0);
    // The third member belongs to another scheduler: it counts as a child
    // (the basic check passes) but is never placed here.
    let mut other = member("c", "g", 0);
    other.spec.as_mut().unwrap().scheduler_name = Some("other".into());
    c.pod(other, 0);
    c.run(0);
    assert_eq!(c.held(), 2, "a and b wait for c");
    c.run(29);
    assert_eq!(c.held(), 2);
    c.s.schedule_next(t(30));
    assert_eq!(c.held(), 0, "a timed out and its unreserve rejected b (Strict)");
    assert!(c.bound().is_empty());
}

#[test]
fn gang_groups_are_all_or_nothing() {
    let mut c = Cluster::new();
    c.node("n1", 3, 0);
    let groups = ("gang.scheduling.koordinator.sh/groups", r#"["ns/x","ns/y"]"#);
    c.s.apply_object(pod_group("x", 2, 600, 0, &[groups]), t(0));
    c.s.apply_object(pod_group("y", 2, 600, 1, &[groups]), t(0));
    for (name, group) in [("x1", "x"), ("x2", "x"), ("y1", "y"), ("y2", "y")] {
        c.pod(member(name, group, 0), 0);
    }
    let reports = c.run(0);
    // x is complete after x2 but waits for y; y2 finds no room.
    assert!(matches!(outcome_of(&reports, "ns/x2")[..], [Outcome::Waiting { .. }]));
    assert!(c.bound().is_empty(), "x alone would fit; the group may not");
    assert_eq!(c.held(), 0);
    c.node("n2", 1, 60);
    c.run(60);
    assert_eq!(c.bound(), set(&["ns/x1", "ns/x2", "ns/y1", "ns/y2"]));
    let annotations = c.annotations("ns/y1");
    assert_eq!(annotations[BIND_GANG_GROUP_ID], "ns/x,ns/y");
    assert_eq!(annotations[BIND_GANG_MEMBER_COUNT], "4");
}

#[test]
fn once_satisfied_gangs_take_late_members_alone_only_waiting_ones_do_not() {
    for (policy, late_binds) in [("once-satisfied", true), ("only-waiting", false)] {
        let mut c = Cluster::new();
        c.node("n1", 2, 0);
        let annotations = [
            ("gang.scheduling.koordinator.sh/match-policy", policy),
            ("gang.scheduling.koordinator.sh/total-number", "3"),
        ];
        c.s.apply_object(pod_group("g", 2, 30, 0, &annotations), t(0));
        c.pod(member("a", "g", 0), 0);
        c.pod(member("b", "g", 0), 0);
        c.run(0);
        assert_eq!(c.bound(), set(&["ns/a", "ns/b"]), "{policy}");
        c.node("n2", 1, 10);
        c.pod(member("late", "g", 10), 10);
        c.run(10);
        assert_eq!(c.bound().contains("ns/late"), late_binds, "{policy}");
        if late_binds {
            // Bound alone: no gang annotations.
            assert!(!c.annotations("ns/late").contains_key(BIND_GANG_GROUP_ID));
        } else {
            assert_eq!(c.held(), 1, "only-waiting: the late member waits for another");
            c.s.schedule_next(t(40));
            assert_eq!(c.held(), 0);
        }
    }
}

#[test]
fn annotation_gangs_wait_for_min_available_and_go_with_their_last_pod() {
    let mut c = Cluster::new();
    c.node("n1", 4, 0);
    let gang = |name: &str| {
        pod(
            name,
            0,
            &[],
            &[
                ("gang.scheduling.koordinator.sh/name", "job"),
                ("gang.scheduling.koordinator.sh/min-available", "2"),
            ],
        )
    };
    c.pod(gang("a"), 0);
    let reports = c.run(0);
    let [Outcome::Unschedulable { message, .. }] = &outcome_of(&reports, "ns/a")[..] else {
        panic!("{reports:?}")
    };
    assert!(
        message.contains(
            "gangGroup [ns/job] basic check: memberGangs [ns/job] child pod not collect enough, \
             current gang: ns/job, podName: ns/a"
        ),
        "{message}"
    );
    // The second member wakes the first (a pending pod appeared).
    c.pod(gang("b"), 1);
    c.run(2);
    assert_eq!(c.bound(), set(&["ns/a", "ns/b"]));
    assert!(c.plugin.with_state(|g| g.gangs.contains_key("ns/job")));
    c.delete("ns/a", 3);
    c.delete("ns/b", 3);
    assert!(!c.plugin.with_state(|g| g.gangs.contains_key("ns/job")), "gone with its last pod");

    // Without min-available the gang has no rules: said so.
    c.pod(pod("x", 5, &[], &[("gang.scheduling.koordinator.sh/name", "bad")]), 5);
    let reports = c.run(5);
    let [Outcome::Unschedulable { message, .. }] = &outcome_of(&reports, "ns/x")[..] else {
        panic!("{reports:?}")
    };
    assert!(message.contains("gang has not init, gangName: ns/bad, podName: ns/x"), "{message}");
}

#[test]
fn a_pod_group_arriving_after_its_pods_wakes_them_and_keeps_them_together() {
    let mut c = Cluster::new();
    c.node("n1", 8, 0);
    // Gang "late"'s pods come first, younger than gang "early"'s PodGroup;
    // their own PodGroup, older, comes last: they must move ahead.
    for (name, created) in [("l1", 6), ("l2", 8)] {
        c.pod(member(name, "late", created), 0);
    }
    let reports = c.run(0);
    let [Outcome::Unschedulable { message, .. }] = &outcome_of(&reports, "ns/l1")[..] else {
        panic!("{reports:?}")
    };
    assert!(message.contains("gang has not init, gangName: ns/late, podName: ns/l1"), "{message}");
    c.s.apply_object(pod_group("early", 2, 600, 5, &[]), t(10));
    for (name, created) in [("e1", 2), ("e2", 4)] {
        c.pod(member(name, "early", created), 10);
    }
    // A pod in no gang, created between them all.
    c.pod(pod("solo", 0, &[], &[]), 10);
    c.s.apply_object(pod_group("late", 2, 600, 0, &[]), t(10));
    let order: Vec<String> = c.run(20).into_iter().map(|r| r.pod).collect();
    assert_eq!(order, ["ns/solo", "ns/l1", "ns/l2", "ns/e1", "ns/e2"]);
    assert_eq!(c.bound().len(), 5);
}

#[test]
fn a_removed_pod_group_leaves_its_pods_unscheduled() {
    let mut c = Cluster::new();
    c.node("n1", 8, 0);
    c.s.apply_object(pod_group("g", 3, 600, 0, &[]), t(0));
    c.pod(member("a", "g", 0), 0);
    c.pod(member("b", "g", 0), 0);
    c.run(0);
    let reference = ObjectRef { kind: ObjectKind::PodGroup, key: "ns/g".into() };
    c.s.remove_object(&reference, t(1));
    c.pod(member("c", "g", 0), 2);
    let reports = c.run(2);
    assert!(c.bound().is_empty());
    let [Outcome::Unschedulable { message, .. }] = &outcome_of(&reports, "ns/c")[..] else {
        panic!("{reports:?}")
    };
    assert!(message.contains("gang has not init, gangName: ns/g, podName: ns/c"), "{message}");
}

/// One gang of the property test.
#[derive(Debug, Clone)]
struct GangCase {
    size: usize,
    min: usize,
    timeout: i32,
    strict: bool,
}

fn gang_case() -> impl Strategy<Value = GangCase> {
    (1usize..=6, 1usize..=6, 5i32..=60, any::<bool>()).prop_map(|(size, min, timeout, strict)| {
        GangCase { size, min: min.min(size), timeout, strict }
    })
}

/// Runs the gangs on `nodes` nodes of `cpu` CPUs for a simulated `horizon`
/// seconds, checking at each step that no gang is half bound and that no
/// member waits longer than its gang's timeout; returns the bound pods per
/// gang and the cluster.
fn simulate(gangs: &[GangCase], nodes: usize, cpu: u32, horizon: i64) -> (Vec<usize>, Cluster) {
    let mut c = Cluster::new();
    for n in 0..nodes {
        c.node(&format!("n{n}"), cpu, 0);
    }
    let mut waiting_since: HashMap<String, i64> = HashMap::new();
    for (g, gang) in gangs.iter().enumerate() {
        let mode = (
            "gang.scheduling.koordinator.sh/mode",
            if gang.strict { "Strict" } else { "NonStrict" },
        );
        let name = format!("g{g}");
        c.s.apply_object(pod_group(&name, gang.min as i32, gang.timeout, g as i64, &[mode]), t(0));
        for m in 0..gang.size {
            c.pod(member(&format!("g{g}-{m}"), &name, g as i64), 0);
        }
    }
    let timeout_of = |pod: &str| -> i64 {
        let g: usize = pod[4..].split('-').next().unwrap().parse().unwrap();
        i64::from(gangs[g].timeout)
    };
    let bound_per_gang = |c: &Cluster| -> Vec<usize> {
        let bound = c.bound();
        (0..gangs.len())
            .map(|g| bound.iter().filter(|p| p.starts_with(&format!("ns/g{g}-"))).count())
            .collect()
    };
    let mut now = 0;
    while now <= horizon {
        c.run(now);
        // Something happens in the cluster now and then: unschedulable
        // pods are retried on events (and after five minutes).
        if now % 60 == 0 {
            c.node("n0", cpu, now);
        }
        let waiting: BTreeSet<String> = c.s.waiting_pods().map(|(k, _)| k.to_string()).collect();
        waiting_since.retain(|k, _| waiting.contains(k));
        for pod in &waiting {
            let since = *waiting_since.entry(pod.clone()).or_insert(now);
            assert!(now - since <= timeout_of(pod), "{pod} waited since {since}, now {now}");
        }
        for (g, bound) in bound_per_gang(&c).into_iter().enumerate() {
            assert!(bound == 0 || bound >= gangs[g].min, "gang {g} half bound ({bound}) at {now}");
        }
        now += 1;
    }
    (bound_per_gang(&c), c)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Strict and NonStrict gangs together: at every step no gang is half
    /// bound and no member has waited past its gang's timeout (checked in
    /// `simulate`); at the end every gang is bound whole (at least
    /// minMember) or not at all.
    #[test]
    fn gangs_bind_whole_and_never_wait_past_their_timeout(
        gangs in prop::collection::vec(gang_case(), 1..5),
        nodes in 1usize..6,
        cpu in 1u32..4,
    ) {
        let (bound, _) = simulate(&gangs, nodes, cpu, 400);
        for (g, gang) in gangs.iter().enumerate() {
            prop_assert!(bound[g] == 0 || bound[g] >= gang.min);
        }
    }

    /// Strict gangs do not deadlock: a gang left unbound needs more room
    /// than the bound gangs left, and none of it holds room.
    #[test]
    fn strict_gangs_do_not_deadlock(
        gangs in prop::collection::vec(gang_case(), 1..5),
        nodes in 1usize..6,
        cpu in 1u32..4,
    ) {
        let gangs: Vec<GangCase> = gangs.into_iter().map(|g| GangCase { strict: true, ..g }).collect();
        let (bound, c) = simulate(&gangs, nodes, cpu, 400);
        let free = nodes * cpu as usize - bound.iter().sum::<usize>();
        for (g, gang) in gangs.iter().enumerate() {
            if bound[g] == 0 {
                prop_assert!(gang.min > free, "gang {} (min {}) fits in {} free", g, gang.min, free);
            }
        }
        // A pod still held at the horizon waits within its timeout
        // (checked) for a gang that never bound: a bound gang's later
        // members pass Permit at once (once-satisfied).
        for (pod, _) in c.s.waiting_pods() {
            let g: usize = pod[4..].split('-').next().unwrap().parse().unwrap();
            prop_assert_eq!(bound[g], 0, "{} waits for a bound gang", pod);
        }
    }
}

#[test]
fn the_equivalence_cache_still_serves_pods_in_no_gang_and_gang_members() {
    let mut c = Cluster::new();
    for n in 0..50 {
        c.node(&format!("n{n}"), 8, 0);
    }
    c.s.apply_object(pod_group("g", 2, 600, 0, &[]), t(0));
    let pods = [
        pod("solo1", 0, &[], &[]),
        pod("solo2", 0, &[], &[]),
        member("m1", "g", 1),
        member("m2", "g", 1),
    ];
    for p in pods {
        c.pod(p, 0);
    }
    let mut evaluated = Vec::new();
    let mut before = 0;
    while let Some(report) = c.s.schedule_next(t(0)) {
        let now = c.s.stats().node_evaluations;
        evaluated.push((report.pod, now - before));
        before = now;
    }
    // The first pod of each signature looks at every node; the next alike
    // pod only at the node the previous one was placed on.
    let got: Vec<(&str, u64)> = evaluated.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    assert_eq!(got, [("ns/solo1", 50), ("ns/solo2", 1), ("ns/m1", 50), ("ns/m2", 1)]);
}

#[test]
fn facts_say_how_many_members_a_gang_waits_for() {
    use kolo_scheduler::plugins::coscheduling::facts::GangFacts;
    let mut c = Cluster::new();
    c.s.set_facts(true);
    c.node("n1", 8, 0);
    c.s.apply_object(pod_group("g", 3, 45, 0, &[]), t(0));
    for name in ["a", "b", "c"] {
        c.pod(member(name, "g", 0), 0);
    }
    let report = c.s.schedule_next(t(0)).unwrap();
    let facts = report.facts["Coscheduling"].downcast_ref::<GangFacts>().unwrap();
    assert_eq!((facts.gang.as_str(), facts.min_member, facts.wait_seconds), ("ns/g", 3, 45));
    assert_eq!((facts.children, facts.waiting, facts.waiting_for), (3, 1, 2));
    let report = c.s.schedule_next(t(0)).unwrap();
    let facts = report.facts["Coscheduling"].downcast_ref::<GangFacts>().unwrap();
    assert_eq!((facts.waiting, facts.waiting_for), (2, 1));
    assert_eq!(report.facts["Coscheduling"].to_json()["waitingFor"], 1);
}
