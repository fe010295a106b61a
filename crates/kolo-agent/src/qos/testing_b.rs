//! Test helpers for the suppression and eviction strategies: small
//! [`NodeState`]s and pods.

use std::collections::BTreeMap;

use kolo_api::crd::NodeSLOSpec;
use kolo_api::crd::node_slo::ResourceThresholdStrategy;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::clock::Timestamp;
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::{ResourceName, ResourceVector};

use super::{BeGroupState, EvictionHistory, Features, NodeState, PodState};
use crate::cgroup::{CgroupDir, CgroupVersion};
use crate::pod_ref::PodRef;
use crate::predictor::CpuMem;

/// A timestamp `secs` after the epoch.
pub(crate) fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).expect("valid test timestamp")
}

/// The BE QoS dir.
pub(crate) fn be_dir() -> CgroupDir {
    CgroupDir::parse("kubepods/besteffort").expect("valid dir")
}

/// A node with `cpu_milli` capacity (all CPUs usable by BE, ids in order,
/// no topology), `memory` bytes, nothing reserved, no usage, no pods, at
/// t = 1000 s, agent started at t = 0.
pub(crate) fn node(cpu_milli: i64, memory: i64) -> NodeState {
    let cpus = u32::try_from((cpu_milli / 1000).max(1)).unwrap_or(1);
    NodeState {
        now: ts(1000),
        capacity: CpuMem::new(cpu_milli, memory),
        allocatable: ResourceVector::cpu_memory(cpu_milli, memory),
        reserved: CpuMem::default(),
        usage: CpuMem::default(),
        be_cpus: CpuSet::from_range(0, cpus - 1),
        cpu_cores: BTreeMap::new(),
        be_dir: be_dir(),
        be: BeGroupState::default(),
        pods: Vec::new(),
        features: Features::default(),
        version: CgroupVersion::V1,
        evictions: EvictionHistory { started: Some(ts(0)), ..Default::default() },
    }
}

fn pod(name: &str, qos: QoSClass, kube_qos: KubeQoSClass, cpu_milli: i64, memory: i64) -> PodState {
    let uid = format!("uid-{name}");
    let dir = match kube_qos {
        KubeQoSClass::BestEffort => be_dir().join(&format!("pod{uid}")),
        _ => CgroupDir::parse("kubepods/burstable").and_then(|d| d.join(&format!("pod{uid}"))),
    }
    .expect("valid pod dir");
    PodState {
        pod: PodRef {
            uid,
            namespace: "default".to_string(),
            name: name.to_string(),
            kube_qos,
            qos,
            priority_class: if qos == QoSClass::BE {
                PriorityClass::Batch
            } else {
                PriorityClass::Prod
            },
            requests: ResourceVector::new(),
            limits: ResourceVector::new(),
            terminated: false,
            deleting: false,
            created: None,
            containers: Vec::new(),
        },
        priority: None,
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        dir,
        containers: Vec::new(),
        usage: Some(CpuMem::new(cpu_milli, memory)),
    }
}

/// A BE pod (kube BestEffort, in the BE dir) using `cpu_milli` and `memory`.
pub(crate) fn be_pod(name: &str, cpu_milli: i64, memory: i64) -> PodState {
    pod(name, QoSClass::BE, KubeQoSClass::BestEffort, cpu_milli, memory)
}

/// A BE pod with a `batch-cpu` request.
pub(crate) fn be_pod_req(name: &str, batch_cpu: i64, cpu_milli: i64) -> PodState {
    let mut p = be_pod(name, cpu_milli, 0);
    p.pod.requests = ResourceVector::new().with(ResourceName::BatchCpu, batch_cpu);
    p
}

/// An LS pod (kube Burstable) using `cpu_milli` and `memory`.
pub(crate) fn ls_pod(name: &str, cpu_milli: i64, memory: i64) -> PodState {
    pod(name, QoSClass::LS, KubeQoSClass::Burstable, cpu_milli, memory)
}

/// A NodeSLO spec with `resourceUsedThresholdWithBE` = `t`.
pub(crate) fn slo(t: ResourceThresholdStrategy) -> NodeSLOSpec {
    NodeSLOSpec { resource_used_threshold_with_be: Some(t), ..Default::default() }
}

/// An enabled threshold strategy with everything else unset.
pub(crate) fn enabled() -> ResourceThresholdStrategy {
    ResourceThresholdStrategy { enable: Some(true), ..Default::default() }
}
