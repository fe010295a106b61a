//! Test helpers for the isolation strategies: small [`NodeState`]s and
//! pods built in one line, and look-ups into a [`Plan`].

use std::collections::BTreeMap;

use kolo_api::crd::NodeSLOSpec;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::{
    BeGroupState, ContainerState, EvictionHistory, Features, NodeState, Plan, PodState, Strategy,
};
use crate::cgroup::{CgroupDir, CgroupVersion, Resource, Value};
use crate::pod_ref::{ContainerRef, PodRef};
use crate::predictor::CpuMem;

/// The BE QoS dir of the test nodes.
pub(crate) const BE_DIR: &str = "kubepods/besteffort";

/// A node with 8 cores, 32 GiB, no pods, no kernel features, cgroup v2.
pub(crate) fn node() -> NodeState {
    NodeState {
        now: Timestamp::UNIX_EPOCH,
        capacity: CpuMem::new(8000, 32 << 30),
        allocatable: ResourceVector::cpu_memory(8000, 32 << 30),
        reserved: CpuMem::default(),
        usage: CpuMem::default(),
        be_cpus: CpuSet::from_range(0, 7),
        cpu_cores: BTreeMap::new(),
        be_dir: dir(BE_DIR),
        be: BeGroupState::default(),
        pods: Vec::new(),
        features: Features::default(),
        version: CgroupVersion::V2,
        evictions: EvictionHistory::default(),
    }
}

/// Every kernel feature on.
pub(crate) fn all_features() -> Features {
    Features { cpu_idle: true, bvt_warp_ns: true, cfs_burst: true, memory_qos: true }
}

/// A cgroup dir from a path.
pub(crate) fn dir(path: &str) -> CgroupDir {
    CgroupDir::parse(path).expect("valid test dir")
}

/// A resource vector from `(name, amount)` pairs.
pub(crate) fn res(pairs: &[(ResourceName, i64)]) -> ResourceVector {
    let mut v = ResourceVector::new();
    for (name, amount) in pairs {
        v.set(*name, *amount);
    }
    v
}

/// A container with requests and limits; its dir is `<pod dir>/<name>`
/// (set by [`pod`]).
pub(crate) fn container(
    name: &str,
    requests: ResourceVector,
    limits: ResourceVector,
) -> ContainerState {
    ContainerState { name: name.to_string(), dir: None, requests, limits, usage: None }
}

/// A pod of class `qos` named `default/<name>` with these containers; its
/// dir is under the kube QoS dir its class implies (BE → besteffort, LSR /
/// LSE → guaranteed (kubepods), else burstable). Pod requests / limits are
/// the sums of the containers'.
pub(crate) fn pod(name: &str, qos: QoSClass, containers: Vec<ContainerState>) -> PodState {
    let (kube_qos, parent) = match qos {
        QoSClass::BE => (KubeQoSClass::BestEffort, BE_DIR),
        QoSClass::LSR | QoSClass::LSE => (KubeQoSClass::Guaranteed, "kubepods"),
        _ => (KubeQoSClass::Burstable, "kubepods/burstable"),
    };
    let pod_dir = dir(&format!("{parent}/pod{name}"));
    let mut requests = ResourceVector::new();
    let mut limits = ResourceVector::new();
    let containers: Vec<ContainerState> = containers
        .into_iter()
        .map(|mut c| {
            requests = requests.saturating_add(&c.requests);
            limits = limits.saturating_add(&c.limits);
            c.dir = Some(pod_dir.join(&c.name).expect("valid container name"));
            c
        })
        .collect();
    PodState {
        pod: PodRef {
            uid: format!("uid-{name}"),
            namespace: "default".to_string(),
            name: name.to_string(),
            kube_qos,
            qos,
            priority_class: PriorityClass::None,
            requests,
            limits,
            terminated: false,
            deleting: false,
            created: None,
            containers: containers
                .iter()
                .map(|c| ContainerRef {
                    name: c.name.clone(),
                    id: Some(format!("containerd://{}", c.name)),
                })
                .collect(),
        },
        priority: None,
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        dir: pod_dir,
        containers,
        usage: None,
    }
}

/// Runs `strategy` on `node` with `slo`.
pub(crate) fn run(strategy: &dyn Strategy, node: &NodeState, slo: &NodeSLOSpec) -> Plan {
    let mut plan = Plan::default();
    strategy.plan(node, slo, &mut plan);
    plan
}

/// The value the plan writes to `resource` of `dir`, if any (panics if it
/// writes it twice: a strategy must not contradict itself).
pub(crate) fn written(plan: &Plan, path: &str, resource: Resource) -> Option<Value> {
    let target = dir(path);
    let mut hits =
        plan.writes.iter().filter(|w| w.write.dir == target && w.write.resource == resource);
    let first = hits.next().map(|w| w.write.value.clone());
    assert!(hits.next().is_none(), "{resource:?} of {path} written twice");
    first
}

/// Every write of the plan as `(dir, resource, value)`, for whole-plan
/// comparisons.
pub(crate) fn writes(plan: &Plan) -> Vec<(String, Resource, Value)> {
    plan.writes
        .iter()
        .map(|w| {
            (w.write.dir.as_path().display().to_string(), w.write.resource, w.write.value.clone())
        })
        .collect()
}
