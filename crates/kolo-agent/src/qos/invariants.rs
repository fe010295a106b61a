//! Property test of the invariant every strategy shares: only BE pods are
//! ever throttled or evicted — never LS, LSR, LSE or SYSTEM pods.

use std::collections::BTreeMap;

use kolo_api::crd::{CPUBurstStrategy, NodeSLOSpec, ResourceThresholdStrategy};
use kolo_api::kube_qos::KubeQoSClass;
use kolo_api::{PriorityClass, QoSClass};
use kolo_core::cpuset::CpuSet;
use kolo_core::resources::{ResourceName, ResourceVector};
use proptest::prelude::*;

use super::{
    BeGroupState, CfsState, ContainerState, EvictionHistory, Features, NodeState, PodState,
    default_strategies, plan_all,
};
use crate::agent_pod::{AgentPod, ContainerRef};
use crate::cgroup::{
    CgroupDir, CgroupDriver, CgroupVersion, ContainerId, PodPaths, Resource, Value,
};
use kolo_core::CpuMem;

/// The kubelet's CFS quota for a CPU limit (µs per 100 ms).
fn base_quota(limit_milli: i64) -> i64 {
    (limit_milli * 100).max(1000)
}

/// A write that takes CPU or memory away from the cgroup it targets.
fn throttles(resource: Resource, value: &Value) -> bool {
    match (resource, value) {
        (Resource::CpuCfsQuota, Value::Int(q)) => *q >= 0,
        (Resource::CpusetCpus, _) | (Resource::MemoryLimit, Value::Int(_)) => true,
        (Resource::CpuIdle, Value::Int(1)) | (Resource::CpuBvtWarpNs, Value::Int(-1)) => true,
        (Resource::CpuShares, Value::Int(s)) => *s <= 2,
        _ => false,
    }
}

fn node(pods: Vec<(usize, i64, i64, i64)>, usage: i64) -> NodeState {
    let paths = PodPaths::new(CgroupDriver::Cgroupfs, &CgroupDir::root());
    let pods: Vec<PodState> = pods
        .into_iter()
        .enumerate()
        .map(|(i, (qos, cpu, mem, batch))| {
            let qos = QoSClass::ALL[qos];
            let kube_qos = if qos == QoSClass::BE {
                KubeQoSClass::BestEffort
            } else {
                KubeQoSClass::Burstable
            };
            let uid = format!("00000000-0000-4000-8000-{i:012x}");
            let id = format!("containerd://{:064x}", i + 1);
            let dir = paths.pod_dir(kube_qos, &uid).unwrap();
            let cdir = paths.container_dir(&dir, &ContainerId::parse(&id).unwrap()).unwrap();
            let mut requests = ResourceVector::cpu_memory(cpu / 2, mem / 2);
            let mut limits = ResourceVector::cpu_memory(cpu, mem);
            if qos == QoSClass::BE {
                requests = ResourceVector::default();
                requests.set(ResourceName::BatchCpu, batch);
                requests.set(ResourceName::BatchMemory, mem);
                limits = requests;
            }
            PodState {
                pod: AgentPod {
                    id: kolo_core::PodRef { namespace: "ns".into(), name: format!("pod-{i}"), uid },
                    kube_qos,
                    qos,
                    qos_source: kolo_api::qos::QoSSource::KoordinatorLabel,
                    priority_class: if qos == QoSClass::BE {
                        PriorityClass::Batch
                    } else {
                        PriorityClass::Prod
                    },
                    requests,
                    limits,
                    terminated: false,
                    deleting: false,
                    created: None,
                    containers: vec![ContainerRef { name: "main".into(), id: Some(id) }],
                },
                priority: Some(if qos == QoSClass::BE { 5500 } else { 9500 }),
                labels: BTreeMap::from([("koordinator.sh/eviction-enabled".into(), "true".into())]),
                annotations: BTreeMap::new(),
                dir,
                containers: vec![ContainerState {
                    name: "main".into(),
                    dir: Some(cdir),
                    requests,
                    limits,
                    usage: Some(CpuMem::new(cpu, mem)),
                }],
                usage: Some(CpuMem::new(cpu, mem)),
            }
        })
        .collect();
    // CFS state for `cfsQuotaBurst`: non-BE pods' quotas at 1-4× the
    // kubelet's and throttled 0-50 % (by index, for variety).
    let mut cfs = BTreeMap::new();
    for (i, p) in pods.iter().enumerate().filter(|(_, p): &(usize, &PodState)| !p.is_be()) {
        let quota = base_quota(p.pod.limits.cpu()) * (1 + i as i64 % 4);
        let throttled = Some((i % 3) as f64 * 0.25);
        for c in &p.containers {
            let dir = c.dir.clone().expect("has a dir");
            cfs.insert(dir, CfsState { quota_us: quota, throttled_ratio: throttled });
        }
        cfs.insert(p.dir.clone(), CfsState { quota_us: quota, throttled_ratio: None });
    }
    let now: kolo_core::clock::Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
    NodeState {
        now,
        capacity: CpuMem::new(16_000, 64 << 30),
        allocatable: ResourceVector::cpu_memory(15_000, 60 << 30),
        reserved: CpuMem::new(1000, 2 << 30),
        usage: CpuMem::new(usage, (usage * 4) << 20),
        be_cpus: CpuSet::from_range(0, 15),
        cpu_cores: BTreeMap::new(),
        be_dir: paths.qos_dir(KubeQoSClass::BestEffort).clone(),
        be: BeGroupState { cpuset: Some(CpuSet::from_range(0, 15)), cfs_quota_us: Some(-1) },
        pods,
        features: Features {
            cpu_idle: true,
            bvt_warp_ns: true,
            cfs_burst: true,
            memory_qos: true,
            eevdf: false,
        },
        version: CgroupVersion::V1,
        evictions: EvictionHistory {
            started: Some(now - std::time::Duration::from_secs(3600)),
            last_cpu: None,
            last_memory: None,
        },
        cfs,
        be_usage_window: None,
        kubelet_down: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn only_be_pods_are_throttled_or_evicted(
        pods in prop::collection::vec((0usize..5, 0i64..8_000, 0i64..(16 << 30), 0i64..8_000), 0..12),
        usage in 0i64..16_000,
        threshold in 0i64..=100,
        memory_threshold in 1i64..=100,
    ) {
        let node = node(pods, usage);
        let slo = NodeSLOSpec {
            cpu_burst_strategy: Some(CPUBurstStrategy {
                policy: Some("auto".into()),
                ..Default::default()
            }),
            resource_used_threshold_with_be: Some(ResourceThresholdStrategy {
                enable: Some(true),
                cpu_suppress_threshold_percent: Some(threshold),
                memory_evict_threshold_percent: Some(memory_threshold),
                cpu_evict_be_satisfaction_lower_percent: Some(40),
                cpu_evict_be_satisfaction_upper_percent: Some(80),
                ..Default::default()
            }),
            ..Default::default()
        };
        let plan = plan_all(&default_strategies(), &node, &slo);
        for e in &plan.evictions {
            let pod = node.pods.iter().find(|p| p.pod.id.uid == e.uid).expect("evicts a known pod");
            prop_assert!(pod.is_be(), "{} evicted {} ({:?}): {}", e.strategy, e.pod, pod.pod.qos, e.reason);
        }
        for w in &plan.writes {
            if !throttles(w.write.resource, &w.write.value) {
                continue;
            }
            let under_be_dir = w.write.dir.starts_with(&node.be_dir);
            let be_pod = node.pods.iter().any(|p| p.is_be() && w.write.dir.starts_with(&p.dir));
            // A non-BE quota may come down (cfsQuotaBurst scaling back), but
            // never below what the kubelet set from the pod's CPU limit.
            if let (Resource::CpuCfsQuota, Value::Int(q), false) =
                (w.write.resource, &w.write.value, under_be_dir || be_pod)
            {
                let pod = node.pods.iter().find(|p| w.write.dir.starts_with(&p.dir)).expect("a pod's dir");
                let base = base_quota(pod.pod.limits.cpu());
                prop_assert!(*q >= base, "{} cuts {} to {q} below its limit's {base}: {}", w.strategy, w.write.dir.as_path().display(), w.reason);
                continue;
            }
            prop_assert!(
                under_be_dir || be_pod,
                "{} throttles {} ({:?} = {}): {}",
                w.strategy, w.write.dir.as_path().display(), w.write.resource, w.write.value, w.reason
            );
        }
    }
}
