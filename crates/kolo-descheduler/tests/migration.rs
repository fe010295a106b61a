//! The migration controller over random clusters, driven by a tiny store
//! that applies its actions at once (jobs, reservations, evictions), for
//! 40 passes with the clock advancing by random steps. Properties:
//!
//! 1. the arbitration limits hold after every pass: pods on a node with a
//!    Running job ≤ maxMigratingPerNode, pods of a namespace ≤
//!    maxMigratingPerNamespace, all ≤ maxMigratingGlobally, pods of a
//!    workload ≤ max(1, its maxMigrating);
//! 2. a pod the evictor filter forbids never gets a job (the evictor
//!    refuses it), its job never becomes Running and it is never evicted;
//! 3. evictions never outrun the token bucket: in every window [a, b]
//!    between two evictions, at most burst + qps × (b − a) of them;
//! 4. a refused eviction fails its job with `FailedEvict` on the next pass.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kolo_api::crd::{PodMigrationJob, Reservation};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_descheduler::evictor::{EvictionRequest, Evictor};
use kolo_descheduler::migration::args::max_per_workload;
use kolo_descheduler::migration::{MigrationController, MigrationControllerArgs};
use kolo_descheduler::{Action, Cluster, Workload};
use kolo_scheduler::framework::PodInfo;
use kube::ResourceExt;
use proptest::prelude::*;
use serde_json::json;

const NODES: usize = 4;

/// One generated pod.
#[derive(Debug, Clone)]
struct PodSpec {
    namespace: u8,
    node: u8,
    /// 0..3: ReplicaSet w0..w2; 3: DaemonSet; 4: bare.
    owner: u8,
    ready: bool,
    lse: bool,
    empty_dir: bool,
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        0u8..3,
        0u8..NODES as u8,
        0u8..5,
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(namespace, node, owner, ready, lse, empty_dir)| PodSpec {
            namespace,
            node,
            owner,
            ready,
            lse,
            empty_dir,
        })
}

fn build_pod(i: usize, p: &PodSpec) -> PodInfo {
    let owners = match p.owner {
        w @ 0..=2 => {
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("w{w}"), "uid": format!("w{w}"), "controller": true}])
        }
        3 => {
            json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds", "controller": true}])
        }
        _ => json!([]),
    };
    let mut v = json!({
        "metadata": {"namespace": format!("ns{}", p.namespace), "name": format!("p{i}"), "uid": format!("uid-{i}"),
            "ownerReferences": owners,
            "labels": {"koordinator.sh/qosClass": if p.lse { "LSE" } else { "LS" }}},
        "spec": {"containers": [{"name": "c"}], "nodeName": format!("n{}", p.node), "schedulerName": "koord-scheduler"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if p.ready { "True" } else { "False" }}]}
    });
    if p.empty_dir {
        v["spec"]["volumes"] = json!([{"name": "scratch", "emptyDir": {}}]);
    }
    PodInfo::new(serde_json::from_value::<Pod>(v).unwrap()).unwrap()
}

/// A store the test applies the controller's actions to.
struct Store {
    pods: BTreeMap<String, PodInfo>,
    jobs: BTreeMap<String, PodMigrationJob>,
    reservations: BTreeMap<String, Reservation>,
    workloads: Vec<Workload>,
}

impl Store {
    fn cluster(&self) -> Cluster {
        let nodes = (0..NODES).map(|n| NodeView::new(&format!("n{n}"))).collect();
        Cluster::new(nodes, self.pods.values().cloned().collect(), [])
            .with_jobs(self.jobs.values().cloned().map(Arc::new))
            .with_reservations(self.reservations.values().cloned().map(Arc::new))
            .with_workloads(self.workloads.clone())
    }

    /// Applies `actions`; evictions of pods in `refuse` are refused (and
    /// reported). Returns the evicted pod keys and the refused jobs.
    fn apply(
        &mut self,
        actions: &[Action],
        refuse: &HashSet<String>,
        ctl: &mut MigrationController,
        now: Timestamp,
    ) -> (Vec<String>, Vec<String>) {
        let (mut evicted, mut refused) = (Vec::new(), Vec::new());
        for a in actions {
            match a {
                Action::CreateJob(j) => {
                    self.jobs.insert(j.name_any(), (**j).clone());
                }
                Action::SetJobSpec { job, spec } => {
                    if let Some(j) = self.jobs.get_mut(job) {
                        j.spec = (**spec).clone();
                    }
                }
                Action::SetJobStatus { job, status } => {
                    if let Some(j) = self.jobs.get_mut(job) {
                        j.status = Some((**status).clone());
                    }
                }
                Action::DeleteJob { job } => {
                    self.jobs.remove(job);
                }
                Action::CreateReservation(r) => {
                    // The scheduler places it on the next node at once.
                    let mut r = (**r).clone();
                    let pod_node =
                        r.spec.template.as_ref().and_then(|t| t.spec.as_ref()).and_then(|s| {
                            s.affinity
                                .as_ref()?
                                .node_affinity
                                .as_ref()?
                                .required_during_scheduling_ignored_during_execution
                                .as_ref()?
                                .node_selector_terms
                                .first()?
                                .match_fields
                                .as_ref()?
                                .last()?
                                .values
                                .as_ref()?
                                .first()
                                .cloned()
                        });
                    let n: usize = pod_node.and_then(|n| n[1..].parse().ok()).unwrap_or(0);
                    r.status = Some(serde_json::from_value(json!({"phase": "Available", "nodeName": format!("n{}", (n + 1) % NODES)})).unwrap());
                    self.reservations.insert(r.name_any(), r);
                }
                Action::DeleteReservation { name } => {
                    self.reservations.remove(name);
                }
                Action::Evict { pod, job, .. } => {
                    let key = format!("{}/{}", pod.namespace, pod.name);
                    let job = job.clone().unwrap_or_default();
                    if refuse.contains(&key) {
                        ctl.eviction_result(
                            &job,
                            Err(
                                "Cannot evict pod as it would violate the pod's disruption budget."
                                    .into(),
                            ),
                            now,
                        );
                        refused.push(job);
                    } else {
                        ctl.eviction_result(&job, Ok(()), now);
                        self.pods.remove(&key);
                        evicted.push(key);
                    }
                }
                Action::Event(_) => {}
            }
        }
        (evicted, refused)
    }
}

fn running_pods(store: &Store) -> HashSet<(String, String)> {
    store
        .jobs
        .values()
        .filter(|j| j.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter_map(|j| {
            let r = j.spec.pod_ref.as_ref()?;
            Some((r.namespace.clone()?, r.name.clone()?))
        })
        .collect()
}

/// Checks property 1 on the store.
fn check_limits(store: &Store, args: &MigrationControllerArgs) -> Result<(), TestCaseError> {
    let running = running_pods(store);
    let cap = |v: Option<i32>| v.filter(|n| *n > 0).map(|n| n as usize);
    if let Some(max) = cap(args.max_migrating_globally) {
        prop_assert!(running.len() <= max, "global {} > {max}", running.len());
    }
    let mut per_ns: HashMap<&str, usize> = HashMap::new();
    let mut per_node: HashMap<&str, usize> = HashMap::new();
    let mut per_workload: HashMap<String, usize> = HashMap::new();
    for (ns, name) in &running {
        *per_ns.entry(ns).or_default() += 1;
        if let Some(p) = store.pods.get(&format!("{ns}/{name}")) {
            *per_node.entry(p.view().node_name().unwrap_or_default()).or_default() += 1;
            if let Some(o) = p.view().owner().filter(|o| o.controller) {
                *per_workload.entry(o.uid.to_string()).or_default() += 1;
            }
        }
    }
    if let Some(max) = cap(args.max_migrating_per_namespace) {
        prop_assert!(per_ns.values().all(|n| *n <= max), "namespace {per_ns:?} > {max}");
    }
    if let Some(max) = cap(args.max_migrating_per_node) {
        prop_assert!(per_node.values().all(|n| *n <= max), "node {per_node:?} > {max}");
    }
    for (uid, n) in &per_workload {
        if let Some(replicas) =
            store.workloads.iter().find(|w| &w.uid == uid).and_then(|w| w.replicas)
        {
            let max = max_per_workload(replicas, args.max_migrating_per_workload.as_ref()).max(1)
                as usize;
            prop_assert!(*n <= max, "workload {uid}: {n} > {max}");
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Scenario {
    pods: Vec<PodSpec>,
    replicas: Vec<Option<i32>>,
    per_node: i32,
    per_namespace: i32,
    globally: i32,
    qps: f64,
    burst: i32,
    direct: bool,
    arbitration: bool,
    /// Per pass: the clock step (ms) and which pods (by index) Balance asks to evict.
    passes: Vec<(u32, Vec<usize>)>,
    refuse: Vec<usize>,
}

/// Random scenarios: `pods` strategy, limits up to `limit` (0: none),
/// clock steps up to `step_ms`.
fn scenario(
    pods: impl Strategy<Value = PodSpec>,
    limit: i32,
    step_ms: u32,
) -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(pods, 1..30),
        prop::collection::vec(prop::option::of(1i32..14), 3),
        (0..=limit, 0..=limit, 0..=limit + 2),
        (prop::sample::select(vec![0.5, 1.0, 2.0, 10.0]), 1i32..4, any::<bool>(), any::<bool>()),
        prop::collection::vec((0..step_ms, prop::collection::vec(0usize..30, 0..8)), 40),
        prop::collection::vec(0usize..30, 0..4),
    )
        .prop_map(
            |(
                pods,
                replicas,
                (per_node, per_namespace, globally),
                (qps, burst, direct, arbitration),
                passes,
                refuse,
            )| Scenario {
                pods,
                replicas,
                per_node,
                per_namespace,
                globally,
                qps,
                burst,
                direct,
                arbitration,
                passes,
                refuse,
            },
        )
}

fn args_of(s: &Scenario) -> MigrationControllerArgs {
    MigrationControllerArgs::from_value(json!({
        "maxMigratingPerNode": s.per_node,
        "maxMigratingPerNamespace": s.per_namespace,
        "maxMigratingGlobally": s.globally,
        "evictQPS": s.qps,
        "evictBurst": s.burst,
        "defaultJobMode": if s.direct { "EvictDirectly" } else { "ReservationFirst" },
        "arbitrationArgs": {"enabled": s.arbitration},
        "skipCheckExpectedReplicas": true
    }))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Mixed pods (some forbidden), small limits, steps up to 3 s.
    #[test]
    fn limits_filter_and_rate_hold_over_random_runs(s in scenario(pod_spec(), 3, 3000)) {
        run(&s)?;
    }

    /// Every pod evictable, no limits, steps up to 400 ms: the token
    /// bucket is what holds evictions back.
    #[test]
    fn evictions_never_outrun_the_token_bucket(s in scenario(evictable_pod_spec(), 0, 400)) {
        run(&s)?;
    }
}

fn evictable_pod_spec() -> impl Strategy<Value = PodSpec> {
    (0u8..3, 0u8..NODES as u8, 0u8..3).prop_map(|(namespace, node, owner)| PodSpec {
        namespace,
        node,
        owner,
        ready: true,
        lse: false,
        empty_dir: false,
    })
}

/// Runs scenario `s`, checking the properties; returns the number of
/// evictions (what the runs exercise is measured in the crate's report).
fn run(s: &Scenario) -> Result<usize, TestCaseError> {
    {
        let args = args_of(s);
        let mut ctl = MigrationController::new(args.clone()).unwrap();
        let filter = args.filter().unwrap();
        let pods: Vec<PodInfo> = s.pods.iter().enumerate().map(|(i, p)| build_pod(i, p)).collect();
        let forbidden: HashSet<String> =
            pods.iter().filter(|p| filter.check(p).is_err()).map(|p| p.key().to_string()).collect();
        let refuse: HashSet<String> =
            s.refuse.iter().filter_map(|i| pods.get(*i)).map(|p| p.key().to_string()).collect();
        let workloads = s
            .replicas
            .iter()
            .enumerate()
            .map(|(w, r)| Workload {
                kind: "ReplicaSet".into(),
                namespace: "ns0".into(),
                name: format!("w{w}"),
                uid: format!("w{w}"),
                replicas: *r,
            })
            .collect();
        let mut store = Store {
            pods: pods.iter().map(|p| (p.key().to_string(), p.clone())).collect(),
            jobs: BTreeMap::new(),
            reservations: BTreeMap::new(),
            workloads,
        };
        let mut now_ms: i64 = 1_800_000_000_000;
        let mut evictions: Vec<i64> = Vec::new();
        let mut refused_before: Vec<String> = Vec::new();
        for (step, asks) in &s.passes {
            now_ms += i64::from(*step);
            let now = Timestamp::from_millisecond(now_ms).unwrap();
            let cluster = store.cluster();
            // Balance asks for evictions.
            let mut ev = ctl.evictor(&cluster, now, "Test");
            for i in asks {
                let Some(pod) = pods.get(*i).and_then(|p| cluster.pod(p.key())) else { continue };
                let request = EvictionRequest {
                    pod: pod.view().pod_ref(),
                    node: String::new(),
                    plugin: "LowNodeLoad",
                    reason: "test".into(),
                };
                let result = ev.evict(pod, request);
                if forbidden.contains(pod.key()) {
                    prop_assert!(result.is_err(), "forbidden pod {} got a job", pod.key());
                }
            }
            let created = ev.into_actions();
            store.apply(&created, &refuse, &mut ctl, now);
            // The controller's pass.
            let cluster = store.cluster();
            let before: HashMap<String, String> = store
                .jobs
                .iter()
                .map(|(n, j)| {
                    (n.clone(), j.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default())
                })
                .collect();
            let actions = ctl.reconcile(&cluster, now);
            for a in &actions {
                match a {
                    Action::Evict { pod, .. } => {
                        prop_assert!(
                            !forbidden.contains(&format!("{}/{}", pod.namespace, pod.name)),
                            "forbidden pod evicted"
                        );
                        evictions.push(now_ms);
                    }
                    Action::SetJobStatus { job, status }
                        if status.phase.as_deref() == Some("Running")
                            && before.get(job).map(String::as_str) == Some("Pending") =>
                    {
                        let j = &store.jobs[job];
                        let r = j.spec.pod_ref.as_ref().unwrap();
                        let key = format!(
                            "{}/{}",
                            r.namespace.as_deref().unwrap_or(""),
                            r.name.as_deref().unwrap_or("")
                        );
                        prop_assert!(!forbidden.contains(&key), "forbidden pod's job started");
                    }
                    _ => {}
                }
            }
            // Jobs refused on the previous pass failed with FailedEvict.
            for job in refused_before.drain(..) {
                if let Some(j) = store.jobs.get(&job) {
                    let st = status_after(&actions, &job).or(j.status.clone());
                    prop_assert_eq!(
                        st.and_then(|s| s.reason),
                        Some("FailedEvict".to_string()),
                        "job {}",
                        job
                    );
                }
            }
            let (_, refused) = store.apply(&actions, &refuse, &mut ctl, now);
            refused_before = refused;
            check_limits(&store, &args)?;
        }
        // Property 3: no window holds more than burst + qps × its length.
        for (a, &start) in evictions.iter().enumerate() {
            for (b, &end) in evictions.iter().enumerate().skip(a) {
                let allowed = f64::from(s.burst) + s.qps * (end - start) as f64 / 1000.0 + 1e-9;
                prop_assert!(
                    ((b - a + 1) as f64) <= allowed,
                    "{} evictions in {} ms (qps {}, burst {})",
                    b - a + 1,
                    end - start,
                    s.qps,
                    s.burst
                );
            }
        }
        Ok(evictions.len())
    }
}

fn status_after(actions: &[Action], job: &str) -> Option<kolo_api::crd::PodMigrationJobStatus> {
    actions.iter().rev().find_map(|a| match a {
        Action::SetJobStatus { job: j, status } if j == job => Some((**status).clone()),
        _ => None,
    })
}
