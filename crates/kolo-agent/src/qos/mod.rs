//! QoS strategies: what the agent does to keep LS pods fast while BE pods
//! use what is left (Koordinator spec §5–§6 of `koordinator-node.md`).
//!
//! Every strategy is a pure function of ([`NodeState`], the node's merged
//! NodeSLO spec) that adds cgroup writes and evictions, each with its
//! reason, to a [`Plan`]. The act side reads the state (collectors, the
//! BE cgroup's current values), applies the writes through
//! [`crate::cgroup::Executor`] (in a safe order) and the evictions through
//! an evictor. `kolo agent plan` runs the strategies on a state file.
//!
//! Invariant shared by every strategy (and checked by a property test):
//! only BE pods are ever throttled or evicted — never LS, LSR, LSE or SYSTEM.

use std::collections::BTreeMap;

use kolo_api::crd::NodeSLOSpec;
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::ResourceVector;
use serde::Serialize;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;

use crate::agent_pod::AgentPod;
use crate::cgroup::{CgroupDir, CgroupVersion, CgroupWrite, ContainerId, PodPaths};
use kolo_core::CpuMem;

/// What the kernel offers, per feature (detected by the cgroup layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Features {
    /// `cpu.idle` (mainline SCHED_IDLE groups).
    pub cpu_idle: bool,
    /// `cpu.bvt_warp_ns` (Alibaba Cloud Linux group identity).
    pub bvt_warp_ns: bool,
    /// `cpu.cfs_burst_us` / `cpu.max.burst`.
    pub cfs_burst: bool,
    /// `memory.min`, `memory.low`, `memory.high`.
    pub memory_qos: bool,
    /// The fair scheduler is EEVDF (Linux ≥ 6.6), where `cpu.idle` delays
    /// waking LS tasks instead of protecting them ([`crate::kernel`]).
    pub eevdf: bool,
}

/// One container of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerState {
    /// Container name.
    pub name: String,
    /// Its cgroup (`None` until the runtime created it).
    pub dir: Option<CgroupDir>,
    /// Its requests (incl. `kubernetes.io/batch-*`).
    pub requests: ResourceVector,
    /// Its limits.
    pub limits: ResourceVector,
    /// Last measured usage.
    pub usage: Option<CpuMem>,
}

/// One pod on the node.
#[derive(Debug, Clone, PartialEq)]
pub struct PodState {
    /// Identity, classes, requests.
    pub pod: AgentPod,
    /// `spec.priority`, if set.
    pub priority: Option<i32>,
    /// Labels (e.g. `koordinator.sh/eviction-enabled`).
    pub labels: BTreeMap<String, String>,
    /// Annotations (e.g. `koordinator.sh/eviction-policy`).
    pub annotations: BTreeMap<String, String>,
    /// The pod's cgroup.
    pub dir: CgroupDir,
    /// Its containers.
    pub containers: Vec<ContainerState>,
    /// Last measured usage.
    pub usage: Option<CpuMem>,
}

impl PodState {
    /// Whether strategies may throttle or evict this pod: BE pods only.
    pub fn is_be(&self) -> bool {
        self.pod.is_be()
    }

    /// The state of a Pod object on a node with these cgroup paths, with
    /// the pod's usage and its containers' (by container name).
    pub fn from_pod(
        object: &Pod,
        paths: &PodPaths,
        usage: Option<CpuMem>,
        container_usage: &BTreeMap<String, CpuMem>,
    ) -> Result<PodState, PodStateError> {
        let pod = AgentPod::from_pod(object)
            .map_err(|e| PodStateError { field: "spec".into(), message: e.to_string() })?;
        PodState::with_ref(pod, object, paths, usage, container_usage)
    }

    /// [`PodState::from_pod`] for a pod whose [`AgentPod`] is already built
    /// from `object` (the agent keeps both and parses each Pod once).
    pub fn with_ref(
        pod: AgentPod,
        object: &Pod,
        paths: &PodPaths,
        usage: Option<CpuMem>,
        container_usage: &BTreeMap<String, CpuMem>,
    ) -> Result<PodState, PodStateError> {
        let bad = |field: &str, message: String| PodStateError { field: field.into(), message };
        let mut state = PodState::pod_level(pod, object, paths, usage)?;
        for (j, c) in object.spec.iter().flat_map(|spec| &spec.containers).enumerate() {
            let field = format!("spec.containers[{j}].resources");
            let list = |l: Option<&BTreeMap<String, KubeQuantity>>| {
                l.map(ResourceVector::from_object_list)
                    .transpose()
                    .map(Option::unwrap_or_default)
                    .map_err(|e| bad(&field, e.to_string()))
            };
            let resources = c.resources.as_ref();
            let requests = list(resources.and_then(|r| r.requests.as_ref()))?;
            let limits = list(resources.and_then(|r| r.limits.as_ref()))?;
            let id = state
                .pod
                .containers
                .iter()
                .find(|r| r.name == c.name)
                .and_then(|r| r.id.as_deref());
            let dir = id
                .map(|id| {
                    let id = ContainerId::parse(id)?;
                    paths.container_dir(&state.dir, &id)
                })
                .transpose()
                .map_err(|e| bad("status.containerStatuses", e.to_string()))?;
            let usage = container_usage.get(&c.name).copied();
            state.containers.push(ContainerState {
                name: c.name.clone(),
                dir,
                requests,
                limits,
                usage,
            });
        }
        Ok(state)
    }

    /// The pod-level part of [`with_ref`](Self::with_ref): everything but
    /// the containers (left empty), for a caller with no container cgroups
    /// (`kolo sim`'s node model, whose strategies read pod-level usage).
    pub fn pod_level(
        pod: AgentPod,
        object: &Pod,
        paths: &PodPaths,
        usage: Option<CpuMem>,
    ) -> Result<PodState, PodStateError> {
        let dir = paths
            .pod_dir(pod.kube_qos, &pod.id.uid)
            .map_err(|e| PodStateError { field: "metadata.uid".into(), message: e.to_string() })?;
        let meta = &object.metadata;
        Ok(PodState {
            priority: object.spec.as_ref().and_then(|spec| spec.priority),
            labels: meta.labels.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
            dir,
            containers: Vec::new(),
            usage,
            pod,
        })
    }
}

/// A Pod object the strategies cannot use; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct PodStateError {
    /// The field, relative to the pod (`metadata.uid`, ...).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The current values of the BE QoS cgroup (read by the act side), which
/// the suppression strategies adjust from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BeGroupState {
    /// `cpuset.cpus` of the BE QoS dir, if known.
    pub cpuset: Option<CpuSet>,
    /// `cpu.cfs_quota_us` of the BE QoS dir (`-1`: unlimited), if known.
    pub cfs_quota_us: Option<i64>,
}

/// A cgroup's CFS quota and how much the kernel throttled it lately (read
/// by the act side for the containers [`cfs_quota_burst`] may scale).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CfsState {
    /// `cpu.cfs_quota_us` (`-1`: unlimited).
    pub quota_us: i64,
    /// Δ`nr_throttled` / Δ`nr_periods` over the last interval (`None`
    /// until two readings exist).
    pub throttled_ratio: Option<f64>,
}

/// The BE pods' CPU use averaged over a window (for `cpuEvict` with
/// `cpuEvictTimeWindowSeconds`), from the agent's metric store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeUsageWindow {
    /// The window asked for.
    pub window: std::time::Duration,
    /// Σ over BE pods of their average CPU use in the window, milli-cores.
    pub avg_milli: i64,
    /// The time the samples span (the shortest over the BE pods): the
    /// average only counts when it covers a third of the window.
    pub covered: std::time::Duration,
}

/// When strategies last evicted (for their cool-downs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EvictionHistory {
    /// The agent's start (CPU eviction waits a cool-down from here).
    pub started: Option<Timestamp>,
    /// Last CPU-triggered eviction.
    pub last_cpu: Option<Timestamp>,
    /// Last memory-triggered eviction.
    pub last_memory: Option<Timestamp>,
}

/// Everything a strategy may look at.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    /// Now.
    pub now: Timestamp,
    /// Node capacity (CPU milli, memory bytes).
    pub capacity: CpuMem,
    /// Node allocatable, incl. the batch / mid extended resources.
    pub allocatable: ResourceVector,
    /// Reserved for the system (kubelet reserved and the reservation
    /// annotation, the larger per resource).
    pub reserved: CpuMem,
    /// Last node usage.
    pub usage: CpuMem,
    /// CPUs BE pods may use (online CPUs minus reserved / SYSTEM-exclusive /
    /// LSE CPUs).
    pub be_cpus: CpuSet,
    /// CPU ids by (socket, core), for cpuset placement: `cpu → (socket,
    /// core)`; empty when unknown (CPUs are then taken in id order).
    pub cpu_cores: BTreeMap<u32, (u32, u32)>,
    /// The kubepods BestEffort QoS dir (where BE pods live).
    pub be_dir: CgroupDir,
    /// Its current values.
    pub be: BeGroupState,
    /// The pods.
    pub pods: Vec<PodState>,
    /// Kernel features.
    pub features: Features,
    /// cgroup v1 or v2.
    pub version: CgroupVersion,
    /// Cool-down bookkeeping.
    pub evictions: EvictionHistory,
    /// CFS state of LS pods and containers with CPU limits, by cgroup
    /// (empty unless [`cfs_quota_burst::needs_cfs_state`] asked for it).
    pub cfs: BTreeMap<CgroupDir, CfsState>,
    /// BE CPU over `cpuEvictTimeWindowSeconds`, when that is configured.
    pub be_usage_window: Option<BeUsageWindow>,
    /// The kubelet, where the pods come from, failed its last pod sync
    /// (unreachable, or answering with no pods as it does while starting),
    /// or answers again since less than 30 s: it may be restarting, and a
    /// starting kubelet writes `cpu.shares` on the BE QoS dir, which the
    /// kernel refuses while `cpu.idle` is 1.
    pub kubelet_down: bool,
}

impl NodeState {
    /// The node-level fields without the pods (for a caller that runs the
    /// strategies over a pod of its own choosing, as the runtime hooks do).
    /// Destructured field by field so a new field cannot be forgotten.
    pub fn without_pods(&self) -> NodeState {
        let NodeState {
            now,
            capacity,
            allocatable,
            reserved,
            usage,
            be_cpus,
            cpu_cores,
            be_dir,
            be,
            pods: _,
            features,
            version,
            evictions,
            cfs,
            be_usage_window,
            kubelet_down,
        } = self;
        NodeState {
            now: *now,
            capacity: *capacity,
            allocatable: *allocatable,
            reserved: *reserved,
            usage: *usage,
            be_cpus: be_cpus.clone(),
            cpu_cores: cpu_cores.clone(),
            be_dir: be_dir.clone(),
            be: be.clone(),
            pods: Vec::new(),
            features: *features,
            version: *version,
            evictions: *evictions,
            cfs: cfs.clone(),
            be_usage_window: *be_usage_window,
            kubelet_down: *kubelet_down,
        }
    }
}

/// A cgroup write and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedWrite {
    /// The write.
    pub write: CgroupWrite,
    /// The strategy that wants it.
    pub strategy: &'static str,
    /// Why, with the numbers.
    pub reason: String,
    /// The numbers, typed.
    pub figures: Figures,
}

/// An eviction and why.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEviction {
    /// `namespace/name`.
    pub pod: String,
    /// Pod UID.
    pub uid: String,
    /// The strategy that wants it.
    pub strategy: &'static str,
    /// Why, with the numbers.
    pub reason: String,
    /// The numbers, typed.
    pub figures: Figures,
}

/// What the strategies want done this round.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Cgroup writes (the executor orders them safely).
    pub writes: Vec<PlannedWrite>,
    /// Evictions.
    pub evictions: Vec<PlannedEviction>,
}

impl Plan {
    /// Adds a write (without figures: set them on the returned write).
    pub fn write(
        &mut self,
        strategy: &'static str,
        write: CgroupWrite,
        reason: impl Into<String>,
    ) -> &mut PlannedWrite {
        let figures = Figures::None;
        self.writes.push(PlannedWrite { write, strategy, reason: reason.into(), figures });
        self.writes.last_mut().expect("just pushed")
    }

    /// Adds an eviction of `pod` with its figures, unless the plan already
    /// evicts it.
    pub fn evict(
        &mut self,
        strategy: &'static str,
        pod: &PodState,
        reason: impl Into<String>,
        figures: Figures,
    ) {
        if self.evictions.iter().any(|e| e.uid == pod.pod.id.uid) {
            return;
        }
        self.evictions.push(PlannedEviction {
            pod: pod.pod.id.key(),
            uid: pod.pod.id.uid.clone(),
            strategy,
            reason: reason.into(),
            figures,
        });
    }
}

/// Whether a write to the BE QoS cgroup takes CPU away from BE compared
/// with its current values: a lower CFS quota (`-1` is unlimited) or a
/// strictly smaller cpuset.
pub fn tightens(write: &CgroupWrite, current: &BeGroupState) -> bool {
    use crate::cgroup::{Resource, Value};
    match (write.resource, &write.value) {
        (Resource::CpuCfsQuota, Value::Int(new)) if *new >= 0 => {
            current.cfs_quota_us.is_none_or(|cur| cur < 0 || *new < cur)
        }
        (Resource::CpusetCpus, Value::Cpuset(new)) => {
            current.cpuset.as_ref().is_none_or(|cur| new.is_subset(cur) && new.len() < cur.len())
        }
        _ => false,
    }
}

/// Runs every strategy on a node and collects what they want done.
pub fn plan_all(strategies: &[Box<dyn Strategy>], node: &NodeState, slo: &NodeSLOSpec) -> Plan {
    let mut plan = Plan::default();
    for strategy in strategies {
        strategy.plan(node, slo, &mut plan);
    }
    plan
}

/// A QoS strategy (shared between threads: a simulator's nodes advance in
/// parallel with one list).
pub trait Strategy: Send + Sync {
    /// Its name (`cpuSuppress`, `memoryEvict`, ...).
    fn name(&self) -> &'static str;
    /// Adds what it wants done to `plan`. `slo` is the node's NodeSLO spec
    /// as written; each strategy applies the reference defaults to the
    /// fields left unset.
    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan);
}

/// Every strategy kolo runs, in order: isolation and per-pod limits, then
/// suppression, then eviction (a suppressed node may not need to evict).
pub fn default_strategies() -> Vec<Box<dyn Strategy>> {
    vec![
        Box::new(be_isolation::BeIsolation),
        Box::new(batch_resource::BatchResource),
        Box::new(cpu_burst::CpuBurst),
        Box::new(cfs_quota_burst::CfsQuotaBurst),
        Box::new(memory_qos::MemoryQos),
        Box::new(cpuset_bind::CpusetBind),
        Box::new(cpu_suppress::CpuSuppress),
        Box::new(cpu_evict::CpuEvict),
        Box::new(memory_evict::MemoryEvict),
    ]
}

pub mod batch_resource;
pub mod be_isolation;
pub mod cfs_quota_burst;
pub mod cpu_burst;
pub mod cpu_evict;
pub mod cpu_pools;
pub mod cpu_suppress;
pub mod cpuset_bind;
pub mod eviction_order;
pub mod figures;
pub mod hook;
pub mod memory_evict;
pub mod memory_qos;
pub mod plan_report;
pub mod round;
pub mod state_file;

pub use figures::Figures;
pub use plan_report::{EvictionReport, PlanReport, WriteReport};
pub use round::{CollectSettings, Probe, QosLoop, RoundPlan, SurgeThresholds};

#[cfg(test)]
mod invariants;
#[cfg(test)]
pub(crate) mod testing_a;
#[cfg(test)]
pub(crate) mod testing_b;

#[cfg(test)]
mod pod_state_tests {
    use kolo_core::pod::PodView;

    use super::*;
    use crate::cgroup::{CgroupDir, CgroupDriver};

    fn pod(uid: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "batch", "name": "job-1", "uid": uid,
                         "labels": {"koordinator.sh/qosClass": "BE"},
                         "annotations": {"a": "b"}},
            "spec": {"priority": 5500, "priorityClassName": "koord-batch", "containers": [
                {"name": "main", "resources": {
                    "requests": {"kubernetes.io/batch-cpu": "1000"},
                    "limits": {"kubernetes.io/batch-cpu": "2000"}}},
                {"name": "side"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "containerID": "containerd://0123456789abcdef", "ready": true,
                 "restartCount": 0, "image": "i", "imageID": "i"}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_pod_level_state_is_the_full_state_without_containers() {
        let paths = PodPaths::new(CgroupDriver::Systemd, &CgroupDir::root());
        let object = pod("5f0c2d1e-aaaa-4bbb-8ccc-0123456789ab");
        let usage = Some(CpuMem::new(700, 1 << 30));
        let full = PodState::from_pod(&object, &paths, usage, &BTreeMap::new()).unwrap();
        assert_eq!(full.containers.len(), 2);
        assert!(full.containers[0].dir.is_some(), "the container's cgroup is known");
        let view = PodView::from_pod(&object).unwrap();
        let level =
            PodState::pod_level(AgentPod::from_view(&view, &object), &object, &paths, usage)
                .unwrap();
        assert_eq!(level, PodState { containers: Vec::new(), ..full });
        // A UID that cannot be a path component is refused by both.
        let bad = pod("../../etc");
        let view = PodView::from_pod(&bad).unwrap();
        let err = PodState::pod_level(AgentPod::from_view(&view, &bad), &bad, &paths, None);
        assert_eq!(err.unwrap_err().field, "metadata.uid");
        let err = PodState::from_pod(&bad, &paths, None, &BTreeMap::new()).unwrap_err();
        assert_eq!(err.field, "metadata.uid");
    }
}
