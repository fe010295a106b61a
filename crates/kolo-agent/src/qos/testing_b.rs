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
use crate::agent_pod::AgentPod;
use crate::cgroup::{CgroupDir, CgroupVersion};
use kolo_core::CpuMem;

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
        cfs: Default::default(),
        be_usage_window: None,
        kubelet_down: false,
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
        pod: AgentPod {
            id: kolo_core::PodRef { namespace: "default".to_string(), name: name.to_string(), uid },
            kube_qos,
            qos,
            qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
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

/// All three strategies on seeded random nodes, odd inputs included
/// (negative and huge usage, zero capacity, empty and foreign cpusets,
/// every QoS class): no panic, evictions only of BE pods, writes only
/// below the BE QoS dir and only to BE pods' dirs there.
#[cfg(test)]
mod random_nodes {
    use kolo_core::resources::ResourceName;

    use super::*;
    use crate::qos::cpu_evict::CpuEvict;
    use crate::qos::cpu_suppress::CpuSuppress;
    use crate::qos::memory_evict::MemoryEvict;
    use crate::qos::{Plan, Strategy};

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn pick(&mut self, values: &[i64]) -> i64 {
            values[(self.next() % values.len() as u64) as usize]
        }
    }

    const ODD: &[i64] =
        &[0, 1, -1, 999, 1_000, 4_000, 16_000, 1 << 30, 64 << 30, i64::MAX, i64::MIN];

    fn random_node(rng: &mut Rng) -> NodeState {
        let mut n = node(rng.pick(&[0, 1_000, 16_000, 96_000, -5]), rng.pick(ODD));
        n.usage = CpuMem::new(rng.pick(ODD), rng.pick(ODD));
        n.reserved = CpuMem::new(rng.pick(ODD), 0);
        n.now = ts(rng.pick(&[0, 10, 1000]));
        n.evictions.started = [None, Some(ts(0)), Some(ts(990))][(rng.next() % 3) as usize];
        n.be.cfs_quota_us =
            [None, Some(-1), Some(0), Some(2_000), Some(i64::MAX)][(rng.next() % 5) as usize];
        n.be.cpuset = match rng.next() % 4 {
            0 => None,
            1 => Some(CpuSet::default()),
            2 => Some(CpuSet::from_range(0, 1)),
            _ => Some(CpuSet::from_range(100, 103)),
        };
        if rng.next().is_multiple_of(2) {
            n.cpu_cores = n.be_cpus.iter().map(|c| (c, (c % 2, c / 4))).collect();
        }
        if rng.next().is_multiple_of(3) {
            n.allocatable.set(ResourceName::BatchCpu, rng.pick(ODD));
        }
        let classes = [
            QoSClass::BE,
            QoSClass::LS,
            QoSClass::LSR,
            QoSClass::LSE,
            QoSClass::System,
            QoSClass::None,
        ];
        for i in 0..(rng.next() % 8) {
            let qos = classes[(rng.next() % classes.len() as u64) as usize];
            let kube = if rng.next().is_multiple_of(2) {
                KubeQoSClass::BestEffort
            } else {
                KubeQoSClass::Burstable
            };
            let mut p = pod(&format!("p{i}"), qos, kube, rng.pick(ODD), rng.pick(ODD));
            p.pod.requests = ResourceVector::new().with(ResourceName::BatchCpu, rng.pick(ODD));
            p.priority = [None, Some(0), Some(i32::MIN), Some(i32::MAX)][(rng.next() % 4) as usize];
            p.pod.deleting = rng.next().is_multiple_of(5);
            if rng.next().is_multiple_of(4) {
                p.usage = None;
            }
            n.pods.push(p);
        }
        n
    }

    fn random_thresholds(rng: &mut Rng) -> ResourceThresholdStrategy {
        let pct = &[-10, 0, 1, 40, 60, 65, 70, 100, 200];
        let opt = |rng: &mut Rng| (!rng.next().is_multiple_of(3)).then(|| rng.pick(pct));
        ResourceThresholdStrategy {
            enable: [None, Some(false), Some(true), Some(true)][(rng.next() % 4) as usize],
            cpu_suppress_threshold_percent: opt(rng),
            cpu_suppress_min_percent: opt(rng),
            cpu_suppress_policy: [None, Some("cfsQuota".to_string()), Some("bogus".to_string())]
                [(rng.next() % 3) as usize]
                .clone(),
            memory_evict_threshold_percent: opt(rng),
            memory_evict_lower_percent: opt(rng),
            cpu_evict_be_satisfaction_lower_percent: opt(rng),
            cpu_evict_be_satisfaction_upper_percent: opt(rng),
            cpu_evict_be_usage_threshold_percent: opt(rng),
            cpu_evict_policy: (rng.next().is_multiple_of(2))
                .then(|| "evictByAllocatable".to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn only_be_pods_are_touched() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let strategies: [&dyn Strategy; 3] = [&CpuSuppress, &CpuEvict, &MemoryEvict];
        let (mut evictions, mut cpusets, mut quotas) = (0, 0, 0);
        for _ in 0..3_000 {
            let n = random_node(&mut rng);
            let spec = slo(random_thresholds(&mut rng));
            let mut plan = Plan::default();
            for s in strategies {
                s.plan(&n, &spec, &mut plan);
            }
            for e in &plan.evictions {
                let pod =
                    n.pods.iter().find(|p| p.pod.id.uid == e.uid).expect("evicts a known pod");
                assert!(pod.is_be() && !pod.pod.deleting, "{e:?}");
            }
            for w in &plan.writes {
                assert!(w.write.dir.starts_with(&n.be_dir), "{w:?}");
                if w.write.dir != n.be_dir {
                    let owner = n
                        .pods
                        .iter()
                        .find(|p| w.write.dir.starts_with(&p.dir))
                        .expect("a pod's dir");
                    assert!(owner.is_be(), "{w:?}");
                }
                if let crate::cgroup::Value::Cpuset(set) = &w.write.value {
                    assert!(!set.is_empty() && set.is_subset(&n.be_cpus), "{w:?}");
                }
            }
            assert!(
                plan.evictions.len() <= 2 * crate::qos::eviction_order::MAX_EVICTIONS_PER_ROUND
            );
            evictions += plan.evictions.len();
            cpusets += plan
                .writes
                .iter()
                .filter(|w| w.write.resource == crate::cgroup::Resource::CpusetCpus)
                .count();
            quotas += plan
                .writes
                .iter()
                .filter(|w| w.write.resource == crate::cgroup::Resource::CpuCfsQuota)
                .count();
        }
        // The generator reaches every kind of action.
        assert!(evictions > 50 && cpusets > 50 && quotas > 50, "{evictions} {cpusets} {quotas}");
    }
}
