//! The agent's act side in the simulator: the node as the QoS strategies
//! see it ([`NodeState`]), one round of the real strategies
//! ([`kolo_agent::qos::plan_all`]), and the plan's effects on the simulated
//! node — the BE group's cpuset or CFS quota becomes the BE CPU cap of the
//! contention model; evictions remove pods.
//!
//! Only the strategies whose effects the node model represents run:
//! `cpuSuppress`, `cpuEvict` and `memoryEvict`. The isolation the others
//! configure (BE `cpu.idle`, per-pod limits, memory QoS, CPU burst) is what
//! the contention model assumes ([`crate::contention::Isolation::Idle`]).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kolo_agent::cgroup::{CgroupDir, CgroupDriver, CgroupVersion, PodPaths, Resource, Value};
use kolo_agent::pod_ref::PodRef;
use kolo_agent::predictor::CpuMem;
use kolo_agent::qos::{
    BeGroupState, EvictionHistory, Features, NodeState, PodState, PodStateError, Strategy,
    cpu_evict, cpu_suppress, default_strategies, memory_evict, plan_all,
};
use kolo_api::crd::NodeSLOSpec;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::pod::PodView;
use kolo_core::resources::ResourceVector;

use crate::node::SimNode;

/// The strategies the simulator runs (see the module docs).
pub const SIMULATED_STRATEGIES: [&str; 3] =
    [cpu_suppress::NAME, cpu_evict::NAME, memory_evict::NAME];

/// The agent's strategies the simulator runs, from the agent's own list.
pub fn strategies() -> Vec<Box<dyn Strategy>> {
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
    /// The node's NodeSLO spec.
    pub slo: NodeSLOSpec,
    /// Pods started on the node whose state the agent has not read yet
    /// (in `SimNode::pods` order after the pods of `state`): they are read
    /// at the node's next step, with the other nodes in parallel, rather
    /// than on the scheduler's thread.
    pub started: Vec<Arc<Pod>>,
}

impl AgentSide {
    /// The agent of `node`, started at `now`.
    pub fn new(node: &SimNode, slo: NodeSLOSpec, paths: &PodPaths, now: Timestamp) -> AgentSide {
        let cpus = u32::try_from((node.capacity.0 / 1000).max(1)).unwrap_or(1);
        let mut allocatable = *node.view.allocatable();
        node.extended.apply_to(&mut allocatable);
        let state = NodeState {
            now,
            capacity: CpuMem::new(node.capacity.0, node.capacity.1),
            allocatable,
            reserved: CpuMem::new(
                node.capacity.0 - node.allocatable.0,
                node.capacity.1 - node.allocatable.1,
            ),
            usage: CpuMem::default(),
            be_cpus: CpuSet::from_range(0, cpus - 1),
            cpu_cores: node.cores.clone(),
            be_dir: paths.qos_dir(KubeQoSClass::BestEffort).clone(),
            be: BeGroupState { cpuset: None, cfs_quota_us: Some(-1) },
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
            evictions: EvictionHistory { started: Some(now), last_cpu: None, last_memory: None },
            // The node model has no CFS quotas of LS containers nor a BE
            // usage history: cfsQuotaBurst and a windowed cpuEvict see none.
            cfs: Default::default(),
            be_usage_window: None,
        };
        AgentSide { state, slo, started: Vec::new() }
    }
}

/// The strategies' view of a bound pod, already read as `view`. Without
/// its containers: the node model has no per-container cgroups, the
/// strategies the simulator runs read pod-level usage only, and their
/// writes to container cgroups would be dropped (only the BE QoS group's
/// cap is modelled).
pub fn pod_state(bound: &Pod, view: &PodView, paths: &PodPaths) -> Result<PodState, PodStateError> {
    PodState::pod_level(PodRef::from_view(view, bound), bound, paths, None)
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
/// and the pods to evict come out (engine pod ids, with the strategy).
pub fn round(
    node: &mut SimNode,
    strategies: &[Box<dyn Strategy>],
    now: Timestamp,
) -> Vec<(u32, &'static str)> {
    let Some(agent) = node.agent.as_mut() else { return Vec::new() };
    let state = &mut agent.state;
    state.now = now;
    let mut memory = node.system_memory;
    for (p, s) in node.pods.iter().zip(state.pods.iter_mut()) {
        s.usage = Some(CpuMem::new(p.cpu.round() as i64, p.memory.round() as i64));
        memory += p.memory;
    }
    let used = node.last.system + node.last.ls + node.last.be;
    state.usage = CpuMem::new(used.round() as i64, memory.round() as i64);
    let plan = plan_all(strategies, state, &agent.slo);
    for w in &plan.writes {
        if w.write.dir != state.be_dir {
            continue;
        }
        match (w.write.resource, &w.write.value) {
            (Resource::CpusetCpus, Value::Cpuset(set)) => state.be.cpuset = Some(set.clone()),
            (Resource::CpuCfsQuota, Value::Int(q)) => state.be.cfs_quota_us = Some(*q),
            _ => {}
        }
    }
    node.be_cap = be_cap(&state.be, &state.be_cpus);
    let mut evicted = Vec::with_capacity(plan.evictions.len());
    for e in &plan.evictions {
        if e.strategy == cpu_evict::NAME {
            state.evictions.last_cpu = Some(now);
        }
        if e.strategy == memory_evict::NAME {
            state.evictions.last_memory = Some(now);
        }
        if let Some(id) = pod_id(&e.uid) {
            evicted.push((id, e.strategy));
        }
    }
    evicted
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
