//! A pod as the Katalyst node policy sees it: its level, enhancements,
//! requests and measured use.

use kolo_api::katalyst::{
    KatalystAnnotationError, KatalystQoSLevel, cpu_enhancement, memory_enhancement, qos_level,
};

use kolo_core::resources::ResourceName;

use crate::qos::PodState;

/// The default shared pool's name.
pub const DEFAULT_SHARED_POOL: &str = "share";

/// What was measured of a pod (any of it may be missing).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PodUsage {
    /// CPU use, cores.
    pub cpu: Option<f64>,
    /// 1-minute load (runnable threads) of its cgroup.
    pub load_1min: Option<f64>,
    /// 5-minute load.
    pub load_5min: Option<f64>,
    /// rss + cache + shmem, bytes.
    pub memory: Option<u64>,
    /// rss alone, bytes (system pods' estimate).
    pub rss: Option<u64>,
}

/// One pod.
#[derive(Debug, Clone, PartialEq)]
pub struct KPod {
    /// UID.
    pub uid: String,
    /// `namespace/name`.
    pub key: String,
    /// Katalyst QoS level (no annotation: `shared_cores`).
    pub level: KatalystQoSLevel,
    /// `memory_enhancement.numa_binding`.
    pub numa_binding: bool,
    /// `memory_enhancement.numa_exclusive`.
    pub numa_exclusive: bool,
    /// `cpu_enhancement.cpuset_pool`, or [`DEFAULT_SHARED_POOL`].
    pub pool: String,
    /// CPU request, milli-cores (reclaimed pods: `reclaimed_millicpu`).
    pub cpu_request_milli: i64,
    /// CPU limit, milli-cores (0: none).
    pub cpu_limit_milli: i64,
    /// Memory request, bytes.
    pub memory_request: u64,
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// Whether reclaimed pods may use what this pod leaves (Katalyst: the
    /// pod's SPD is neither "poor" nor "baseline"; kolo has no SPD, so the
    /// act side sets it, default `true`).
    pub reclaim_allowed: bool,
    /// Measured use.
    pub usage: PodUsage,
}

impl KPod {
    /// Whether the pod is reclaimed.
    pub fn is_reclaimed(&self) -> bool {
        self.level == KatalystQoSLevel::ReclaimedCores
    }

    /// `ceil(cpu request)` in CPUs, at least 1.
    pub fn cpus_needed(&self) -> usize {
        usize::try_from(self.cpu_request_milli.max(1)).unwrap_or(1).div_ceil(1000)
    }

    /// The CPU request in cores.
    pub fn cpu_request(&self) -> f64 {
        self.cpu_request_milli as f64 / 1000.0
    }

    /// The pod of a [`PodState`] (level and enhancements from its
    /// annotations; an annotation that does not parse is an error naming
    /// it). Requests are the pod's effective requests (reclaimed pods'
    /// `reclaimed_millicpu` counts as their CPU request).
    pub fn from_pod_state(p: &PodState) -> Result<KPod, KatalystAnnotationError> {
        let annotations = Some(&p.annotations);
        let level = qos_level(annotations)?.unwrap_or(KatalystQoSLevel::SharedCores);
        let memory = memory_enhancement(annotations)?;
        let cpu = cpu_enhancement(annotations)?;
        let requests = &p.pod.requests;
        // `reclaimed_millicpu` is an alias of `kubernetes.io/batch-cpu`.
        let reclaimed_cpu = requests.value(ResourceName::BatchCpu);
        let cpu_request_milli = if level == KatalystQoSLevel::ReclaimedCores {
            reclaimed_cpu.max(requests.cpu())
        } else {
            requests.cpu()
        };
        let usage = p.usage.map(|u| PodUsage {
            cpu: Some(u.cpu as f64 / 1000.0),
            memory: u64::try_from(u.memory).ok(),
            ..PodUsage::default()
        });
        Ok(KPod {
            uid: p.pod.id.uid.clone(),
            key: p.pod.id.key(),
            level,
            numa_binding: memory.numa_binding,
            numa_exclusive: memory.numa_binding && memory.numa_exclusive,
            pool: cpu.cpuset_pool.unwrap_or_else(|| DEFAULT_SHARED_POOL.to_string()),
            cpu_request_milli,
            cpu_limit_milli: p.pod.limits.cpu(),
            memory_request: u64::try_from(requests.memory()).unwrap_or(0),
            priority: p.priority.unwrap_or(0),
            reclaim_allowed: true,
            usage: usage.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::names::annotation;
    use kolo_core::resources::ResourceVector;

    use super::*;
    use crate::qos::testing_b::{be_pod, ls_pod};

    #[test]
    fn from_pod_state_reads_level_enhancements_and_requests() {
        // A reclaimed pod: its reclaimed_millicpu (batch-cpu) is its CPU request.
        let mut r = be_pod("r", 1_500, 1 << 30);
        r.annotations.insert(annotation::KATALYST_QOS_LEVEL.into(), "reclaimed_cores".into());
        r.pod.requests = ResourceVector::new().with(ResourceName::BatchCpu, 2_000);
        let k = KPod::from_pod_state(&r).unwrap();
        assert_eq!((k.level, k.cpu_request_milli), (KatalystQoSLevel::ReclaimedCores, 2_000));
        assert_eq!((k.usage.cpu, k.usage.memory), (Some(1.5), Some(1 << 30)));
        // No annotation: shared, default pool; a named pool; exclusive needs binding.
        let mut s = ls_pod("s", 0, 0);
        assert_eq!(KPod::from_pod_state(&s).unwrap().level, KatalystQoSLevel::SharedCores);
        assert_eq!(KPod::from_pod_state(&s).unwrap().pool, DEFAULT_SHARED_POOL);
        s.annotations.insert(
            annotation::KATALYST_CPU_ENHANCEMENT.into(),
            r#"{"cpuset_pool":"batch"}"#.into(),
        );
        assert_eq!(KPod::from_pod_state(&s).unwrap().pool, "batch");
        let mut d = ls_pod("d", 0, 0);
        d.annotations.insert(annotation::KATALYST_QOS_LEVEL.into(), "dedicated_cores".into());
        d.annotations.insert(
            annotation::KATALYST_MEMORY_ENHANCEMENT.into(),
            r#"{"numa_exclusive":"true"}"#.into(),
        );
        let k = KPod::from_pod_state(&d).unwrap();
        assert!(
            !k.numa_binding && !k.numa_exclusive,
            "numa_exclusive means nothing without numa_binding"
        );
        // A malformed enhancement is an error naming it.
        d.annotations.insert(annotation::KATALYST_CPU_ENHANCEMENT.into(), "pool=x".into());
        let err = KPod::from_pod_state(&d).unwrap_err().to_string();
        assert!(err.starts_with("annotation katalyst.kubewharf.io/cpu_enhancement"), "{err}");
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A pod of `level` requesting `cpu_milli` (no usage measured).
    pub fn kpod(name: &str, level: KatalystQoSLevel, cpu_milli: i64) -> KPod {
        KPod {
            uid: format!("uid-{name}"),
            key: format!("ns/{name}"),
            level,
            numa_binding: level == KatalystQoSLevel::DedicatedCores,
            numa_exclusive: false,
            pool: DEFAULT_SHARED_POOL.to_string(),
            cpu_request_milli: cpu_milli,
            cpu_limit_milli: cpu_milli,
            memory_request: 0,
            priority: 0,
            reclaim_allowed: true,
            usage: PodUsage::default(),
        }
    }

    /// A shared pod using `usage` cores.
    pub fn shared(name: &str, cpu_milli: i64, usage: f64) -> KPod {
        let mut p = kpod(name, KatalystQoSLevel::SharedCores, cpu_milli);
        p.usage.cpu = Some(usage);
        p
    }

    /// A dedicated, NUMA-bound pod (exclusive or not).
    pub fn dedicated(name: &str, cpu_milli: i64, exclusive: bool) -> KPod {
        let mut p = kpod(name, KatalystQoSLevel::DedicatedCores, cpu_milli);
        p.numa_exclusive = exclusive;
        p
    }
}
