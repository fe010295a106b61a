//! InterPodAffinity end to end: the default scheduler with the in-memory
//! binder spreads, co-locates and respects existing pods' anti-affinity;
//! random histories keep every placement within the pods' required terms
//! (checked by an independent checker written with plain loops, not the
//! plugin's counting); the equivalence cache never changes a decision.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kolo_core::clock::Timestamp;
use kolo_scheduler::binder::InMemoryBinder;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{Outcome, Scheduler};
use proptest::prelude::*;

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn scheduler() -> Scheduler {
    let config = SchedulerConfig::from_yaml("{}").unwrap();
    Scheduler::new(&config, &registry(), DEFAULT_PLUGINS, Arc::new(InMemoryBinder::new())).unwrap()
}

/// Node `n<i>` in zone `z<i % zones>`, with room for every pod here.
fn node(i: usize, zones: usize) -> Node {
    serde_saphyr::from_str(&format!(
        "metadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}, zone: z{}}}}}\nstatus:\n  allocatable: {{cpu: '64', memory: 256Gi, pods: '110'}}\n  capacity: {{cpu: '64', memory: 256Gi, pods: '110'}}\n",
        i % zones
    ))
    .unwrap()
}

/// A required term on `app: <app>` over `key`.
fn term(app: &str, key: &str) -> String {
    format!("{{labelSelector: {{matchLabels: {{app: {app}}}}}, topologyKey: {key}}}")
}

fn pod(name: &str, app: &str, affinity: &str) -> Pod {
    let affinity =
        if affinity.is_empty() { String::new() } else { format!("  affinity: {affinity}\n") };
    serde_saphyr::from_str(&format!(
        "metadata: {{name: {name}, namespace: ns, uid: u-{name}, labels: {{app: {app}}}}}\nspec:\n  schedulerName: kolo-scheduler\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: 100m, memory: 100Mi}}\n{affinity}"
    ))
    .unwrap()
}

fn anti(app: &str, key: &str) -> String {
    format!(
        "{{podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}]}}}}",
        term(app, key)
    )
}

fn affinity(app: &str, key: &str) -> String {
    format!(
        "{{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}]}}}}",
        term(app, key)
    )
}

fn node_of(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Scheduled { node, .. } => Some(node),
        _ => None,
    }
}

fn zone_of(node: &str, zones: usize) -> usize {
    node[1..].parse::<usize>().unwrap() % zones
}

#[test]
fn anti_affinity_across_zones_spreads_replicas_and_refuses_the_extra_one() {
    let mut s = scheduler();
    for i in 0..6 {
        s.apply_node(node(i, 3), t(0)).unwrap();
    }
    for r in 0..4 {
        s.apply_pod(pod(&format!("web-{r}"), "web", &anti("web", "zone")), t(0)).unwrap();
    }
    let reports = s.run_until_idle(t(0));
    assert_eq!(reports.len(), 4);
    let mut zones: Vec<usize> =
        reports[..3].iter().map(|r| zone_of(node_of(&r.outcome).expect("scheduled"), 3)).collect();
    zones.sort();
    assert_eq!(zones, [0, 1, 2], "{reports:?}");
    let Outcome::Unschedulable { message, .. } = &reports[3].outcome else {
        panic!("{:?}", reports[3]);
    };
    assert_eq!(message, "0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules.");
    // A replica goes away: its zone is free again for the waiting one.
    let freed = node_of(&reports[0].outcome).unwrap().to_string();
    s.remove_pod(&format!("ns/{}", reports[0].pod.rsplit('/').next().unwrap()), t(20));
    let report = s.schedule_next(t(20)).expect("retried after the delete");
    assert_eq!(zone_of(node_of(&report.outcome).unwrap(), 3), zone_of(&freed, 3), "{report:?}");
}

#[test]
fn affinity_co_locates() {
    let mut s = scheduler();
    for i in 0..6 {
        s.apply_node(node(i, 3), t(0)).unwrap();
    }
    // Without a cache pod anywhere, a web pod that does not select itself
    // fits nowhere.
    s.apply_pod(pod("web-0", "web", &affinity("cache", "kubernetes.io/hostname")), t(0)).unwrap();
    let first = s.schedule_next(t(0)).unwrap();
    assert!(
        matches!(&first.outcome, Outcome::Unschedulable { message, .. } if message == "0/6 nodes are available: 6 node(s) didn't match pod affinity rules."),
        "{first:?}"
    );
    s.apply_pod(pod("cache", "cache", ""), t(1)).unwrap();
    let cache_node = node_of(&s.schedule_next(t(1)).unwrap().outcome).unwrap().to_string();
    for r in 1..4 {
        s.apply_pod(
            pod(&format!("web-{r}"), "web", &affinity("cache", "kubernetes.io/hostname")),
            t(20),
        )
        .unwrap();
    }
    let reports = s.run_until_idle(t(20));
    assert_eq!(reports.len(), 4, "the waiting web-0 is retried after the cache pod arrived");
    for r in &reports {
        assert_eq!(node_of(&r.outcome), Some(cache_node.as_str()), "{r:?}");
    }
    // A series with affinity to itself by zone: the first goes anywhere,
    // the rest follow it into its zone.
    for r in 0..5 {
        s.apply_pod(pod(&format!("db-{r}"), "db", &affinity("db", "zone")), t(40)).unwrap();
    }
    let zones: Vec<usize> =
        s.run_until_idle(t(40)).iter().map(|r| zone_of(node_of(&r.outcome).unwrap(), 3)).collect();
    assert_eq!(zones.len(), 5);
    assert!(zones.iter().all(|z| *z == zones[0]), "{zones:?}");
}

#[test]
fn existing_pods_anti_affinity_is_symmetric() {
    let mut s = scheduler();
    s.apply_node(node(0, 1), t(0)).unwrap();
    s.apply_node(node(1, 1), t(0)).unwrap();
    s.apply_pod(pod("db", "db", &anti("web", "kubernetes.io/hostname")), t(0)).unwrap();
    let db_node = node_of(&s.schedule_next(t(0)).unwrap().outcome).unwrap().to_string();
    // Web pods have no terms of their own, yet avoid db's node.
    for r in 0..3 {
        s.apply_pod(pod(&format!("web-{r}"), "web", ""), t(1)).unwrap();
    }
    for r in s.run_until_idle(t(1)) {
        let node = node_of(&r.outcome).unwrap();
        assert_ne!(node, db_node, "{r:?}");
    }
    s.remove_node(if db_node == "n0" { "n1" } else { "n0" }, t(2));
    s.apply_pod(pod("web-9", "web", ""), t(2)).unwrap();
    let report = s.schedule_next(t(2)).unwrap();
    assert!(
        matches!(&report.outcome, Outcome::Unschedulable { message, .. } if message == "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."),
        "{report:?}"
    );
}

#[test]
fn the_equivalence_cache_does_not_serve_a_pod_an_existing_pod_repels() {
    // web-0 is scheduled with the cache on (its results are cached: no pod
    // has terms yet). Then db, which repels web pods from its zone, lands
    // in the other zone: the cached verdicts of db's zone's other node are
    // unchanged by generation, but no longer hold for web pods.
    for cache in [true, false] {
        let mut s = scheduler();
        s.set_equivalence_cache(cache);
        for i in 0..4 {
            s.apply_node(node(i, 2), t(0)).unwrap();
        }
        s.apply_pod(pod("web-0", "web", ""), t(0)).unwrap();
        let web_zone = zone_of(node_of(&s.schedule_next(t(0)).unwrap().outcome).unwrap(), 2);
        s.apply_pod(pod("db", "db", &anti("web", "zone")), t(1)).unwrap();
        let db_zone = zone_of(node_of(&s.schedule_next(t(1)).unwrap().outcome).unwrap(), 2);
        assert_ne!(db_zone, web_zone);
        for r in 1..6 {
            s.apply_pod(pod(&format!("web-{r}"), "web", ""), t(2)).unwrap();
        }
        for r in s.run_until_idle(t(2)) {
            assert_eq!(zone_of(node_of(&r.outcome).unwrap(), 2), web_zone, "cache {cache}: {r:?}");
        }
    }
}

/// A pod of the random histories: its app label and at most one required
/// affinity and one required anti-affinity term (app, topology key).
#[derive(Debug, Clone)]
struct Spec {
    app: &'static str,
    affinity: Option<(&'static str, &'static str)>,
    anti: Option<(&'static str, &'static str)>,
}

const APPS: [&str; 3] = ["a", "b", "c"];
const KEYS: [&str; 2] = ["zone", "kubernetes.io/hostname"];

fn spec() -> impl Strategy<Value = Spec> {
    let term = (0usize..3, 0usize..2).prop_map(|(a, k)| (APPS[a], KEYS[k]));
    (0usize..3, prop::option::weighted(0.3, term.clone()), prop::option::weighted(0.4, term))
        .prop_map(|(a, affinity, anti)| Spec { app: APPS[a], affinity, anti })
}

impl Spec {
    fn pod(&self, name: &str) -> Pod {
        let mut parts = Vec::new();
        if let Some((app, key)) = self.affinity {
            parts.push(format!(
                "podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}]}}",
                term(app, key)
            ));
        }
        if let Some((app, key)) = self.anti {
            parts.push(format!(
                "podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}]}}",
                term(app, key)
            ));
        }
        let affinity =
            if parts.is_empty() { String::new() } else { format!("{{{}}}", parts.join(", ")) };
        pod(name, self.app, &affinity)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(Spec),
    Schedule(u8),
    Delete(prop::sample::Index),
    Advance(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => spec().prop_map(Op::Add),
        4 => (1u8..4).prop_map(Op::Schedule),
        2 => any::<prop::sample::Index>().prop_map(Op::Delete),
        1 => (1u8..15).prop_map(Op::Advance),
    ]
}

/// The independent checker's view: node → (zone, hostname) labels.
fn label(node: usize, key: &str, zones: usize) -> String {
    if key == "zone" { format!("z{}", node % zones) } else { format!("n{node}") }
}

/// Whether `spec` may go to `node` beside the `placed` pods, by the rules
/// written out directly: its anti-affinity selects no pod in its domain,
/// no placed pod's anti-affinity selects it in theirs, and its affinity
/// selects some pod in its domain, or none anywhere while selecting itself.
fn allowed(spec: &Spec, node: usize, placed: &[(Spec, usize)], zones: usize) -> bool {
    for (other, at) in placed {
        if let Some((app, key)) = spec.anti
            && other.app == app
            && label(*at, key, zones) == label(node, key, zones)
        {
            return false;
        }
        if let Some((app, key)) = other.anti
            && spec.app == app
            && label(*at, key, zones) == label(node, key, zones)
        {
            return false;
        }
    }
    if let Some((app, key)) = spec.affinity {
        let in_domain = placed
            .iter()
            .any(|(o, at)| o.app == app && label(*at, key, zones) == label(node, key, zones));
        let anywhere = placed.iter().any(|(o, _)| o.app == app);
        return in_domain || (!anywhere && spec.app == app);
    }
    true
}

/// Runs a history; returns the decisions, checking every step.
fn run_history(
    nodes: usize,
    zones: usize,
    ops: &[Op],
    cache: bool,
) -> Result<Vec<(i64, String, Outcome)>, TestCaseError> {
    let mut s = scheduler();
    s.set_equivalence_cache(cache);
    for i in 0..nodes {
        s.apply_node(node(i, zones), t(0)).unwrap();
    }
    let mut now = 0i64;
    let mut specs: BTreeMap<String, Spec> = BTreeMap::new();
    let mut placed: BTreeMap<String, usize> = BTreeMap::new();
    let mut decisions = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        now += 1;
        match op {
            Op::Add(spec) => {
                let name = format!("p{n}");
                s.apply_pod(spec.pod(&name), t(now)).unwrap();
                specs.insert(format!("ns/{name}"), spec.clone());
            }
            Op::Advance(secs) => now += i64::from(*secs),
            Op::Delete(pick) => {
                if !placed.is_empty() {
                    let key = placed.keys().nth(pick.index(placed.len())).unwrap().clone();
                    placed.remove(&key);
                    s.remove_pod(&key, t(now));
                }
            }
            Op::Schedule(k) => {
                for _ in 0..*k {
                    let Some(r) = s.schedule_next(t(now)) else { break };
                    let spec = &specs[&r.pod];
                    let others: Vec<(Spec, usize)> =
                        placed.iter().map(|(k, at)| (specs[k].clone(), *at)).collect();
                    match &r.outcome {
                        Outcome::Scheduled { node, .. } => {
                            let at: usize = node[1..].parse().unwrap();
                            prop_assert!(
                                allowed(spec, at, &others, zones),
                                "{} on {node}: {spec:?} beside {others:?}",
                                r.pod
                            );
                            placed.insert(r.pod.clone(), at);
                        }
                        Outcome::Unschedulable { message, .. } => {
                            // Nodes have room for every pod: only the terms
                            // can refuse, and only when no node is allowed.
                            let fits = (0..nodes).find(|&i| allowed(spec, i, &others, zones));
                            prop_assert!(
                                fits.is_none(),
                                "{}: {message}, but n{fits:?} is allowed: {spec:?} beside {others:?}",
                                r.pod
                            );
                        }
                        other => prop_assert!(false, "{other:?}"),
                    }
                    decisions.push((now, r.pod, r.outcome));
                }
            }
        }
        // No placed pod's anti-affinity selects another placed pod in its
        // domain (deletes and placements alike).
        let all: Vec<(&Spec, usize)> = placed.iter().map(|(k, at)| (&specs[k], *at)).collect();
        for (i, (p, at)) in all.iter().enumerate() {
            for (j, (q, other)) in all.iter().enumerate() {
                if let Some((app, key)) = p.anti
                    && i != j
                {
                    prop_assert!(
                        q.app != app || label(*at, key, zones) != label(*other, key, zones),
                        "{p:?} on n{at} and {q:?} on n{other}"
                    );
                }
            }
        }
    }
    Ok(decisions)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every placement satisfies the pod's required terms and every other
    /// placed pod's anti-affinity; a pod is refused only when the checker
    /// finds no allowed node either.
    #[test]
    fn placements_keep_required_terms(
        nodes in 2usize..7,
        zones in 1usize..4,
        ops in prop::collection::vec(op(), 1..50),
    ) {
        run_history(nodes, zones, &ops, true)?;
    }

    /// The equivalence cache (it serves pods InterPodAffinity trivially
    /// passes) never changes a decision.
    #[test]
    fn equivalence_cache_never_changes_a_decision_with_affinity(
        nodes in 2usize..7,
        zones in 1usize..4,
        ops in prop::collection::vec(op(), 1..50),
    ) {
        prop_assert_eq!(run_history(nodes, zones, &ops, true)?, run_history(nodes, zones, &ops, false)?);
    }
}
