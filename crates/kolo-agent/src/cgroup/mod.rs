//! One interface over cgroup v1 and v2 and both kubelet cgroup drivers.
//!
//! * [`layout`]: version, v1 subsystem mount directories and the kubelet's
//!   cgroup driver, detected once from a configurable root;
//! * [`path`]: relative cgroup directories, pod / container directory names
//!   for both drivers, and the validation of pod UIDs and container IDs
//!   before they become path components;
//! * [`resource`]: the v1 ↔ v2 file registry with value conversions and
//!   ranges;
//! * [`features`]: which files this kernel has (cached, logged once);
//! * [`reader`]: typed, allocation-light reads (CPU usage, memory.stat,
//!   cpu.stat, PSI, numa_stat);
//! * [`executor`]: batches of writes in a safe order, skipping values
//!   already set, with a record of what changed;
//! * `CpuSet` (from `kolo_core::cpuset`): CPU lists.
//!
//! [`Cgroups`] ties them together: detect once at start, share it (it is
//! `Sync`), and hand it to the collectors and the executor.

pub mod error;
pub mod executor;
pub mod features;
pub mod layout;
pub mod path;
pub mod reader;
pub mod resource;

#[cfg(test)]
pub(crate) mod tree_tests;

use std::path::PathBuf;

use kolo_api::kube_qos::KubeQoSClass;

pub use error::{CgroupError, PathError};
pub use executor::{
    AppliedWrite, ApplyReport, CgroupWrite, Executor, Phase, SkipReason, SkippedWrite,
};
pub use features::Features;
pub use kolo_core::cpuset::CpuSet;
pub use layout::{CgroupVersion, Layout, LayoutConfig};
pub use path::{CgroupDir, CgroupDriver, ContainerId, PodPaths, Runtime, validate_pod_uid};
pub use reader::{CpuThrottle, MemoryStat, NumaPages, ReadBuf};
pub use resource::{Resource, Subsystem, Value};

use crate::sample::PsiSample;

/// The node's cgroups: the detected [`Layout`] plus the feature cache.
#[derive(Debug)]
pub struct Cgroups {
    layout: Layout,
    features: Features,
}

impl Cgroups {
    /// Detects the layout below `config.root`.
    pub fn detect(config: &LayoutConfig) -> Result<Cgroups, CgroupError> {
        Ok(Cgroups::new(Layout::detect(config)?))
    }

    /// Wraps an already detected layout.
    pub fn new(layout: Layout) -> Cgroups {
        Cgroups { layout, features: Features::new() }
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The cgroup version.
    pub fn version(&self) -> CgroupVersion {
        self.layout.version()
    }

    /// The kubelet's directory names.
    pub fn pod_paths(&self) -> &PodPaths {
        self.layout.pod_paths()
    }

    /// The pod's cgroup directory (UID validated).
    pub fn pod_dir(&self, qos: KubeQoSClass, uid: &str) -> Result<CgroupDir, PathError> {
        self.layout.pod_paths().pod_dir(qos, uid)
    }

    /// A container's cgroup directory (`containerd://<id>`, validated).
    pub fn container_dir(
        &self,
        qos: KubeQoSClass,
        uid: &str,
        container_id: &str,
    ) -> Result<CgroupDir, PathError> {
        let pod = self.pod_dir(qos, uid)?;
        self.layout.pod_paths().container_dir(&pod, &ContainerId::parse(container_id)?)
    }

    /// Whether the kernel has `resource`'s file (cached; logged once when
    /// not).
    pub fn is_supported(&self, resource: Resource) -> bool {
        self.features.is_supported(&self.layout, resource)
    }

    /// The file typed reads of `resource` in `dir` use, or
    /// [`CgroupError::Unsupported`].
    pub fn read_path(&self, dir: &CgroupDir, resource: Resource) -> Result<PathBuf, CgroupError> {
        self.layout
            .read_path(dir, resource)
            .filter(|_| self.is_supported(resource))
            .ok_or(CgroupError::Unsupported { resource, version: self.version() })
    }

    /// An executor over these cgroups.
    pub fn executor(&self) -> Executor<'_> {
        Executor::new(self)
    }

    fn read_with<T>(
        &self,
        dir: &CgroupDir,
        resource: Resource,
        parse: impl FnOnce(CgroupVersion, &str) -> Result<T, String>,
    ) -> Result<T, CgroupError> {
        let path = self.read_path(dir, resource)?;
        let version = self.version();
        ReadBuf::new().parse(&path, |text| parse(version, text))
    }

    /// The current value of a resource, converted to the v1 domain (v2
    /// weight → shares; `max` → [`Value::Max`]).
    pub fn read_value(&self, dir: &CgroupDir, resource: Resource) -> Result<Value, CgroupError> {
        self.read_with(dir, resource, |version, text| {
            resource.parse_file(version, text).map(|v| resource.from_file_value(version, v))
        })
    }

    /// Cumulative CPU time, ns (v1 `cpuacct.usage`, v2 `cpu.stat`
    /// `usage_usec` × 1000).
    pub fn cpu_usage_ns(&self, dir: &CgroupDir) -> Result<u64, CgroupError> {
        self.read_with(dir, Resource::CpuacctUsage, reader::parse_cpu_usage)
    }

    /// `memory.stat`.
    pub fn memory_stat(&self, dir: &CgroupDir) -> Result<MemoryStat, CgroupError> {
        self.read_with(dir, Resource::MemoryStat, reader::parse_memory_stat)
    }

    /// Throttling counters of `cpu.stat`.
    pub fn cpu_throttle(&self, dir: &CgroupDir) -> Result<CpuThrottle, CgroupError> {
        self.read_with(dir, Resource::CpuStat, reader::parse_cpu_throttle)
    }

    /// CFS quota, µs (`None` = unlimited).
    pub fn cfs_quota_us(&self, dir: &CgroupDir) -> Result<Option<i64>, CgroupError> {
        self.read_value(dir, Resource::CpuCfsQuota).map(|v| match v {
            Value::Int(n) => Some(n),
            _ => None,
        })
    }

    /// CFS period, µs.
    pub fn cfs_period_us(&self, dir: &CgroupDir) -> Result<i64, CgroupError> {
        self.read_int(dir, Resource::CpuCfsPeriod)
    }

    /// `cpu.shares` (v2: converted from `cpu.weight`).
    pub fn cpu_shares(&self, dir: &CgroupDir) -> Result<i64, CgroupError> {
        self.read_int(dir, Resource::CpuShares)
    }

    /// Memory limit, bytes (`None` = unlimited).
    pub fn memory_limit(&self, dir: &CgroupDir) -> Result<Option<i64>, CgroupError> {
        self.read_value(dir, Resource::MemoryLimit).map(|v| match v {
            Value::Int(n) => Some(n),
            _ => None,
        })
    }

    fn read_int(&self, dir: &CgroupDir, resource: Resource) -> Result<i64, CgroupError> {
        match self.read_value(dir, resource)? {
            Value::Int(n) => Ok(n),
            other => Err(CgroupError::Parse {
                path: self.read_path(dir, resource)?,
                reason: format!("expected a number, found {other}"),
            }),
        }
    }

    /// The CPUs the cgroup may use (v2: `cpuset.cpus.effective`).
    pub fn cpuset_cpus(&self, dir: &CgroupDir) -> Result<CpuSet, CgroupError> {
        self.read_with(dir, Resource::CpusetCpus, |_, text| {
            CpuSet::parse(text).map_err(|e| e.to_string())
        })
    }

    /// Pressure (PSI avg10) of the cgroup: v2 `cpu.pressure`,
    /// `memory.pressure`, `io.pressure`; on v1 only where the kernel adds
    /// them to cpuacct, otherwise [`CgroupError::Unsupported`].
    pub fn psi(&self, dir: &CgroupDir) -> Result<PsiSample, CgroupError> {
        self.psi_with(&mut ReadBuf::new(), dir)
    }

    /// [`Cgroups::psi`] reading through a caller's buffer.
    pub fn psi_with(&self, buf: &mut ReadBuf, dir: &CgroupDir) -> Result<PsiSample, CgroupError> {
        let mut read = |r| buf.parse(&self.read_path(dir, r)?, reader::parse_psi);
        Ok(PsiSample {
            cpu: read(Resource::CpuPressure)?,
            memory: read(Resource::MemoryPressure)?,
            io: read(Resource::IoPressure)?,
        })
    }

    /// Pages per NUMA node (`memory.numa_stat`).
    pub fn numa_stat(&self, dir: &CgroupDir) -> Result<Vec<NumaPages>, CgroupError> {
        self.read_with(dir, Resource::MemoryNumaStat, reader::parse_numa_stat)
    }
}
