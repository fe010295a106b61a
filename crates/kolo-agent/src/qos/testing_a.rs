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
use crate::agent_pod::{AgentPod, ContainerRef};
use crate::cgroup::{CgroupDir, CgroupVersion, Resource, Value};
use kolo_core::CpuMem;

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
        cfs: Default::default(),
        be_usage_window: None,
        kubelet_down: false,
    }
}

/// Every kernel feature on.
pub(crate) fn all_features() -> Features {
    Features { cpu_idle: true, bvt_warp_ns: true, cfs_burst: true, memory_qos: true, eevdf: false }
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
        pod: AgentPod {
            id: kolo_core::PodRef {
                namespace: "default".to_string(),
                name: name.to_string(),
                uid: format!("uid-{name}"),
            },
            kube_qos,
            qos,
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
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

/// The four strategies together on a mixed node with everything enabled
/// and odd inputs: their writes agree, pass the cgroup layer's validation
/// on v1 and v2, and never limit a non-BE pod.
#[cfg(test)]
mod tests {
    use kolo_api::crd::{
        CPUBurstStrategy, CPUQOSCfg, MemoryQOSCfg, ResourceQOS, ResourceQOSStrategy,
    };
    use kolo_core::resources::ResourceName::{BatchCpu, BatchMemory, Cpu, Memory};

    use super::*;
    use crate::qos::batch_resource::BatchResource;
    use crate::qos::be_isolation::BeIsolation;
    use crate::qos::cpu_burst::CpuBurst;
    use crate::qos::memory_qos::MemoryQos;

    fn class(gi: i64) -> Option<ResourceQOS> {
        Some(ResourceQOS {
            cpu_qos: Some(CPUQOSCfg {
                enable: Some(true),
                group_identity: Some(gi),
                ..Default::default()
            }),
            memory_qos: Some(MemoryQOSCfg {
                enable: Some(true),
                min_limit_percent: Some(100),
                low_limit_percent: Some(150),
                throttling_percent: Some(80),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn everything() -> NodeSLOSpec {
        NodeSLOSpec {
            resource_qos_strategy: Some(ResourceQOSStrategy {
                lsr_class: class(2),
                ls_class: class(2),
                be_class: class(-1),
                system_class: class(0),
                ..Default::default()
            }),
            cpu_burst_strategy: Some(CPUBurstStrategy {
                policy: Some("auto".to_string()),
                cpu_burst_percent: Some(10_000),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn mixed() -> Vec<PodState> {
        let odd = [i64::MIN, -1, 0, 1, 999, i64::MAX];
        let mut pods = Vec::new();
        for (i, qos) in [
            QoSClass::BE,
            QoSClass::LS,
            QoSClass::LSR,
            QoSClass::LSE,
            QoSClass::System,
            QoSClass::None,
        ]
        .into_iter()
        .enumerate()
        {
            let containers = odd
                .iter()
                .enumerate()
                .map(|(j, v)| {
                    let all = res(&[(Cpu, *v), (Memory, *v), (BatchCpu, *v), (BatchMemory, *v)]);
                    container(&format!("c{j}"), all, all)
                })
                .collect();
            pods.push(pod(&format!("p{i}"), qos, containers));
        }
        pods
    }

    #[test]
    fn all_four_together() {
        let strategies: [&dyn Strategy; 4] = [&BeIsolation, &BatchResource, &CpuBurst, &MemoryQos];
        for features in
            [all_features(), Features { cpu_idle: false, ..all_features() }, Features::default()]
        {
            for version in [CgroupVersion::V1, CgroupVersion::V2] {
                let mut n = node();
                n.features = features;
                n.version = version;
                n.pods = mixed();
                let mut plan = Plan::default();
                for s in strategies {
                    s.plan(&n, &everything(), &mut plan);
                }
                assert!(!plan.writes.is_empty());
                let mut seen = BTreeMap::new();
                for w in &plan.writes {
                    let k = (w.write.dir.clone(), w.write.resource);
                    if let Some(old) = seen.insert(k, &w.write.value) {
                        assert_eq!(old, &w.write.value, "conflicting writes: {w:?}");
                    }
                    assert!(!w.reason.is_empty());
                    w.write.resource.validate(version, &w.write.value).unwrap_or_else(|e| {
                        panic!("{version:?}: invalid {w:?}: {e}");
                    });
                    let be = w.write.dir.starts_with(&dir(BE_DIR));
                    if !be {
                        // Limits and low priority only ever for BE.
                        assert!(
                            !matches!(
                                w.write.resource,
                                Resource::CpuCfsQuota | Resource::MemoryLimit | Resource::CpuShares
                            ),
                            "{w:?}"
                        );
                        assert_ne!(w.write.value, Value::Int(-1), "{w:?}");
                        if w.write.resource == Resource::CpuIdle {
                            assert_eq!(w.write.value, Value::Int(0), "{w:?}");
                        }
                    }
                }
                // The kernel refuses shares on an idle group.
                for w in plan.writes.iter().filter(|w| w.write.resource == Resource::CpuShares) {
                    assert!(
                        !plan.writes.iter().any(|i| i.write.dir == w.write.dir
                            && i.write.resource == Resource::CpuIdle
                            && i.write.value == Value::Int(1)),
                        "shares on an idle group: {w:?}"
                    );
                }
            }
        }
    }
}
