//! The agent's act side in the simulator: the node as the QoS strategies
//! see it ([`NodeState`]), one round of the agent's own loop
//! ([`QosLoop::round`]: rate limit and cool-downs included), and the
//! plan's effects on the simulated node — the BE group's cpuset or CFS
//! quota becomes the BE CPU cap of the contention model; evictions remove
//! pods (and always succeed: the loop hears so).
//!
//! The loop follows the node's NodeSLO and NodeMetric spec; the spec's
//! report interval is when the node reports ([`report_due`]) and its
//! aggregation durations are the windows its reports carry.
//!
//! Only the strategies whose effects the node model represents run:
//! `cpuSuppress`, `cpuEvict` and `memoryEvict`. The isolation the others
//! configure (BE `cpu.idle`, per-pod limits, memory QoS, CPU burst) is what
//! the contention model assumes ([`crate::contention::Isolation::Idle`]).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kolo_agent::agent_pod::AgentPod;
use kolo_agent::cgroup::{CgroupDir, CgroupDriver, CgroupVersion, PodPaths, Resource, Value};
use kolo_agent::qos::{
    BeGroupState, EvictionHistory, Features, NodeState, PlannedWrite, PodState, PodStateError,
    Probe, QosLoop, RoundPlan, Strategy, cpu_evict, cpu_suppress, default_strategies, memory_evict,
};
use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::CpuMem;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceVector;

use crate::node::SimNode;

/// The strategies the simulator runs (see the module docs).
pub const SIMULATED_STRATEGIES: [&str; 3] =
    [cpu_suppress::NAME, cpu_evict::NAME, memory_evict::NAME];

/// The agent's strategies the simulator runs, from the agent's own list
/// (one list, shared by every node's loop).
pub fn strategies() -> Arc<[Box<dyn Strategy>]> {
    default_strategies().into_iter().filter(|s| SIMULATED_STRATEGIES.contains(&s.name())).collect()
}

/// Cgroup paths of the simulated nodes (systemd driver, root hierarchy).
pub fn pod_paths() -> PodPaths {
    PodPaths::new(CgroupDriver::Systemd, &CgroupDir::root())
}

/// The UID of the engine's pod `id` (a UUID, as the cgroup layer wants).
pub fn pod_uid(id: u32) -> String {
    format!("00000000-0000-4000-8000-{id:012x}")
}

/// The engine's pod id in a UID made by [`pod_uid`].
pub fn pod_id(uid: &str) -> Option<u32> {
    u32::from_str_radix(uid.rsplit('-').next()?, 16).ok()
}

/// One node's agent.
#[derive(Debug, Clone)]
pub struct AgentSide {
    /// The node as the strategies see it (pods in the node's order).
    pub state: NodeState,
    /// The agent's loop, holding the node's NodeSLO and NodeMetric spec.
    pub qos: QosLoop,
    /// Pods started on the node whose state the agent has not read yet
    /// (in `SimNode::pods` order after the pods of `state`): they are read
    /// at the node's next step, with the other nodes in parallel, rather
    /// than on the scheduler's thread.
    pub started: Vec<Arc<Pod>>,
}

impl AgentSide {
    /// The agent of `node`, started at `now`, running `strategies` with
    /// the node's NodeSLO and NodeMetric spec (reporting every
    /// `report_interval` until it has one).
    pub fn new(
        node: &SimNode,
        specs: (NodeSLOSpec, Option<NodeMetricSpec>),
        strategies: Arc<[Box<dyn Strategy>]>,
        report_interval: Duration,
        paths: &PodPaths,
        now: Timestamp,
    ) -> AgentSide {
        let cpus = u32::try_from((node.capacity.cpu / 1000).max(1)).unwrap_or(1);
        let mut allocatable = *node.view.allocatable();
        node.extended.apply_to(&mut allocatable);
        let state = NodeState {
            now,
            capacity: node.capacity,
            allocatable,
            reserved: node.capacity - node.allocatable,
            usage: CpuMem::default(),
            be_cpus: CpuSet::from_range(0, cpus - 1),
            cpu_cores: node.cores.clone(),
            be_dir: paths.qos_dir(KubeQoSClass::BestEffort).clone(),
            // A new BE cgroup: every CPU, no quota (what a real node's
            // agent reads at start).
            be: BeGroupState {
                cpuset: Some(CpuSet::from_range(0, cpus - 1)),
                cfs_quota_us: Some(-1),
            },
            pods: Vec::new(),
            features: Features {
                cpu_idle: true,
                bvt_warp_ns: false,
                cfs_burst: true,
                memory_qos: true,
                // The contention model is CFS with cpu.idle (docs/sim.md).
                eevdf: false,
            },
            version: CgroupVersion::V2,
            // The loop's own history goes in at every round.
            evictions: EvictionHistory::default(),
            // The node model has no CFS quotas of LS containers nor a BE
            // usage history: cfsQuotaBurst and a windowed cpuEvict see none.
            cfs: Default::default(),
            be_usage_window: None,
            kubelet_down: false,
        };
        let mut qos = QosLoop::new(strategies, report_interval);
        qos.start(now);
        qos.set_node_slo(Some(specs.0));
        qos.set_node_metric_spec(specs.1);
        AgentSide { state, qos, started: Vec::new() }
    }
}

/// The windows of `aggregatedNodeUsages` `node` reports: its NodeMetric
/// spec's (the agent's defaults without an agent).
pub fn reported_windows(node: &SimNode) -> Vec<Duration> {
    match &node.agent {
        Some(a) => a.qos.collect_policy().durations.iter().map(|d| d.duration).collect(),
        None => crate::usage_history::agent_windows(),
    }
}

/// When `node` reports at `t` seconds into the run, the interval its
/// report covers, seconds: every `reportIntervalSeconds` of its NodeMetric
/// spec (at least 30 s), else every `default_seconds`.
pub fn report_due(node: &SimNode, t: f64, default_seconds: u64) -> Option<u64> {
    let interval = match &node.agent {
        Some(a) => a.qos.collect().report_interval.as_secs(),
        None => default_seconds,
    }
    .max(1);
    (t.round() as u64).is_multiple_of(interval).then_some(interval)
}

/// The strategies' view of a bound pod, already read as `view`. Without
/// its containers: the node model has no per-container cgroups, the
/// strategies the simulator runs read pod-level usage only, and their
/// writes to container cgroups would be dropped (only the BE QoS group's
/// cap is modelled).
pub fn pod_state(bound: &Pod, view: &PodView, paths: &PodPaths) -> Result<PodState, PodStateError> {
    PodState::pod_level(AgentPod::from_view(view, bound), bound, paths, None)
}

/// Reads the pods started since the node's last step into its agent's
/// state; on error, the pod that could not be read.
pub fn read_started(node: &mut SimNode, paths: &PodPaths) -> Result<(), (String, PodStateError)> {
    let Some(agent) = node.agent.as_mut() else { return Ok(()) };
    // The started pods are the node's last ones (`AgentSide::started`).
    let running = &node.pods[agent.state.pods.len()..];
    for (pod, running) in agent.started.drain(..).zip(running) {
        let state = pod_state(&pod, &running.view, paths)
            .map_err(|e| (running.view.key().to_string(), e))?;
        agent.state.pods.push(state);
    }
    Ok(())
}

/// Sets the node's allocatable (incl. co-location resources) in the agent's
/// view after the manager changed it.
pub fn refresh_allocatable(node: &mut SimNode) {
    let mut allocatable: ResourceVector = *node.view.allocatable();
    node.extended.apply_to(&mut allocatable);
    if let Some(agent) = node.agent.as_mut() {
        agent.state.allocatable = allocatable;
    }
}

/// One round of the agent on `node` at `now`: the last step's usage goes
/// in, the BE cap is updated from the plan's writes to the BE QoS group,
/// and the plan comes out (its evictions are for the engine to carry out:
/// the loop already counts them done). `None` without an agent.
pub fn round(node: &mut SimNode, now: Timestamp, probe: Probe) -> Option<RoundPlan> {
    let agent = node.agent.as_mut()?;
    let state = &mut agent.state;
    let mut memory = node.system_memory;
    for (p, s) in node.pods.iter().zip(state.pods.iter_mut()) {
        s.usage = Some(CpuMem::new(p.cpu.round() as i64, p.memory.round() as i64));
        memory += p.memory;
    }
    let used = node.last.system + node.last.ls + node.last.be;
    state.usage = CpuMem::new(used.round() as i64, memory.round() as i64);
    let round = agent.qos.round(state, now, probe);
    apply_be_writes(&mut state.be, &state.be_dir, &round.plan.writes);
    node.be_cap = be_cap(&state.be, &state.be_cpus);
    for e in &round.plan.evictions {
        agent.qos.eviction_done(e, now, true);
    }
    Some(round)
}

/// What `writes` do to the BE QoS group `be_dir`'s cpuset and CFS quota
/// (the only cgroup the node model has).
pub fn apply_be_writes(be: &mut BeGroupState, be_dir: &CgroupDir, writes: &[PlannedWrite]) {
    for w in writes.iter().filter(|w| &w.write.dir == be_dir) {
        match (w.write.resource, &w.write.value) {
            (Resource::CpusetCpus, Value::Cpuset(set)) => be.cpuset = Some(set.clone()),
            (Resource::CpuCfsQuota, Value::Int(q)) => be.cfs_quota_us = Some(*q),
            _ => {}
        }
    }
}

/// The CPU the BE group may use, milli: the cpuset's size, capped by the
/// CFS quota (per 100 ms period) when limited; `None` when neither limits.
pub fn be_cap(be: &BeGroupState, all: &CpuSet) -> Option<f64> {
    let by_cpuset =
        be.cpuset.as_ref().filter(|s| s.len() < all.len()).map(|s| s.len() as f64 * 1000.0);
    let by_quota = be.cfs_quota_us.filter(|q| *q > 0).map(|q| q as f64 / 100.0);
    match (by_cpuset, by_quota) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_round_trip() {
        for id in [0, 1, 4095, u32::MAX] {
            let uid = pod_uid(id);
            assert!(kolo_agent::cgroup::validate_pod_uid(&uid).is_ok(), "{uid}");
            assert_eq!(pod_id(&uid), Some(id));
        }
    }

    #[test]
    fn be_cap_cases() {
        let all = CpuSet::from_range(0, 7);
        // (cpuset, quota) → cap
        let cases = [
            (None, Some(-1), None),
            (Some(CpuSet::from_range(0, 7)), Some(-1), None),
            (Some(CpuSet::from_range(0, 2)), Some(-1), Some(3000.0)),
            (None, Some(250_000), Some(2500.0)),
            (Some(CpuSet::from_range(0, 1)), Some(250_000), Some(2000.0)),
        ];
        for (cpuset, quota, want) in cases {
            let be = BeGroupState { cpuset: cpuset.clone(), cfs_quota_us: quota };
            assert_eq!(be_cap(&be, &all), want, "{cpuset:?} {quota:?}");
        }
    }

    #[test]
    fn only_modelled_strategies_run() {
        let names: Vec<_> = strategies().iter().map(|s| s.name()).collect();
        assert_eq!(names, SIMULATED_STRATEGIES);
    }
}
