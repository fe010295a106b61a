//! The engine: advances simulated time step by step, running the real
//! decision code around the simulated world.
//!
//! A step of `stepSeconds` (default 10 s) has two sides that run at the
//! same time, on different threads, because neither reads what the other
//! writes during the step:
//!
//! * **the cluster side** (the control plane, sequential):
//!   1. what the nodes reported at the end of the previous step reaches the
//!      scheduler: pods that completed, were OOM-killed or evicted leave its
//!      cache; every `reportIntervalSeconds` the nodes' NodeMetrics reach
//!      its load-aware plugin, then the Nodes whose batch allocatable the
//!      manager changed;
//!   2. batch pods that arrived are handed to the scheduler, at most
//!      `pendingPodsPerNode` × nodes of each CPU size waiting there at a
//!      time (the rest wait in the job controller's queue of their size, so
//!      pods too big for any node do not hold back smaller ones); LS pods
//!      are all created at the start;
//!   3. the scheduler (`kolo_scheduler::Scheduler`, the policy's profile and
//!      plugins) runs until idle;
//! * **the node side** (every node in parallel, [`crate::node`]): demands,
//!   contention, BE progress, memory, OOM kills; pods that completed or were
//!   killed leave the node; every `agentIntervalSeconds` the node's agent
//!   runs the QoS strategies ([`crate::agent`]: BE CPU cap, evictions);
//!   every `reportIntervalSeconds` the node reports its NodeMetric and the
//!   manager's pass decides for it ([`crate::manager`]): a batch allocatable
//!   change the throttle lets through updates the node's Node object, a
//!   NodeSLO change reaches its agent.
//!
//! Then the pods the scheduler bound start on their nodes (so a pod bound
//! in a step runs from the next one: the kubelet's start-up takes one step)
//! and the step's cluster totals are recorded.
//!
//! The scheduler therefore decides on the cluster as it was at the end of
//! the previous step; the node side never waits for it.
//!
//! The engine is a pure function of (scenario, workload, policy): no clock,
//! no I/O; nodes advance in parallel but every result is combined in node
//! order, so a seed gives the same numbers on any number of threads.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::SignedDuration;
use kolo_agent::qos::{PodStateError, Probe};
use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_manager::pass::Pass;
use kolo_scheduler::binder::{BindCompletion, BindRequest, Binder};
use kolo_scheduler::config::ConfigError;
use kolo_scheduler::framework::{PodInfo, SchedulingObject};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::profile::DefaultPlugin;
use kolo_scheduler::scheduler::{ApplyError, Scheduler};
use rayon::prelude::*;

use crate::agent::{self, AgentSide, pod_id, pod_uid};
use crate::descheduler::{self as desched, RoundInput, SimDescheduler};
use crate::jobs::{self, JobBook};
use crate::manager;
use crate::metrics::{HeatMap, Histogram, StepRecord, Summary, quantile};
use crate::node::{Exit, NodePod, NodeStep, SimNode, StepInputs, Work};
use crate::objects::{self, BATCH_NAMESPACE, LS_NAMESPACE, PodClass};
use crate::policy::Policy;
use crate::scenario::Scenario;
use crate::workload::{ClusterSize, Workload};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Simulated time starts here (a Monday, midnight UTC).
pub const START: &str = "2026-01-05T00:00:00Z";

/// Why a run could not proceed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The policy's scheduler configuration was refused.
    #[error("policy {policy}: scheduler: {source}")]
    Scheduler {
        /// The policy.
        policy: String,
        /// What is wrong.
        source: ConfigError,
    },
    /// The scheduler refused a simulated object.
    #[error("policy {policy}: the scheduler refused {source}")]
    Apply {
        /// The policy.
        policy: String,
        /// What it refused.
        source: Box<ApplyError>,
    },
    /// The policy's descheduler configuration was refused.
    #[error("policy {policy}: descheduler: {source}")]
    Descheduler {
        /// The policy.
        policy: String,
        /// What is wrong.
        source: kolo_descheduler::config::ConfigError,
    },
    /// The agent could not read a simulated pod.
    #[error("policy {policy}: the agent refused pod {pod}: {source}")]
    Agent {
        /// The policy.
        policy: String,
        /// The pod.
        pod: String,
        /// What is wrong.
        source: Box<PodStateError>,
    },
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The summary.
    pub summary: Summary,
    /// One record per step.
    pub steps: Vec<StepRecord>,
    /// Per-node utilization over time.
    pub heat: HeatMap,
}

/// Sizes of a node group's nodes.
fn node_resources(g: &crate::scenario::NodeGroup) -> (CpuMem, CpuMem) {
    let cpu = i64::from(g.cpu) * 1000;
    let memory = (g.memory_gib * GIB) as i64;
    let alloc_cpu = (cpu - (g.reserved_cpu * 1000.0).round() as i64).max(0);
    let alloc_memory = (memory - (g.reserved_memory_gib * GIB).round() as i64).max(0);
    (CpuMem::new(cpu, memory), CpuMem::new(alloc_cpu, alloc_memory))
}

/// The cluster's totals, for the workload generator.
pub fn cluster_size(scenario: &Scenario) -> ClusterSize {
    let (mut cap, mut alloc) = (0.0, 0.0);
    for g in &scenario.cluster.node_groups {
        let (c, a) = node_resources(g);
        cap += g.count as f64 * c.cpu as f64;
        alloc += g.count as f64 * a.cpu as f64;
    }
    ClusterSize { cpu_capacity: cap, cpu_allocatable: alloc }
}

/// CPU ids → (socket, core) the way Linux numbers them: first one thread
/// of every core, then the siblings.
pub fn topology(cpus: u32, sockets: u32, threads: u32) -> BTreeMap<u32, (u32, u32)> {
    let cores = (cpus / threads).max(1);
    let per_socket = (cores / sockets).max(1);
    (0..cpus)
        .map(|c| {
            let core = c % cores;
            (c, ((core / per_socket).min(sockets - 1), core))
        })
        .collect()
}

/// Collects bind requests; binds instantly.
#[derive(Debug, Default)]
struct SimBinder {
    requests: Mutex<Vec<BindRequest>>,
}

impl Binder for SimBinder {
    fn bind(&self, completion: BindCompletion) {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).push(completion.request().clone());
        completion.finish(Ok(()));
    }
}

impl SimBinder {
    fn drain(&self) -> Vec<BindRequest> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Where a pod is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Queued,
    Pending,
    Running,
    Completed,
    Evicted,
    OomKilled,
    /// Evicted by the descheduler's migration (its workload recreates it).
    Migrated,
}

/// A pod of the run.
#[derive(Debug, Clone)]
struct PodRecord {
    class: PodClass,
    /// Index into the workload's LS or batch list.
    source: usize,
    state: State,
    created: Timestamp,
}

/// The run's mutable state.
struct Run<'a> {
    scenario: &'a Scenario,
    workload: &'a Workload,
    policy: &'a Policy,
    scheduler: Scheduler,
    binder: Arc<SimBinder>,
    node_index: BTreeMap<String, usize>,
    pods: Vec<PodRecord>,
    /// LS pods not yet handed to the scheduler.
    ls_queue: VecDeque<usize>,
    /// Batch pods not yet handed to the scheduler, by CPU request.
    queues: BTreeMap<i64, VecDeque<usize>>,
    /// Batch pods waiting in the scheduler, by CPU request.
    in_scheduler: BTreeMap<i64, usize>,
    start: Timestamp,
    // counters
    submitted: u64,
    completed: u64,
    evicted: u64,
    oom_killed: u64,
    ls_evicted: u64,
    completed_work: f64,
    job_left: Vec<u32>,
    jobs_completed: u64,
    allocatable_updates: u64,
    /// Tenants' use and gangs' waits.
    book: JobBook,
    /// The descheduler, when the policy runs one.
    descheduler: Option<SimDescheduler>,
    /// With a descheduler: every bound pod, by engine id, with its node's
    /// index (what a descheduler round reads).
    bound: HashMap<u32, (usize, Arc<PodInfo>)>,
    /// With a descheduler: pods per LS service and per batch job (the
    /// workloads' replicas).
    replicas: (Vec<u32>, Vec<u32>),
}

fn at(start: Timestamp, seconds: f64) -> Timestamp {
    start
        .checked_add(SignedDuration::from_millis((seconds * 1000.0).round() as i64))
        .unwrap_or(start)
}

/// The parts of a step, announced to the observer as they begin and end
/// (so the caller can time them without the engine reading a clock).
/// [`Phase::Publish`] and [`Phase::Schedule`] (the cluster side) run at the
/// same time as [`Phase::Nodes`] (the node side), on another thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// The previous step's node results reach the scheduler: pods that
    /// left, NodeMetric reports, updated Nodes.
    Publish,
    /// Arrivals and the scheduler.
    Schedule,
    /// The node model, the agents' QoS strategies, NodeMetric reports and
    /// the manager's pass, per node in parallel.
    Nodes,
    /// Bound pods start on their nodes.
    Start,
    /// Recording the step.
    Record,
    /// The descheduler's round and migration pass (policies with a
    /// descheduler), after the bound pods started.
    Deschedule,
}

/// What a run tells its observer. Phase events come from the thread that
/// runs the phase, so the observer is shared (`Sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A phase of the current step begins.
    Begin(Phase),
    /// A phase of the current step ends.
    End(Phase),
    /// Step `step` of `steps` is done.
    Step {
        /// Steps done.
        step: u64,
        /// Steps in the run.
        steps: u64,
    },
}

/// Runs `f` as `phase`, telling `observe` when it begins and ends.
fn phase<T>(observe: &(dyn Fn(Event) + Sync), phase: Phase, f: impl FnOnce() -> T) -> T {
    observe(Event::Begin(phase));
    let out = f();
    observe(Event::End(phase));
    out
}

/// A pod the scheduler bound, to start on its node.
struct Start {
    /// The node's index.
    node: usize,
    /// The pod as the node model runs it.
    pod: NodePod,
    /// The bound Pod, for the node's agent to read (co-location policies).
    object: Option<Arc<Pod>>,
}

/// What one node's side of a step produced, for the cluster side of the
/// next step.
#[derive(Debug)]
struct NodeOutcome {
    /// The node's totals over the step.
    step: NodeStep,
    /// Pods that left the node: engine id, pod key, how (completions and
    /// OOM kills first, then the agent's evictions).
    left: Vec<(u32, Arc<str>, State)>,
    /// The node's NodeMetric, on a report step (shared: the scheduler keeps
    /// it as it is).
    report: Option<Arc<NodeUsageReport>>,
    /// The node's Node object and its reading, when the manager changed
    /// its co-location resources (boxed: a step collects one outcome per
    /// node, and most have none). Read here, on the node's thread, rather
    /// than by the scheduler on the cluster's.
    updated: Option<Box<(Node, NodeView)>>,
}

/// The node side of a step: per node, in node order.
struct StepOutcome {
    /// The end of the step.
    now: Timestamp,
    /// One per node.
    nodes: Vec<NodeOutcome>,
}

/// The constants of a step's node side.
struct NodeLane<'a> {
    /// The policy's name (for errors).
    policy: &'a str,
    /// The nodes' cgroup paths.
    paths: &'a kolo_agent::cgroup::PodPaths,
    inputs: StepInputs,
    now: Timestamp,
    start: Timestamp,
    /// Whether the agents run their strategies this step.
    agent: bool,
    /// Whether the nodes report at all (only co-location kinds, with an
    /// agent); each node reports when its agent's report interval says
    /// ([`agent::report_due`]).
    report: bool,
    /// The scenario's report interval, seconds (until a spec is seen).
    report_interval: u64,
    /// The manager's pass (it decides for the nodes that have a manager).
    pass: &'a Pass,
}

/// Advances one node by a step (see the module docs for what that does).
fn advance_node(node: &mut SimNode, lane: &NodeLane) -> Result<NodeOutcome, EngineError> {
    agent::read_started(node, lane.paths).map_err(|(pod, source)| EngineError::Agent {
        policy: lane.policy.to_string(),
        pod,
        source: Box::new(source),
    })?;
    let step = node.step(&lane.inputs);
    let exits = std::mem::take(&mut node.exits);
    let mut left = Vec::with_capacity(exits.len());
    for &(id, exit) in &exits {
        let state = match exit {
            Exit::Completed => State::Completed,
            Exit::OomKilled => State::OomKilled,
        };
        if let Some(pod) = node.remove(id) {
            left.push((id, pod.view.shared_key().clone(), state));
        }
    }
    node.exits = exits;
    if lane.agent
        && let Some(round) = agent::round(node, lane.now, Probe::Slow)
    {
        for id in round.plan.evictions.iter().filter_map(|e| pod_id(&e.uid)) {
            if let Some(pod) = node.remove(id) {
                left.push((id, pod.view.shared_key().clone(), State::Evicted));
            }
        }
    }
    let (mut report, mut updated) = (None, None);
    if lane.report
        && let Some(interval) = agent::report_due(node, lane.inputs.t, lane.report_interval)
    {
        let r = manager::report(node, lane.pass, interval, lane.start, lane.now).map_err(|e| {
            EngineError::Apply {
                policy: lane.policy.to_string(),
                source: Box::new(ApplyError::from(e)),
            }
        })?;
        report = Some(r.metric);
        updated = r.updated;
    }
    Ok(NodeOutcome { step, left, report, updated })
}

/// Runs one policy over the workload, telling `observe` what it does.
pub fn run(
    scenario: &Scenario,
    workload: &Workload,
    policy: &Policy,
    observe: &(dyn Fn(Event) + Sync),
) -> Result<RunResult, EngineError> {
    // Outside `run`: the nodes read it while the cluster side changes `run`.
    let pass = Pass::new();
    let (mut run, mut nodes) = Run::new(scenario, workload, policy, &pass)?;
    let paths = agent::pod_paths();
    let steps = scenario.steps();
    let dt = scenario.step_seconds as f64;
    let model = &scenario.model;
    let mut records = Vec::with_capacity(steps as usize);
    let mut next_batch = 0;
    for ls in 0..workload.ls.len() {
        run.create(PodClass::Ls, ls, 0.0);
    }
    let mut previous: Option<StepOutcome> = None;
    for k in 1..=steps {
        let t = k as f64 * dt;
        let tick = |interval: u64| (t.round() as u64).is_multiple_of(interval);
        // Only co-location kinds (with an SLO) run agents and reports.
        let slo = policy.slo.as_ref();
        let lane = NodeLane {
            policy: &policy.name,
            paths: &paths,
            inputs: StepInputs {
                t,
                dt,
                isolation: policy.isolation,
                interference: model.interference,
                bucket: model.heatmap_bucket_minutes as f64 * 60.0,
            },
            now: at(run.start, t),
            start: run.start,
            agent: slo.is_some() && tick(model.agent_interval_seconds),
            // Without an agent (baseline kinds) nobody reports a NodeMetric.
            report: slo.is_some(),
            report_interval: model.report_interval_seconds,
            pass: &pass,
        };
        let cluster_side = || -> Result<Vec<Start>, EngineError> {
            if let Some(previous) = previous.take() {
                phase(observe, Phase::Publish, || run.publish(previous))?;
            }
            phase(observe, Phase::Schedule, || {
                while next_batch < workload.batch.len() && workload.batch[next_batch].arrival < t {
                    let class =
                        if policy.batch_resources() { PodClass::Batch } else { PodClass::Native };
                    run.create(class, next_batch, workload.batch[next_batch].arrival);
                    next_batch += 1;
                }
                run.submit_queued(t - dt)?;
                run.schedule(t - dt)
            })
        };
        let node_side = || {
            phase(observe, Phase::Nodes, || -> Result<StepOutcome, EngineError> {
                Ok(StepOutcome {
                    now: lane.now,
                    nodes: nodes
                        .par_iter_mut()
                        .map(|n| advance_node(n, &lane))
                        .collect::<Result<_, _>>()?,
                })
            })
        };
        let (started, outcome) = rayon::join(cluster_side, node_side);
        let (started, outcome) = (started?, outcome?);
        phase(observe, Phase::Start, || {
            for s in started {
                nodes[s.node].start(s.pod, s.object);
            }
        });
        if run.descheduler.is_some() {
            phase(observe, Phase::Deschedule, || run.deschedule(&mut nodes, t));
        }
        records.push(phase(observe, Phase::Record, || run.record(t, &nodes, &outcome)));
        run.account_tenants(&nodes);
        previous = Some(outcome);
        observe(Event::Step { step: k, steps });
    }
    if let Some(previous) = previous {
        run.account(&previous);
    }
    Ok(run.finish(&nodes, records))
}

/// The scheduler's default plugins without DefaultPreemption: the
/// simulator carries out binds only, not the evictions a preemption asks
/// for, so a nomination would hold its node's room for good.
fn sim_plugins() -> Vec<DefaultPlugin> {
    DEFAULT_PLUGINS
        .iter()
        .filter(|p| p.name != kolo_scheduler::plugins::default_preemption::plugin::NAME)
        .copied()
        .collect()
}

impl<'a> Run<'a> {
    fn new(
        scenario: &'a Scenario,
        workload: &'a Workload,
        policy: &'a Policy,
        pass: &Pass,
    ) -> Result<(Run<'a>, Vec<SimNode>), EngineError> {
        let start: Timestamp = START.parse().unwrap_or(Timestamp::UNIX_EPOCH);
        let binder = Arc::new(SimBinder::default());
        let mut scheduler =
            Scheduler::new(&policy.scheduler, &registry(), &sim_plugins(), binder.clone())
                .map_err(|source| EngineError::Scheduler { policy: policy.name.clone(), source })?;
        let paths = agent::pod_paths();
        let strategies = agent::strategies();
        let mut nodes = Vec::with_capacity(scenario.node_count());
        let model = &scenario.model;
        for g in &scenario.cluster.node_groups {
            let (capacity, allocatable) = node_resources(g);
            for i in 0..g.count {
                let name = format!("{}-{i:04}", g.name);
                let mut object = objects::node_object(
                    &name,
                    &g.labels,
                    capacity,
                    allocatable,
                    &kolo_manager::noderesource::ExtendedResources::NONE,
                    start,
                );
                let unreadable = |e| EngineError::Apply {
                    policy: policy.name.clone(),
                    source: Box::new(ApplyError::from(e)),
                };
                let view = NodeView::from_node(&object).map_err(unreadable)?;
                let mut node = SimNode::new(
                    name.clone(),
                    g.labels.clone(),
                    capacity,
                    allocatable,
                    topology(g.cpu, g.sockets, g.threads_per_core),
                    view,
                    (model.system_cpu * 1000.0, model.system_memory_gib * GIB),
                );
                if let Some(slo) = &policy.slo {
                    // The manager's pass on the new node creates its
                    // NodeMetric and NodeSLO (nothing to publish yet).
                    manager::configure(&mut node, slo);
                    let created =
                        manager::manage(&mut node, pass, None, start, start).map_err(unreadable)?;
                    if let Some(updated) = created.updated {
                        object = updated.0;
                    }
                    let specs = (
                        node.slo.as_deref().cloned().unwrap_or_default(),
                        node.metric_spec.as_deref().cloned(),
                    );
                    let until_spec = Duration::from_secs(model.report_interval_seconds);
                    let strategies = Arc::clone(&strategies);
                    node.agent =
                        Some(AgentSide::new(&node, specs, strategies, until_spec, &paths, start));
                }
                let windows = policy.aggregated_windows(&agent::reported_windows(&node));
                if !windows.is_empty() {
                    node.usage_history = Some(crate::usage_history::UsageHistory::new(
                        scenario.step_seconds,
                        &windows,
                    ));
                }
                scheduler.apply_node(object, start).map_err(|source| EngineError::Apply {
                    policy: policy.name.clone(),
                    source: Box::new(source),
                })?;
                nodes.push(node);
            }
        }
        let node_index = nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i)).collect();
        let class = if policy.batch_resources() { PodClass::Batch } else { PodClass::Native };
        for quota in jobs::quota_objects(&scenario.batch.tenants, class) {
            scheduler.apply_object(SchedulingObject::ElasticQuota(Arc::new(quota)), start);
        }
        let descheduler = match &policy.descheduler {
            Some(config) => Some(SimDescheduler::new(config.clone()).map_err(|source| {
                EngineError::Descheduler { policy: policy.name.clone(), source }
            })?),
            None => None,
        };
        let mut job_left = vec![0u32; workload.jobs as usize];
        for p in &workload.batch {
            job_left[p.job as usize] += 1;
        }
        let replicas = if policy.descheduler.is_some() {
            let services = workload.ls.iter().map(|p| p.service as usize + 1).max().unwrap_or(0);
            let mut per_service = vec![0u32; services];
            for p in &workload.ls {
                per_service[p.service as usize] += 1;
            }
            (per_service, job_left.clone())
        } else {
            (Vec::new(), Vec::new())
        };
        let run = Run {
            scenario,
            workload,
            policy,
            scheduler,
            binder,
            node_index,
            pods: Vec::new(),
            ls_queue: VecDeque::new(),
            queues: BTreeMap::new(),
            in_scheduler: BTreeMap::new(),
            start,
            submitted: 0,
            completed: 0,
            evicted: 0,
            oom_killed: 0,
            ls_evicted: 0,
            completed_work: 0.0,
            job_left,
            jobs_completed: 0,
            allocatable_updates: 0,
            book: JobBook::new(&scenario.batch),
            descheduler,
            bound: HashMap::new(),
            replicas,
        };
        Ok((run, nodes))
    }

    fn create(&mut self, class: PodClass, source: usize, at_seconds: f64) {
        let id = self.pods.len();
        self.pods.push(PodRecord {
            class,
            source,
            state: State::Queued,
            created: at(self.start, at_seconds),
        });
        if class != PodClass::Ls {
            self.submitted += 1;
        }
        match class {
            PodClass::Ls => self.ls_queue.push_back(id),
            _ => {
                let size = self.workload.batch[source].cpu_request;
                self.queues.entry(size).or_default().push_back(id);
            }
        }
    }

    /// The pod object of record `id` (pending).
    fn object(&self, id: usize) -> k8s_openapi::api::core::v1::Pod {
        let r = &self.pods[id];
        let uid = pod_uid(id as u32);
        let (namespace, name, cpu, memory) = match r.class {
            PodClass::Ls => {
                let p = &self.workload.ls[r.source];
                (LS_NAMESPACE, format!("svc-{}-{id}", p.service), p.cpu_request, p.memory_request)
            }
            PodClass::Batch | PodClass::Native => {
                let p = &self.workload.batch[r.source];
                (BATCH_NAMESPACE, format!("job-{}-{id}", p.job), p.cpu_request, p.memory_request)
            }
        };
        let mut pod = objects::pod_object(namespace, &name, &uid, r.class, cpu, memory, r.created);
        if r.class != PodClass::Ls {
            jobs::dress_batch_pod(&mut pod, &self.workload.batch[r.source], &self.scenario.batch);
        }
        if self.descheduler.is_some() {
            // The descheduler's evictor moves only pods a workload owns
            // (one recreates them).
            pod.metadata.owner_references = Some(vec![self.owner(id).reference()]);
        }
        pod
    }

    /// The workload that owns pod `id`: its LS service's ReplicaSet or its
    /// batch job's Job.
    fn owner(&self, id: usize) -> desched::Owner {
        let r = &self.pods[id];
        match r.class {
            PodClass::Ls => {
                let service = self.workload.ls[r.source].service;
                let replicas = self.replicas.0.get(service as usize).copied().unwrap_or(0);
                desched::Owner::service(service, replicas)
            }
            PodClass::Batch | PodClass::Native => {
                let job = self.workload.batch[r.source].job;
                desched::Owner::job(job, self.replicas.1.get(job as usize).copied().unwrap_or(0))
            }
        }
    }

    /// The descheduler's step at `t` seconds (see [`crate::descheduler`]):
    /// a round when due, a migration pass while jobs are active; the pods
    /// it evicts leave their nodes and are recreated by their workloads.
    fn deschedule(&mut self, nodes: &mut [SimNode], t: f64) {
        let Some(d) = self.descheduler.as_mut() else { return };
        let balance = d.due(t);
        if !balance && !d.has_active_jobs() {
            return;
        }
        let now = at(self.start, t);
        let mut ids: Vec<u32> = self.bound.keys().copied().collect();
        ids.sort_unstable();
        let mut workloads = BTreeMap::new();
        let pods = ids
            .iter()
            .map(|id| {
                let owner = self.owner(*id as usize);
                workloads.entry(owner.uid.clone()).or_insert_with(|| owner.workload());
                (*self.bound[id].1).clone()
            })
            .collect();
        let input = RoundInput {
            nodes: nodes.iter().map(|n| n.view.clone()).collect(),
            pods,
            workloads: workloads.into_values().collect(),
            balance,
        };
        let Some(d) = self.descheduler.as_mut() else { return };
        let evictions = d.round(input, now);
        for pod in evictions {
            let Some(id) = pod_id(&pod.uid) else { continue };
            let Some(&(n, _)) = self.bound.get(&id) else { continue };
            if let Some(gone) = nodes[n].remove(id) {
                let key = gone.view.shared_key().clone();
                self.leave(id, &key, State::Migrated, now);
            }
        }
    }

    /// Hands queued pods to the scheduler at `t` seconds.
    fn submit_queued(&mut self, t: f64) -> Result<(), EngineError> {
        let cap = self.scenario.max_pending_pods();
        let mut ready: Vec<usize> = self.ls_queue.drain(..).collect();
        let gangs = self.scenario.batch.gangs;
        let (pods, batch) = (&self.pods, &self.workload.batch);
        let job_of = |id: usize| batch[pods[id].source].job;
        for (size, queue) in &mut self.queues {
            let waiting = self.in_scheduler.entry(*size).or_default();
            while *waiting < cap {
                let Some(id) = queue.pop_front() else { break };
                *waiting += 1;
                ready.push(id);
                // A gang's pods reach the scheduler together (a job
                // controller holding some back would leave it waiting for
                // members that never come).
                while gangs && queue.front().is_some_and(|&next| job_of(next) == job_of(id)) {
                    ready.extend(queue.pop_front());
                    *waiting += 1;
                }
            }
        }
        for &id in &ready {
            if self.pods[id].class != PodClass::Ls {
                self.book.submitted(&self.workload.batch[self.pods[id].source], t);
            }
        }
        for id in ready {
            let pod = self.object(id);
            self.scheduler.apply_pod(pod, self.pods[id].created.max(self.start)).map_err(
                |source| EngineError::Apply {
                    policy: self.policy.name.clone(),
                    source: Box::new(source),
                },
            )?;
            self.pods[id].state = State::Pending;
        }
        Ok(())
    }

    /// Runs the scheduler until idle at `t`; returns the pods it bound.
    fn schedule(&mut self, t: f64) -> Result<Vec<Start>, EngineError> {
        let now = at(self.start, t);
        self.scheduler.run_until_idle(now);
        let requests = self.binder.drain();
        let mut started = Vec::with_capacity(requests.len());
        for req in requests {
            let (Some(id), Some(&n)) = (pod_id(&req.uid), self.node_index.get(&req.node)) else {
                continue;
            };
            let id = id as usize;
            // Read once: the scheduler's informer copy and the node model's
            // view are the same reading of the bound pod.
            let info = match self.scheduler.cache().pod(&req.pod) {
                // The pod the scheduler assumed, as the API shows it once
                // bound, without building and parsing it again.
                Some(assumed) => objects::bound_info(&assumed.info, &req.node),
                None => {
                    let mut bound = self.object(id);
                    objects::bind(&mut bound, &req.node);
                    PodInfo::new(bound).map_err(|e| EngineError::Apply {
                        policy: self.policy.name.clone(),
                        source: Box::new(ApplyError::from(e)),
                    })?
                }
            };
            let view = Box::new(info.view().clone());
            // Every node of a co-location policy has an agent (Run::new).
            let object = self.policy.slo.as_ref().map(|_| info.pod_arc().clone());
            let info = Arc::new(info);
            if self.descheduler.is_some() {
                self.bound.insert(id as u32, (n, Arc::new(desched::started(&info))));
            }
            self.scheduler.apply_pod_info(info, now);
            let r = &mut self.pods[id];
            r.state = State::Running;
            let work = match r.class {
                PodClass::Ls => {
                    let p = &self.workload.ls[r.source];
                    Work::Ls {
                        curve: p.curve,
                        memory: p.memory_usage,
                        memory_amplitude: p.memory_amplitude,
                    }
                }
                PodClass::Batch | PodClass::Native => {
                    let p = &self.workload.batch[r.source];
                    if let Some(waiting) = self.in_scheduler.get_mut(&p.cpu_request) {
                        *waiting = waiting.saturating_sub(1);
                    }
                    self.book.bound(p, t);
                    Work::Be { demand: p.demand, left: p.work, memory: p.memory_usage }
                }
            };
            let cpu_request = match r.class {
                PodClass::Ls => self.workload.ls[r.source].cpu_request,
                _ => self.workload.batch[r.source].cpu_request,
            } as f64;
            let pod = NodePod::new(id as u32, view, cpu_request, work);
            started.push(Start { node: n, pod, object });
        }
        Ok(started)
    }

    /// Hands a step's node results to the scheduler: the pods that left
    /// (and the run's counts of them), then the NodeMetric reports, then
    /// the updated Nodes — the order the real components' updates reach it.
    fn publish(&mut self, outcome: StepOutcome) -> Result<(), EngineError> {
        self.account(&outcome);
        let now = outcome.now;
        let mut reports = Vec::new();
        let mut updated = Vec::new();
        for o in outcome.nodes {
            reports.extend(o.report);
            updated.extend(o.updated.map(|n| *n));
        }
        if let Some(d) = self.descheduler.as_mut() {
            for report in &reports {
                d.report(report);
            }
        }
        if !reports.is_empty() {
            self.scheduler.apply_usage_reports(reports, now);
        }
        for (object, view) in updated {
            self.allocatable_updates += 1;
            self.scheduler.apply_node_view(Arc::new(object), view, now);
        }
        Ok(())
    }

    /// Takes the pods that left their nodes in a step out of the
    /// scheduler's cache and counts them: completions and OOM kills of all
    /// nodes first, then evictions (the order the node side found them).
    fn account(&mut self, outcome: &StepOutcome) {
        for evictions in [false, true] {
            for o in &outcome.nodes {
                for (id, key, state) in &o.left {
                    if (*state == State::Evicted) == evictions {
                        self.leave(*id, key, *state, outcome.now);
                    }
                }
            }
        }
    }

    /// Pod `id` (key `key`) left its node (`state` says how).
    fn leave(&mut self, id: u32, key: &str, state: State, now: Timestamp) {
        self.scheduler.remove_pod(key, now);
        self.bound.remove(&id);
        let r = &mut self.pods[id as usize];
        r.state = state;
        let (class, source) = (r.class, r.source);
        if class != PodClass::Ls {
            self.book.left(&self.workload.batch[source]);
        }
        match (class, state) {
            (_, State::Migrated) => {
                // The workload (ReplicaSet, Job) recreates the pod pending;
                // a batch pod starts its work over.
                if class == PodClass::Ls
                    && let Some(d) = self.descheduler.as_mut()
                {
                    d.ls_disrupted();
                }
                let t = now.duration_since(self.start).as_secs_f64();
                self.create(class, source, t);
            }
            (PodClass::Ls, _) => self.ls_evicted += 1,
            (_, State::Completed) => {
                self.completed += 1;
                let p = &self.workload.batch[source];
                self.completed_work += p.work;
                let left = &mut self.job_left[p.job as usize];
                *left -= 1;
                if *left == 0 {
                    self.jobs_completed += 1;
                }
            }
            (_, State::Evicted | State::OomKilled) => {
                if state == State::Evicted {
                    self.evicted += 1;
                } else {
                    self.oom_killed += 1;
                }
                if self.scenario.batch.retry_evicted {
                    let t = now.duration_since(self.start).as_secs_f64();
                    self.create(class, source, t);
                }
            }
            _ => {}
        }
    }

    /// Accounts the step for the tenants' quotas: what their pods may
    /// request in all is the root quota's runtime — the batch resource the
    /// nodes publish under co-location; under baseline the nodes' CPU less
    /// what the LS pods (in the default quota) request.
    fn account_tenants(&mut self, nodes: &[SimNode]) {
        if self.scenario.batch.tenants.is_empty() {
            return;
        }
        let total = if self.policy.batch_resources() {
            nodes.iter().map(|n| n.extended.batch_cpu.unwrap_or(0)).sum::<i64>()
        } else {
            let ls: i64 = self.workload.ls.iter().map(|p| p.cpu_request).sum();
            nodes.iter().map(|n| n.allocatable.cpu).sum::<i64>() - ls
        };
        let dt = self.scenario.step_seconds as f64;
        self.book.step(dt, &self.scenario.batch.tenants, total.max(0));
    }

    fn record(&self, t: f64, nodes: &[SimNode], outcome: &StepOutcome) -> StepRecord {
        let mut r = StepRecord { hour: t / 3600.0, ..StepRecord::default() };
        let (mut cap, mut mem_cap, mut mem) = (0.0, 0.0, 0.0);
        for (n, o) in nodes.iter().zip(&outcome.nodes) {
            let s = &o.step;
            cap += n.capacity.cpu as f64;
            mem_cap += n.capacity.memory as f64;
            mem += s.memory;
            r.system_cpu += s.system;
            r.ls_cpu += s.ls;
            r.be_cpu += s.be;
            r.ls_demand += s.ls_demand;
            r.be_requested += s.be_requested;
            r.be_running += s.be_running;
            r.batch_allocatable += n.extended.batch_cpu.unwrap_or(0) as f64;
            let model = &self.scenario.model;
            let cpu = s.system + s.ls + s.be;
            if desched::is_hot(
                cpu,
                s.memory,
                n.allocatable,
                model.hot_cpu_percent,
                model.hot_memory_percent,
            ) {
                r.hot_nodes += 1;
            }
        }
        r.cpu_utilization = ((r.system_cpu + r.ls_cpu + r.be_cpu) / cap).clamp(0.0, 1.0);
        r.memory_utilization = (mem / mem_cap).clamp(0.0, 1.0);
        r.ls_starved = (r.ls_demand - r.ls_cpu).max(0.0);
        for v in [
            &mut r.system_cpu,
            &mut r.ls_cpu,
            &mut r.be_cpu,
            &mut r.ls_demand,
            &mut r.be_requested,
            &mut r.batch_allocatable,
            &mut r.ls_starved,
        ] {
            *v /= 1000.0;
        }
        r.be_pending = (self.in_scheduler.values().sum::<usize>()
            + self.queues.values().map(VecDeque::len).sum::<usize>()) as u64;
        let left = |state: State| {
            outcome.nodes.iter().flat_map(|o| &o.left).filter(|(.., s)| *s == state).count() as u64
        };
        r.evictions = left(State::Evicted);
        r.oom_kills = left(State::OomKilled);
        r
    }

    fn finish(self, nodes: &[SimNode], steps: Vec<StepRecord>) -> RunResult {
        let dt = self.scenario.step_seconds as f64;
        let utilization: Vec<f64> = steps.iter().map(|s| s.cpu_utilization).collect();
        let cap: f64 = nodes.iter().map(|n| n.capacity.cpu as f64 / 1000.0).sum();
        let mean = |f: &dyn Fn(&StepRecord) -> f64| {
            if steps.is_empty() {
                0.0
            } else {
                steps.iter().map(f).sum::<f64>() / steps.len() as f64
            }
        };
        let ls_demand: f64 = steps.iter().map(|s| s.ls_demand * dt).sum();
        let ls_starved: f64 = nodes.iter().map(|n| n.starved).sum::<f64>() / 1000.0;
        let mut latency = Histogram::default();
        for n in nodes {
            latency.merge(&n.latency);
        }
        let count = |class: Option<PodClass>, state: State| {
            self.pods
                .iter()
                .filter(|p| {
                    class.map_or(p.class != PodClass::Ls, |c| p.class == c) && p.state == state
                })
                .count() as u64
        };
        let be_pending = count(None, State::Queued) + count(None, State::Pending);
        let horizon = self.scenario.duration_hours * 3600.0;
        let bucket = self.scenario.model.heatmap_bucket_minutes as f64 * 60.0;
        let heat = HeatMap {
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            bucket_hours: bucket / 3600.0,
            rows: nodes
                .iter()
                .map(|n| {
                    n.heat
                        .iter()
                        .enumerate()
                        .map(|(b, v)| {
                            let width = (horizon - b as f64 * bucket).clamp(1e-9, bucket);
                            (*v as f64 / width).clamp(0.0, 1.0) as f32
                        })
                        .collect()
                })
                .collect(),
        };
        let summary = Summary {
            policy: self.policy.name.clone(),
            nodes: nodes.len(),
            hours: self.scenario.duration_hours,
            cpu_utilization_avg: mean(&|s| s.cpu_utilization),
            cpu_utilization_p95: quantile(&utilization, 0.95),
            ls_only_utilization_avg: mean(&|s| (s.ls_cpu + s.system_cpu) / cap),
            be_cpu_hours_completed: self.completed_work / 1000.0 / 3600.0,
            be_cpu_hours_used: steps.iter().map(|s| s.be_cpu * dt).sum::<f64>() / 3600.0,
            be_pods_submitted: self.submitted,
            be_pods_completed: self.completed,
            be_pods_evicted: self.evicted,
            be_pods_oom_killed: self.oom_killed,
            be_pods_running: count(None, State::Running),
            be_pods_pending: be_pending,
            be_jobs_completed: self.jobs_completed,
            ls_pods: self.workload.ls.len() as u64,
            ls_pods_pending: count(Some(PodClass::Ls), State::Queued)
                + count(Some(PodClass::Ls), State::Pending),
            ls_pods_evicted: self.ls_evicted,
            ls_demand_cpu_seconds: ls_demand,
            ls_starved_cpu_seconds: ls_starved,
            ls_starved_share: if ls_demand > 0.0 { ls_starved / ls_demand } else { 0.0 },
            ls_latency_proxy_p99: latency.quantile(0.99),
            scheduling_cycles: self.scheduler.stats().cycles,
            allocatable_updates: self.allocatable_updates,
            descheduler: desched::DeschedulerSummary {
                hot_node_minutes: steps.iter().map(|s| s.hot_nodes as f64).sum::<f64>() * dt / 60.0,
                ..self.descheduler.as_ref().map(SimDescheduler::summary).unwrap_or_default()
            },
            jobs: self.book.summary(
                &self.scenario.batch.tenants,
                horizon,
                self.scheduler.waiting_pods().count(),
            ),
        };
        RunResult { summary, steps, heat }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topology_cases() {
        // 8 CPUs, 2 sockets, 2 threads: cores 0-3, cpu 4 is core 0's sibling.
        let t = topology(8, 2, 2);
        assert_eq!(t[&0], (0, 0));
        assert_eq!(t[&3], (1, 3));
        assert_eq!(t[&4], (0, 0));
        assert_eq!(t[&7], (1, 3));
        assert_eq!(topology(4, 1, 1).len(), 4);
    }
}
