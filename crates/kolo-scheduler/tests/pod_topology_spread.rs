//! PodTopologySpread end to end: the scheduler with its default profile
//! and the in-memory binder.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};
use proptest::prelude::*;

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn t() -> Timestamp {
    at(0)
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn scheduler() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new())).unwrap()
}

/// A node in `zone` (no zone label when `None`) with 8 CPUs (or `cpu`).
fn node(name: &str, zone: Option<&str>, cpu: &str) -> Node {
    let zone = zone.map(|z| format!(", {ZONE}: {z}")).unwrap_or_default();
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, labels: {{{HOST}: {name}{zone}}}}}\nstatus:\n  allocatable: {{cpu: '{cpu}', memory: 32Gi, pods: '110'}}\n  capacity: {{cpu: '{cpu}', memory: 32Gi, pods: '110'}}\n"
    ))
    .unwrap()
}

/// A pending pod with labels `app: <app>`, requesting `cpu`, with `extra`
/// spec lines (constraints) and `meta` metadata fields; bound to `node`
/// when given.
fn pod(name: &str, app: &str, cpu: &str, extra: &str, meta: &str, node: Option<&str>) -> Pod {
    let node = node.map(|n| format!("  nodeName: {n}\n")).unwrap_or_default();
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{app: {app}}}{meta}}}\nspec:\n  schedulerName: kolo-scheduler\n{node}  containers:\n  - name: c\n    resources:\n      requests: {{cpu: '{cpu}', memory: 100Mi}}\n{extra}"
    ))
    .unwrap()
}

/// A constraint selecting `app: <app>`.
fn constraint(skew: u32, key: &str, action: &str, app: &str) -> String {
    format!(
        "  - {{maxSkew: {skew}, topologyKey: {key}, whenUnsatisfiable: {action}, labelSelector: {{matchLabels: {{app: {app}}}}}}}\n"
    )
}

fn constraints(list: &[String]) -> String {
    format!("  topologySpreadConstraints:\n{}", list.concat())
}

fn node_of(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Scheduled { node, .. } => Some(node),
        _ => None,
    }
}

#[test]
fn zones_spread_with_max_skew_one() {
    let mut s = scheduler();
    for (name, zone) in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c")] {
        s.apply_node(node(name, Some(zone), "8"), t()).unwrap();
    }
    // Zone a holds two replicas already: the next ones go to b and c first.
    for (i, n) in ["a1", "a2"].iter().enumerate() {
        s.apply_pod(pod(&format!("old{i}"), "web", "100m", "", "", Some(n)), t()).unwrap();
    }
    let spread = constraints(&[constraint(1, ZONE, "DoNotSchedule", "web")]);
    for i in 0..7 {
        s.apply_pod(pod(&format!("w{i}"), "web", "100m", &spread, "", None), t()).unwrap();
    }
    let reports = s.run_until_idle(t());
    let zone = |n: &str| n[..1].to_string();
    let mut per_zone =
        BTreeMap::from([("a".to_string(), 2), ("b".to_string(), 0), ("c".into(), 0)]);
    for r in &reports {
        let n = node_of(&r.outcome).unwrap_or_else(|| panic!("{r:?}"));
        *per_zone.get_mut(&zone(n)).unwrap() += 1;
        let (min, max) = (per_zone.values().min().unwrap(), per_zone.values().max().unwrap());
        assert!(max - min <= 1 || zone(n) != "a", "{per_zone:?} after {}", r.pod);
    }
    assert_eq!(per_zone.values().copied().collect::<Vec<_>>(), [3, 3, 3]);
}

#[test]
fn do_not_schedule_rejects_with_kube_reasons() {
    let mut s = scheduler();
    s.apply_node(node("a1", Some("a"), "8"), t()).unwrap();
    // Zone b's node is too small for the replicas but still a domain.
    s.apply_node(node("b1", Some("b"), "1"), t()).unwrap();
    s.apply_node(node("bare", None, "8"), t()).unwrap();
    let spread = constraints(&[constraint(1, ZONE, "DoNotSchedule", "web")]);
    s.apply_pod(pod("w0", "web", "2", &spread, "", None), t()).unwrap();
    s.apply_pod(pod("w1", "web", "2", &spread, "", None), t()).unwrap();
    let reports = s.run_until_idle(t());
    assert_eq!(node_of(&reports[0].outcome), Some("a1"), "{reports:?}");
    let Outcome::Unschedulable { message, .. } = &reports[1].outcome else { panic!("{reports:?}") };
    assert!(message.starts_with("0/3 nodes are available: "), "{message}");
    assert!(
        message.contains("1 node(s) didn't match pod topology spread constraints,"),
        "{message}"
    );
    assert!(
        message.contains(
            "1 node(s) didn't match pod topology spread constraints (missing required label)"
        ),
        "{message}"
    );
    assert!(message.contains("1 Insufficient cpu"), "{message}");
    // The replica on a1 goes away: a1 fits again (after the backoff).
    s.remove_pod("ns/w0", at(1));
    let reports = s.run_until_idle(at(20));
    assert_eq!(reports.last().and_then(|r| node_of(&r.outcome)), Some("a1"), "{reports:?}");
}

#[test]
fn schedule_anyway_prefers_the_emptier_domain() {
    let mut s = scheduler();
    s.apply_node(node("a1", Some("a"), "4"), t()).unwrap();
    s.apply_node(node("b1", Some("b"), "4"), t()).unwrap();
    // a1 is the less allocated node, but holds the replicas.
    for i in 0..3 {
        s.apply_pod(pod(&format!("old{i}"), "web", "100m", "", "", Some("a1")), t()).unwrap();
    }
    s.apply_pod(pod("big", "other", "1", "", "", Some("b1")), t()).unwrap();
    let soft = constraints(&[constraint(1, ZONE, "ScheduleAnyway", "web")]);
    s.apply_pod(pod("new", "web", "100m", &soft, "", None), t()).unwrap();
    // Without the constraint, least-allocated picks a1.
    s.apply_pod(pod("plain", "web", "100m", "", "", None), t()).unwrap();
    let reports = s.run_until_idle(t());
    let by_pod: BTreeMap<_, _> =
        reports.iter().map(|r| (r.pod.as_str(), node_of(&r.outcome))).collect();
    assert_eq!(by_pod["ns/new"], Some("b1"), "{reports:?}");
    assert_eq!(by_pod["ns/plain"], Some("a1"), "{reports:?}");
    let Outcome::Scheduled { scores, .. } = &reports[0].outcome else { panic!() };
    assert_eq!(scores["PodTopologySpread"], 100);
}

#[test]
fn replica_set_pods_get_the_default_constraints() {
    let mut s = scheduler();
    s.apply_node(node("n1", None, "4"), t()).unwrap();
    s.apply_node(node("n2", None, "4"), t()).unwrap();
    for i in 0..4 {
        s.apply_pod(pod(&format!("old{i}"), "web", "100m", "", "", Some("n1")), t()).unwrap();
    }
    s.apply_pod(pod("big", "other", "1", "", "", Some("n2")), t()).unwrap();
    let owned = ", ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs, controller: true}]";
    s.apply_pod(pod("replica", "web", "100m", "", owned, None), t()).unwrap();
    s.apply_pod(pod("loose", "web", "100m", "", "", None), t()).unwrap();
    let reports = s.run_until_idle(t());
    let by_pod: BTreeMap<_, _> =
        reports.iter().map(|r| (r.pod.as_str(), node_of(&r.outcome))).collect();
    // Hostname maxSkew 3, weight ln 4: n1 4·1.39+2 → 8, n2 2 → 25 vs 100.
    assert_eq!(by_pod["ns/replica"], Some("n2"), "{reports:?}");
    assert_eq!(by_pod["ns/loose"], Some("n1"), "{reports:?}");
}

#[test]
fn list_defaults_come_from_plugin_config_and_errors_name_the_field() {
    let config = |args: &str| {
        format!(
            "profiles:\n- schedulerName: kolo-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n    args: {args}\n"
        )
    };
    let hard = config(
        "{defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}",
    );
    let config_of = |yaml: &str| SchedulerConfig::from_yaml(yaml).unwrap();
    let binder = Arc::new(InMemoryBinder::new());
    let mut s = Scheduler::new(&config_of(&hard), &registry(), DEFAULT_PLUGINS, binder).unwrap();
    s.apply_node(node("a1", Some("a"), "8"), t()).unwrap();
    s.apply_node(node("b1", Some("b"), "8"), t()).unwrap();
    // Least-allocated alone would put every replica on a1.
    s.apply_pod(pod("big", "other", "4", "", "", Some("b1")), t()).unwrap();
    let owned = ", ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: ss}]";
    for i in 0..4 {
        s.apply_pod(pod(&format!("db{i}"), "db", "100m", "", owned, None), t()).unwrap();
    }
    let reports = s.run_until_idle(t());
    let mut nodes: Vec<_> = reports.iter().filter_map(|r| node_of(&r.outcome)).collect();
    nodes.sort();
    assert_eq!(nodes, ["a1", "a1", "b1", "b1"], "{reports:?}");

    let bad = config(
        "{defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}",
    );
    let binder = Arc::new(InMemoryBinder::new());
    let err = Scheduler::new(&config_of(&bad), &registry(), DEFAULT_PLUGINS, binder).err().unwrap();
    assert!(err.to_string().contains("defaultConstraints[0].maxSkew"), "{err}");
}

/// A cluster change or step of a random history.
#[derive(Debug, Clone)]
enum Op {
    /// Pods of shape `.0` (app, constraints), `.1` of them.
    Add(u8, u8),
    Schedule(u8),
    Delete(prop::sample::Index),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..6, 1u8..4).prop_map(|(s, n)| Op::Add(s, n)),
        4 => (1u8..6).prop_map(Op::Schedule),
        1 => any::<prop::sample::Index>().prop_map(Op::Delete),
    ]
}

/// Shape `k`: (app, [(maxSkew, key)]) — hard constraints, selecting the
/// pod's own app; shape 5 has none.
fn shape(k: u8) -> (&'static str, Vec<(u32, &'static str)>) {
    match k {
        0 => ("web", vec![(1, ZONE)]),
        1 => ("web", vec![(1, ZONE), (2, HOST)]),
        2 => ("db", vec![(2, ZONE)]),
        3 => ("db", vec![(1, HOST)]),
        4 => ("web", vec![(1, HOST)]),
        _ => ("web", vec![]),
    }
}

fn shaped(name: &str, k: u8) -> Pod {
    let (app, list) = shape(k);
    let extra = if list.is_empty() {
        String::new()
    } else {
        constraints(
            &list
                .iter()
                .map(|(skew, key)| constraint(*skew, key, "DoNotSchedule", app))
                .collect::<Vec<_>>(),
        )
    };
    pod(name, app, "100m", &extra, "", None)
}

/// Nodes: 3 zones, 5 hosts (zone c has one).
const NODES: [(&str, &str); 5] = [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c")];

/// Whether a pod of shape `k` may go to `node` given the bound pods
/// `(node, shape)`: recomputed with plain loops, independently of the
/// plugin. Every node has both keys and the pod matches its own selector.
fn allowed(bound: &[(String, u8)], k: u8, node: &str) -> bool {
    let (app, list) = shape(k);
    let zone_of = |n: &str| NODES.iter().find(|(m, _)| *m == n).unwrap().1;
    for (skew, key) in list {
        let domain = |n: &str| if key == ZONE { zone_of(n).to_string() } else { n.to_string() };
        let mut counts: BTreeMap<String, i64> = NODES.iter().map(|(n, _)| (domain(n), 0)).collect();
        for (n, other) in bound {
            if shape(*other).0 == app {
                *counts.get_mut(&domain(n)).unwrap() += 1;
            }
        }
        let min = *counts.values().min().unwrap();
        if counts[&domain(node)] + 1 - min > i64::from(skew) {
            return false;
        }
    }
    true
}

/// Runs a history; returns the reports (pod, outcome) and checks every
/// decision against [`allowed`].
fn run(ops: &[Op], cache: bool) -> Vec<(String, Outcome)> {
    let mut s = scheduler();
    s.set_equivalence_cache(cache);
    for (n, z) in NODES {
        s.apply_node(node(n, Some(z), "64"), t()).unwrap();
    }
    let mut shapes: BTreeMap<String, u8> = BTreeMap::new();
    let mut bound: Vec<(String, String, u8)> = Vec::new();
    let mut next = 0;
    let mut reports = Vec::new();
    for op in ops {
        match op {
            Op::Add(k, count) => {
                for _ in 0..*count {
                    let name = format!("p{next}");
                    next += 1;
                    s.apply_pod(shaped(&name, *k), t()).unwrap();
                    shapes.insert(format!("ns/{name}"), *k);
                }
            }
            Op::Schedule(count) => {
                for _ in 0..*count {
                    let Some(r) = s.schedule_next(t()) else { break };
                    let k = shapes[&r.pod];
                    let placed: Vec<(String, u8)> =
                        bound.iter().map(|(_, n, k)| (n.clone(), *k)).collect();
                    match node_of(&r.outcome) {
                        Some(n) => {
                            assert!(
                                allowed(&placed, k, n),
                                "{} (shape {k}) on {n}: {placed:?}",
                                r.pod
                            );
                            bound.push((r.pod.clone(), n.to_string(), k));
                        }
                        None => {
                            // Resources never run out: only spreading can
                            // leave a pod without a node.
                            assert!(
                                NODES.iter().all(|(n, _)| !allowed(&placed, k, n)),
                                "{} (shape {k}) unschedulable: {:?} {placed:?}",
                                r.pod,
                                r.outcome
                            );
                        }
                    }
                    reports.push((r.pod, r.outcome));
                }
            }
            Op::Delete(pick) => {
                if !bound.is_empty() {
                    let (key, _, _) = bound.remove(pick.index(bound.len()));
                    s.remove_pod(&key, t());
                }
            }
        }
    }
    reports
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every placement keeps each hard constraint's skew, and a pod is left
    /// unschedulable only when no node would keep it, as recomputed from
    /// the bound pods; the equivalence cache changes no decision.
    #[test]
    fn placements_keep_the_skew_and_the_cache_changes_nothing(ops in prop::collection::vec(op(), 1..50)) {
        let with = run(&ops, true);
        let without = run(&ops, false);
        prop_assert_eq!(with, without);
    }
}
