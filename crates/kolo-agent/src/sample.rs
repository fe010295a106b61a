//! One round of measurements, as the collectors produce them and the store
//! and NodeMetric builder consume them. CPU in cores (f64), memory in bytes.

use kolo_core::clock::Timestamp;

/// Node-wide usage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeSample {
    /// When it was taken.
    pub at: Timestamp,
    /// CPU in use, cores (user + nice + system + irq + softirq).
    pub cpu_cores: f64,
    /// Memory in use without page cache (MemTotal − MemAvailable), bytes.
    pub memory_bytes: u64,
    /// Memory in use with page cache (MemTotal − MemFree), bytes.
    pub memory_with_cache_bytes: u64,
}

/// One container's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSample {
    /// Container name.
    pub name: String,
    /// Runtime ID (without the `runtime://` prefix).
    pub id: String,
    /// CPU in use, cores.
    pub cpu_cores: f64,
    /// Memory without page cache, bytes.
    pub memory_bytes: u64,
}

/// One pod's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSample {
    /// When it was taken.
    pub at: Timestamp,
    /// Pod UID.
    pub uid: String,
    /// CPU in use, cores.
    pub cpu_cores: f64,
    /// Memory without page cache, bytes.
    pub memory_bytes: u64,
    /// Memory with page cache, bytes.
    pub memory_with_cache_bytes: u64,
    /// Its containers (those measured this round).
    pub containers: Vec<ContainerSample>,
}

/// Pressure stall information of one resource: share of time (percent) some
/// or all tasks were stalled, averaged over 10 s.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pressure {
    /// `some avg10`.
    pub some_avg10: f64,
    /// `full avg10` (`None` where the kernel has no `full` line, e.g. node CPU
    /// before 5.13).
    pub full_avg10: Option<f64>,
}

/// PSI of a node or cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiSample {
    /// CPU pressure.
    pub cpu: Pressure,
    /// Memory pressure.
    pub memory: Pressure,
    /// I/O pressure.
    pub io: Pressure,
}
