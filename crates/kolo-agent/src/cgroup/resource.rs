//! The cgroup resource registry (spec §0.3, §7.1): every resource is keyed
//! by its cgroup v1 file name and knows its v1 subsystem, its v2 file, the
//! value conversion between the two (`cpu.shares` ↔ `cpu.weight`, `-1` ↔
//! `max`, the two fields of `cpu.max`), its write-time range and whether the
//! executor merges it top-down (§7.2).
//!
//! Values handed to the executor are always in the v1 domain (shares, quota
//! in µs, `-1` or [`Value::Max`] for "unlimited"); the registry converts them
//! for v2.

use std::fmt;

use super::error::CgroupError;
use super::layout::CgroupVersion;
use kolo_core::cpuset::CpuSet;

/// A cgroup v1 controller (subsystem) — one hierarchy each on v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subsystem {
    /// `cpu`.
    Cpu,
    /// `cpuacct`.
    Cpuacct,
    /// `cpuset`.
    Cpuset,
    /// `memory`.
    Memory,
    /// `blkio`.
    Blkio,
    /// `net_cls`.
    NetCls,
}

impl Subsystem {
    /// Every subsystem.
    pub const ALL: [Subsystem; 6] = [
        Subsystem::Cpu,
        Subsystem::Cpuacct,
        Subsystem::Cpuset,
        Subsystem::Memory,
        Subsystem::Blkio,
        Subsystem::NetCls,
    ];

    /// The kernel's name (as in `/proc/cgroups` and mount options).
    pub fn name(self) -> &'static str {
        match self {
            Subsystem::Cpu => "cpu",
            Subsystem::Cpuacct => "cpuacct",
            Subsystem::Cpuset => "cpuset",
            Subsystem::Memory => "memory",
            Subsystem::Blkio => "blkio",
            Subsystem::NetCls => "net_cls",
        }
    }

    /// Parses the kernel's name.
    pub fn parse(name: &str) -> Option<Subsystem> {
        Subsystem::ALL.into_iter().find(|s| s.name() == name)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A value to write to (or read from) a cgroup file, in the v1 domain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A number (`-1` means unlimited where the resource has a limit).
    Int(i64),
    /// Unlimited (`-1` on v1, `max` on v2).
    Max,
    /// A CPU or memory-node list.
    Cpuset(CpuSet),
    /// Anything else, as the file holds it (blkio lines).
    Text(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Max => f.write_str("max"),
            Value::Cpuset(set) => write!(f, "{set}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// `memory.limit_in_bytes` at or above this reads as unlimited on v1 (the
/// kernel shows `PAGE_COUNTER_MAX` pages as 0x7FFFFFFFFFFFF000).
pub const MEMORY_UNLIMITED_V1: i64 = 0x7FFF_FFFF_FFFF_F000;
/// The CFS base period, µs.
pub const CFS_BASE_PERIOD_US: i64 = 100_000;
/// The smallest CFS quota the kernel accepts, µs.
pub const CFS_MIN_QUOTA_US: i64 = 1_000;
/// The largest CFS quota the kernel accepts, µs: `max_cfs_runtime`
/// (`MAX_BW` = 2^44 - 1 µs, kernel/sched/core.c); a larger value fails with
/// `EINVAL`. Every computed quota is clamped to it, so an absurd node
/// capacity or CPU limit never yields a write the kernel refuses (or
/// 2^63-1).
pub const CFS_MAX_QUOTA_US: i64 = (1 << 44) - 1;
/// Smallest `cpu.shares`.
pub const MIN_SHARES: i64 = 2;
/// Largest `cpu.shares`.
pub const MAX_SHARES: i64 = 262_144;
/// Smallest `cpu.weight`.
pub const MIN_WEIGHT: i64 = 1;
/// Largest `cpu.weight`.
pub const MAX_WEIGHT: i64 = 10_000;
/// Memory limits are kept in pages; the registry compares them rounded
/// down to this page size.
pub const PAGE_SIZE: i64 = 4096;

/// `cpu.shares` → `cpu.weight` exactly as the kubelet and Koordinator do:
/// `1 + (shares − 2) × 9999 / 262142` (integer division), clamped to
/// [1, 10000].
pub fn shares_to_weight(shares: i64) -> i64 {
    let shares = shares.clamp(MIN_SHARES, MAX_SHARES);
    (1 + (shares - 2) * 9999 / 262_142).clamp(MIN_WEIGHT, MAX_WEIGHT)
}

/// `cpu.weight` → `cpu.shares`: `(weight − 1) × 262142 / 9999 + 2`, clamped
/// to [2, 262144].
pub fn weight_to_shares(weight: i64) -> i64 {
    let weight = weight.clamp(MIN_WEIGHT, MAX_WEIGHT);
    ((weight - 1) * 262_142 / 9999 + 2).clamp(MIN_SHARES, MAX_SHARES)
}

/// What a resource's file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Statistics; never written.
    ReadOnly,
    /// A number in `[lo, hi]` (v1 range, v2 range); `unlimited`: `-1`/`max`
    /// allowed.
    Int { v1: (i64, i64), v2: (i64, i64), unlimited: bool },
    /// A CPU / node list.
    Cpuset,
    /// A process / thread id to attach (`cgroup.procs`, `tasks`).
    Pid,
    /// Free text (blkio device lines).
    Text,
}

const I64: (i64, i64) = (0, i64::MAX);

macro_rules! resources {
    ($( $(#[$doc:meta])* $variant:ident => ($subsys:ident, $v1:expr, $v2:expr, $kind:expr) ),* $(,)?) => {
        /// A cgroup resource, named after its v1 file (spec §0.3).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Resource {
            $( $(#[$doc])* $variant, )*
        }

        impl Resource {
            /// Every resource.
            pub const ALL: &'static [Resource] = &[ $( Resource::$variant, )* ];
            /// Number of resources.
            pub const COUNT: usize = Resource::ALL.len();

            fn spec(self) -> (Subsystem, Option<&'static str>, Option<&'static str>, Kind) {
                match self {
                    $( Resource::$variant => (Subsystem::$subsys, $v1, $v2, $kind), )*
                }
            }
        }
    };
}

const fn int(v1: (i64, i64), v2: (i64, i64)) -> Kind {
    Kind::Int { v1, v2, unlimited: false }
}

const fn limit(v1: (i64, i64), v2: (i64, i64)) -> Kind {
    Kind::Int { v1, v2, unlimited: true }
}

resources! {
    /// `cpu.shares` ↔ `cpu.weight`.
    CpuShares => (Cpu, Some("cpu.shares"), Some("cpu.weight"), int((MIN_SHARES, MAX_SHARES), (MIN_SHARES, MAX_SHARES))),
    /// `cpu.cfs_quota_us` ↔ `cpu.max` (first field); `-1` ↔ `max`.
    CpuCfsQuota => (Cpu, Some("cpu.cfs_quota_us"), Some("cpu.max"), limit((CFS_MIN_QUOTA_US, i64::MAX), (CFS_MIN_QUOTA_US, i64::MAX))),
    /// `cpu.cfs_period_us` ↔ `cpu.max` (second field).
    CpuCfsPeriod => (Cpu, Some("cpu.cfs_period_us"), Some("cpu.max"), int((1_000, 1_000_000), (1_000, 1_000_000))),
    /// `cpu.cfs_burst_us` ↔ `cpu.max.burst`.
    CpuCfsBurst => (Cpu, Some("cpu.cfs_burst_us"), Some("cpu.max.burst"), int((0, 100 * 10 * CFS_BASE_PERIOD_US), I64)),
    /// `cpu.bvt_warp_ns` (Alibaba Cloud Linux group identity).
    CpuBvtWarpNs => (Cpu, Some("cpu.bvt_warp_ns"), Some("cpu.bvt_warp_ns"), int((-1, 2), (-1, 2))),
    /// `cpu.idle` (SCHED_IDLE group, 5.15+).
    CpuIdle => (Cpu, Some("cpu.idle"), Some("cpu.idle"), int((0, 1), (0, 1))),
    /// `cpu.stat` (throttling counters).
    CpuStat => (Cpu, Some("cpu.stat"), Some("cpu.stat"), Kind::ReadOnly),
    /// `cpuacct.usage` ↔ `cpu.stat` `usage_usec`.
    CpuacctUsage => (Cpuacct, Some("cpuacct.usage"), Some("cpu.stat"), Kind::ReadOnly),
    /// `cpuacct.stat` ↔ `cpu.stat`.
    CpuacctStat => (Cpuacct, Some("cpuacct.stat"), Some("cpu.stat"), Kind::ReadOnly),
    /// `cpu.pressure` (v2; v1 only on kernels that add it to cpuacct).
    CpuPressure => (Cpuacct, Some("cpu.pressure"), Some("cpu.pressure"), Kind::ReadOnly),
    /// `memory.pressure`.
    MemoryPressure => (Cpuacct, Some("memory.pressure"), Some("memory.pressure"), Kind::ReadOnly),
    /// `io.pressure`.
    IoPressure => (Cpuacct, Some("io.pressure"), Some("io.pressure"), Kind::ReadOnly),
    /// `tasks` ↔ `cgroup.threads`.
    Tasks => (Cpu, Some("tasks"), Some("cgroup.threads"), Kind::Pid),
    /// `cgroup.procs`.
    CgroupProcs => (Cpu, Some("cgroup.procs"), Some("cgroup.procs"), Kind::Pid),
    /// `cpuset.cpus` (typed reads on v2 use `cpuset.cpus.effective`).
    CpusetCpus => (Cpuset, Some("cpuset.cpus"), Some("cpuset.cpus"), Kind::Cpuset),
    /// `cpuset.mems` (typed reads on v2 use `cpuset.mems.effective`).
    CpusetMems => (Cpuset, Some("cpuset.mems"), Some("cpuset.mems"), Kind::Cpuset),
    /// `memory.limit_in_bytes` ↔ `memory.max`; `-1` ↔ `max`.
    MemoryLimit => (Memory, Some("memory.limit_in_bytes"), Some("memory.max"), limit(I64, I64)),
    /// `memory.usage_in_bytes` ↔ `memory.current`.
    MemoryUsage => (Memory, Some("memory.usage_in_bytes"), Some("memory.current"), Kind::ReadOnly),
    /// `memory.stat`.
    MemoryStat => (Memory, Some("memory.stat"), Some("memory.stat"), Kind::ReadOnly),
    /// `memory.numa_stat`.
    MemoryNumaStat => (Memory, Some("memory.numa_stat"), Some("memory.numa_stat"), Kind::ReadOnly),
    /// `memory.min`.
    MemoryMin => (Memory, Some("memory.min"), Some("memory.min"), limit(I64, I64)),
    /// `memory.low`.
    MemoryLow => (Memory, Some("memory.low"), Some("memory.low"), limit(I64, I64)),
    /// `memory.high`.
    MemoryHigh => (Memory, Some("memory.high"), Some("memory.high"), limit(I64, I64)),
    /// `memory.wmark_ratio` (Alibaba Cloud Linux).
    MemoryWmarkRatio => (Memory, Some("memory.wmark_ratio"), Some("memory.wmark_ratio"), int((0, 100), (0, 100))),
    /// `memory.wmark_scale_factor`.
    MemoryWmarkScaleFactor => (Memory, Some("memory.wmark_scale_factor"), Some("memory.wmark_scale_factor"), int((1, 1000), (1, 1000))),
    /// `memory.wmark_min_adj`.
    MemoryWmarkMinAdj => (Memory, Some("memory.wmark_min_adj"), Some("memory.wmark_min_adj"), int((-25, 50), (-25, 50))),
    /// `memory.priority`.
    MemoryPriority => (Memory, Some("memory.priority"), Some("memory.priority"), int((0, 12), (0, 12))),
    /// `memory.use_priority_oom`.
    MemoryUsePriorityOom => (Memory, Some("memory.use_priority_oom"), Some("memory.use_priority_oom"), int((0, 1), (0, 1))),
    /// `memory.oom.group`.
    MemoryOomGroup => (Memory, Some("memory.oom.group"), Some("memory.oom.group"), int((0, 1), (0, 1))),
    /// `memory.idle_page_stats` (kidled; v1 only).
    MemoryIdlePageStats => (Memory, Some("memory.idle_page_stats"), None, Kind::ReadOnly),
    /// `memory.pagecache_limit.enable` (v2 only, Alibaba Cloud Linux).
    MemoryPagecacheLimitEnable => (Memory, None, Some("memory.pagecache_limit.enable"), int((0, 1), (0, 1))),
    /// `memory.pagecache_limit.size`.
    MemoryPagecacheLimitSize => (Memory, None, Some("memory.pagecache_limit.size"), int(I64, I64)),
    /// `memory.pagecache_limit.sync`.
    MemoryPagecacheLimitSync => (Memory, None, Some("memory.pagecache_limit.sync"), int((0, 1), (0, 1))),
    /// `blkio.throttle.read_bps_device` (v1 only).
    BlkioReadBps => (Blkio, Some("blkio.throttle.read_bps_device"), None, Kind::Text),
    /// `blkio.throttle.write_bps_device` (v1 only).
    BlkioWriteBps => (Blkio, Some("blkio.throttle.write_bps_device"), None, Kind::Text),
    /// `blkio.throttle.read_iops_device` (v1 only).
    BlkioReadIops => (Blkio, Some("blkio.throttle.read_iops_device"), None, Kind::Text),
    /// `blkio.throttle.write_iops_device` (v1 only).
    BlkioWriteIops => (Blkio, Some("blkio.throttle.write_iops_device"), None, Kind::Text),
    /// `blkio.cost.weight` (v1 only).
    BlkioCostWeight => (Blkio, Some("blkio.cost.weight"), None, int((1, 100), (1, 100))),
    /// `blkio.cost.qos` (v1 only).
    BlkioCostQos => (Blkio, Some("blkio.cost.qos"), None, Kind::Text),
    /// `blkio.cost.model` (v1 only).
    BlkioCostModel => (Blkio, Some("blkio.cost.model"), None, Kind::Text),
    /// `net_cls.classid`.
    NetClsClassid => (NetCls, Some("net_cls.classid"), Some("net_cls.classid"), int((0, u32::MAX as i64), (0, u32::MAX as i64))),
}

impl Resource {
    /// The v1 file name (the resource's key), or the v2 name for v2-only
    /// resources.
    pub fn name(self) -> &'static str {
        let (_, v1, v2, _) = self.spec();
        v1.or(v2).unwrap_or("?")
    }

    /// The v1 subsystem whose hierarchy holds the file.
    pub fn subsystem(self) -> Subsystem {
        self.spec().0
    }

    /// The file written (and compared) for this resource, or `None` where
    /// the version has no such file.
    pub fn file(self, version: CgroupVersion) -> Option<&'static str> {
        let (_, v1, v2, _) = self.spec();
        match version {
            CgroupVersion::V1 => v1,
            CgroupVersion::V2 => v2,
        }
    }

    /// The file typed reads use: like [`Resource::file`], except that v2
    /// cpuset reads use the `.effective` files.
    pub fn read_file(self, version: CgroupVersion) -> Option<&'static str> {
        match (self, version) {
            (Resource::CpusetCpus, CgroupVersion::V2) => Some("cpuset.cpus.effective"),
            (Resource::CpusetMems, CgroupVersion::V2) => Some("cpuset.mems.effective"),
            _ => self.file(version),
        }
    }

    /// Whether the executor may write it.
    pub fn is_writable(self) -> bool {
        self.spec().3 != Kind::ReadOnly
    }

    /// Whether the executor merges it top-down before writing the real
    /// values bottom-up (spec §7.1: cfs quota, memory.min/low/high, cpuset;
    /// kolo adds `memory.limit_in_bytes` and `cpuset.mems`, which the kernel
    /// constrains the same way — growing parents first and shrinking
    /// children first is never worse than Koordinator's plain write).
    pub fn is_mergeable(self) -> bool {
        matches!(
            self,
            Resource::CpuCfsQuota
                | Resource::MemoryMin
                | Resource::MemoryLow
                | Resource::MemoryHigh
                | Resource::MemoryLimit
                | Resource::CpusetCpus
                | Resource::CpusetMems
        )
    }

    fn invalid(self, value: &Value, reason: impl Into<String>) -> CgroupError {
        CgroupError::InvalidValue {
            resource: self,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Checks a v1-domain value against the resource's write-time range and
    /// returns it normalised (`-1` / `i64::MAX` → [`Value::Max`] where
    /// unlimited is allowed; memory sizes rounded down to whole pages).
    pub fn validate(self, version: CgroupVersion, value: &Value) -> Result<Value, CgroupError> {
        let kind = self.spec().3;
        match (kind, value) {
            (Kind::ReadOnly, _) => Err(self.invalid(value, "read-only statistics file")),
            (Kind::Int { unlimited: true, .. }, Value::Max) => Ok(Value::Max),
            (Kind::Int { v1, v2, unlimited }, Value::Int(n)) => {
                let n = *n;
                if unlimited && (n == -1 || n == i64::MAX) {
                    return Ok(Value::Max);
                }
                if self == Resource::MemoryLimit && n >= MEMORY_UNLIMITED_V1 {
                    return Ok(Value::Max);
                }
                let (lo, hi) = match version {
                    CgroupVersion::V1 => v1,
                    CgroupVersion::V2 => v2,
                };
                if n < lo || n > hi {
                    let unl = if unlimited { " or -1 (unlimited)" } else { "" };
                    return Err(self.invalid(value, format!("outside [{lo}, {hi}]{unl}")));
                }
                if self.is_memory_size() {
                    return Ok(Value::Int(n / PAGE_SIZE * PAGE_SIZE));
                }
                Ok(Value::Int(n))
            }
            (Kind::Cpuset, Value::Cpuset(_)) => Ok(value.clone()),
            (Kind::Cpuset, Value::Text(s)) => {
                CpuSet::parse(s).map(Value::Cpuset).map_err(|e| self.invalid(value, e.to_string()))
            }
            (Kind::Pid, Value::Int(n)) if *n >= 1 => Ok(value.clone()),
            (Kind::Pid, _) => Err(self.invalid(value, "not a process id")),
            (Kind::Text, Value::Text(s)) if !s.contains('\0') => Ok(value.clone()),
            (Kind::Int { .. }, _) => Err(self.invalid(value, "not a number")),
            (Kind::Cpuset, _) => Err(self.invalid(value, "not a cpu list")),
            (Kind::Text, _) => Err(self.invalid(value, "not text")),
        }
    }

    fn is_memory_size(self) -> bool {
        matches!(
            self,
            Resource::MemoryLimit
                | Resource::MemoryMin
                | Resource::MemoryLow
                | Resource::MemoryHigh
        )
    }

    /// Converts a validated v1-domain value to what the file of `version`
    /// holds (v2 `cpu.shares` → weight); compare the result with
    /// [`Resource::parse_file`].
    pub fn to_file_value(self, version: CgroupVersion, value: Value) -> Value {
        match (self, version, value) {
            (Resource::CpuShares, CgroupVersion::V2, Value::Int(shares)) => {
                Value::Int(shares_to_weight(shares))
            }
            (_, _, value) => value,
        }
    }

    /// Parses a file's content (of `version`) in the file's own domain:
    /// `max`, `-1` and the v1 memory sentinel become [`Value::Max`]; the
    /// fields of `cpu.max` are picked apart. Errors describe the content.
    pub fn parse_file(self, version: CgroupVersion, content: &str) -> Result<Value, String> {
        let text = content.trim();
        match self.spec().3 {
            Kind::Cpuset => CpuSet::parse(text).map(Value::Cpuset).map_err(|e| e.to_string()),
            Kind::Text | Kind::Pid | Kind::ReadOnly => Ok(Value::Text(text.to_string())),
            Kind::Int { unlimited, .. } => {
                let field = match (self, version) {
                    (Resource::CpuCfsQuota, CgroupVersion::V2) => cpu_max_field(text, 0)?,
                    (Resource::CpuCfsPeriod, CgroupVersion::V2) => cpu_max_field(text, 1)?,
                    _ => text,
                };
                if unlimited && (field == "max" || field == "-1") {
                    return Ok(Value::Max);
                }
                let n: i64 = field
                    .parse()
                    .map_err(|_| format!("{:?} is not a number", super::error::cut(field)))?;
                if unlimited
                    && (n == i64::MAX
                        || (self == Resource::MemoryLimit && n >= MEMORY_UNLIMITED_V1))
                {
                    return Ok(Value::Max);
                }
                Ok(Value::Int(n))
            }
        }
    }

    /// Converts a file-domain value back to the v1 domain (v2 weight →
    /// shares).
    pub fn from_file_value(self, version: CgroupVersion, value: Value) -> Value {
        match (self, version, value) {
            (Resource::CpuShares, CgroupVersion::V2, Value::Int(weight)) => {
                Value::Int(weight_to_shares(weight))
            }
            (_, _, value) => value,
        }
    }

    /// Whether the file's current value (from [`Resource::parse_file`])
    /// already is the target (from [`Resource::to_file_value`]): cpusets as
    /// sets, a pid as "already attached", text ignoring surrounding space.
    pub fn is_current(self, current: &Value, target: &Value) -> bool {
        match (self.spec().3, current, target) {
            (Kind::Pid, Value::Text(procs), Value::Int(pid)) => {
                procs.lines().any(|l| l.trim().parse::<i64>() == Ok(*pid))
            }
            (Kind::Text, Value::Text(a), Value::Text(b)) => a.trim() == b.trim(),
            _ => current == target,
        }
    }

    /// The merge step of the top-down pass (spec §7.1): `Some(merged)` if
    /// the file must be loosened before the children are written — the
    /// larger limit (`max` is infinite) or the union of cpusets — and
    /// `None` if the current value already is at least as loose.
    pub fn merge(self, current: &Value, target: &Value) -> Option<Value> {
        if !self.is_mergeable() {
            return None;
        }
        match (current, target) {
            (Value::Max, _) => None,
            (Value::Int(_), Value::Max) => Some(Value::Max),
            (Value::Int(old), Value::Int(new)) => (new > old).then_some(Value::Int(*new)),
            (Value::Cpuset(old), Value::Cpuset(new)) => {
                (!new.is_subset(old)).then(|| Value::Cpuset(old.union(new)))
            }
            _ => None,
        }
    }

    /// The string to write for a file-domain value, given the file's
    /// current content (v2 `cpu.max` keeps its other field).
    pub fn render(self, version: CgroupVersion, value: &Value, current: &str) -> String {
        match (self, version) {
            (Resource::CpuCfsQuota, CgroupVersion::V2) => {
                let period = cpu_max_field(current.trim(), 1).unwrap_or("100000");
                format!("{value} {period}")
            }
            (Resource::CpuCfsPeriod, CgroupVersion::V2) => {
                let quota = cpu_max_field(current.trim(), 0).unwrap_or("max");
                format!("{quota} {value}")
            }
            (_, CgroupVersion::V1) if *value == Value::Max => {
                if self.is_memory_size() && self != Resource::MemoryLimit {
                    // memory.min/low/high on v1 kernels that have them take
                    // a number.
                    i64::MAX.to_string()
                } else {
                    "-1".to_string()
                }
            }
            _ => value.to_string(),
        }
    }
}

/// Field `i` of `cpu.max` (`"<quota|max> <period>"`).
fn cpu_max_field(text: &str, i: usize) -> Result<&str, String> {
    let mut fields = text.split_ascii_whitespace();
    let (Some(quota), Some(period), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(format!("{:?} is not \"<quota|max> <period>\"", super::error::cut(text)));
    };
    Ok(if i == 0 { quota } else { period })
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CgroupVersion::{V1, V2};
    use proptest::prelude::*;

    #[test]
    fn shares_weight_table() {
        for (shares, weight) in [
            (0, 1),
            (2, 1),
            (3, 1),
            (28, 1),
            (29, 2),
            (1024, 39),
            (2048, 79),
            (262_143, 9999),
            (262_144, 10_000),
            (1 << 40, 10_000),
        ] {
            assert_eq!(shares_to_weight(shares), weight, "shares {shares}");
        }
        for (weight, shares) in
            [(0, 2), (1, 2), (39, 998), (100, 2597), (10_000, 262_144), (20_000, 262_144)]
        {
            assert_eq!(weight_to_shares(weight), shares, "weight {weight}");
        }
    }

    #[test]
    fn file_names_per_version() {
        let table = [
            (Resource::CpuShares, Subsystem::Cpu, Some("cpu.shares"), Some("cpu.weight")),
            (Resource::CpuCfsQuota, Subsystem::Cpu, Some("cpu.cfs_quota_us"), Some("cpu.max")),
            (Resource::CpuCfsPeriod, Subsystem::Cpu, Some("cpu.cfs_period_us"), Some("cpu.max")),
            (
                Resource::CpuCfsBurst,
                Subsystem::Cpu,
                Some("cpu.cfs_burst_us"),
                Some("cpu.max.burst"),
            ),
            (Resource::CpuacctUsage, Subsystem::Cpuacct, Some("cpuacct.usage"), Some("cpu.stat")),
            (Resource::Tasks, Subsystem::Cpu, Some("tasks"), Some("cgroup.threads")),
            (
                Resource::MemoryLimit,
                Subsystem::Memory,
                Some("memory.limit_in_bytes"),
                Some("memory.max"),
            ),
            (
                Resource::MemoryUsage,
                Subsystem::Memory,
                Some("memory.usage_in_bytes"),
                Some("memory.current"),
            ),
            (
                Resource::MemoryIdlePageStats,
                Subsystem::Memory,
                Some("memory.idle_page_stats"),
                None,
            ),
            (
                Resource::MemoryPagecacheLimitSize,
                Subsystem::Memory,
                None,
                Some("memory.pagecache_limit.size"),
            ),
            (Resource::BlkioCostWeight, Subsystem::Blkio, Some("blkio.cost.weight"), None),
            (Resource::CpuPressure, Subsystem::Cpuacct, Some("cpu.pressure"), Some("cpu.pressure")),
        ];
        for (r, subsys, v1, v2) in table {
            assert_eq!(r.subsystem(), subsys, "{r}");
            assert_eq!(r.file(V1), v1, "{r}");
            assert_eq!(r.file(V2), v2, "{r}");
        }
        assert_eq!(Resource::CpusetCpus.read_file(V2), Some("cpuset.cpus.effective"));
        assert_eq!(Resource::CpusetCpus.read_file(V1), Some("cpuset.cpus"));
        assert_eq!(Resource::COUNT, Resource::ALL.len());
    }

    #[test]
    fn validation_ranges() {
        let ok = |r: Resource, v: CgroupVersion, n: i64| r.validate(v, &Value::Int(n)).is_ok();
        assert!(ok(Resource::CpuShares, V1, 2) && ok(Resource::CpuShares, V1, 262_144));
        assert!(!ok(Resource::CpuShares, V1, 1) && !ok(Resource::CpuShares, V2, 262_145));
        assert!(
            ok(Resource::CpuCfsBurst, V1, 100_000_000)
                && !ok(Resource::CpuCfsBurst, V1, 100_000_001)
        );
        assert!(ok(Resource::CpuCfsBurst, V2, 100_000_001));
        assert!(ok(Resource::CpuBvtWarpNs, V1, -1) && !ok(Resource::CpuBvtWarpNs, V1, 3));
        assert!(ok(Resource::CpuIdle, V2, 1) && !ok(Resource::CpuIdle, V2, 2));
        assert!(!ok(Resource::CpuCfsQuota, V1, 999) && ok(Resource::CpuCfsQuota, V1, 1000));
        assert!(!ok(Resource::CpuCfsPeriod, V1, 999) && !ok(Resource::CpuCfsPeriod, V1, 1_000_001));
        assert!(
            ok(Resource::MemoryWmarkMinAdj, V1, -25) && !ok(Resource::MemoryWmarkMinAdj, V1, 51)
        );
        assert!(!ok(Resource::MemoryWmarkScaleFactor, V1, 0));
        assert!(!ok(Resource::MemoryPriority, V1, 13));
        assert!(!ok(Resource::MemoryHigh, V2, -2));
        assert!(!ok(Resource::CpuStat, V1, 1));
        assert!(!ok(Resource::CgroupProcs, V1, 0) && ok(Resource::CgroupProcs, V1, 1));
        let norm = |r: Resource, n: i64| r.validate(V1, &Value::Int(n)).unwrap();
        assert_eq!(norm(Resource::CpuCfsQuota, -1), Value::Max);
        assert_eq!(norm(Resource::MemoryLimit, -1), Value::Max);
        assert_eq!(norm(Resource::MemoryLimit, MEMORY_UNLIMITED_V1), Value::Max);
        assert_eq!(norm(Resource::MemoryHigh, i64::MAX), Value::Max);
        assert_eq!(norm(Resource::MemoryLimit, 4097), Value::Int(4096));
        assert!(Resource::CpusetCpus.validate(V1, &Value::Text("0-1".into())).is_ok());
        assert!(Resource::CpusetCpus.validate(V1, &Value::Int(1)).is_err());
        assert!(Resource::CpuShares.validate(V1, &Value::Max).is_err());
        let err = Resource::CpuShares.validate(V1, &Value::Int(1)).unwrap_err().to_string();
        assert!(err.contains("cpu.shares") && err.contains("[2, 262144]"), "{err}");
    }

    #[test]
    fn parse_and_render_per_version() {
        let p = |r: Resource, v, s: &str| r.parse_file(v, s).unwrap();
        assert_eq!(p(Resource::CpuCfsQuota, V1, "-1\n"), Value::Max);
        assert_eq!(p(Resource::CpuCfsQuota, V2, "max 100000\n"), Value::Max);
        assert_eq!(p(Resource::CpuCfsQuota, V2, "50000 100000\n"), Value::Int(50_000));
        assert_eq!(p(Resource::CpuCfsPeriod, V2, "max 20000\n"), Value::Int(20_000));
        assert_eq!(p(Resource::MemoryLimit, V1, "9223372036854771712\n"), Value::Max);
        assert_eq!(p(Resource::MemoryLimit, V2, "max\n"), Value::Max);
        assert_eq!(p(Resource::MemoryHigh, V2, "max\n"), Value::Max);
        assert_eq!(p(Resource::CpuShares, V2, "39\n"), Value::Int(39));
        assert!(Resource::CpuCfsQuota.parse_file(V2, "garbage").is_err());
        assert!(Resource::CpuShares.parse_file(V1, "lots").is_err());
        assert_eq!(Resource::CpuShares.from_file_value(V2, Value::Int(39)), Value::Int(998));
        assert_eq!(Resource::CpuShares.to_file_value(V2, Value::Int(1024)), Value::Int(39));
        assert_eq!(Resource::CpuShares.to_file_value(V1, Value::Int(1024)), Value::Int(1024));

        assert_eq!(Resource::CpuCfsQuota.render(V2, &Value::Max, "50000 100000\n"), "max 100000");
        assert_eq!(
            Resource::CpuCfsQuota.render(V2, &Value::Int(20_000), "max 50000\n"),
            "20000 50000"
        );
        assert_eq!(
            Resource::CpuCfsPeriod.render(V2, &Value::Int(50_000), "20000 100000\n"),
            "20000 50000"
        );
        assert_eq!(Resource::CpuCfsQuota.render(V1, &Value::Max, "50000\n"), "-1");
        assert_eq!(Resource::MemoryLimit.render(V1, &Value::Max, "1\n"), "-1");
        assert_eq!(Resource::MemoryHigh.render(V1, &Value::Max, "1\n"), i64::MAX.to_string());
        assert_eq!(Resource::MemoryLimit.render(V2, &Value::Max, "1\n"), "max");
    }

    #[test]
    fn merge_conditions() {
        let cs = |s| Value::Cpuset(CpuSet::parse(s).unwrap());
        let q = Resource::CpuCfsQuota;
        assert_eq!(q.merge(&Value::Int(50), &Value::Int(100)), Some(Value::Int(100)));
        assert_eq!(q.merge(&Value::Int(100), &Value::Int(50)), None);
        assert_eq!(q.merge(&Value::Int(100), &Value::Max), Some(Value::Max));
        assert_eq!(q.merge(&Value::Max, &Value::Int(100)), None);
        let c = Resource::CpusetCpus;
        assert_eq!(c.merge(&cs("0-3"), &cs("1-2")), None);
        assert_eq!(c.merge(&cs("0-3"), &cs("0-3")), None);
        assert_eq!(c.merge(&cs("0-1"), &cs("1-2")), Some(cs("0-2")));
        assert_eq!(Resource::CpuShares.merge(&Value::Int(2), &Value::Int(1024)), None);
        assert!(Resource::CgroupProcs.is_current(&Value::Text("1\n42\n".into()), &Value::Int(42)));
        assert!(
            !Resource::CgroupProcs.is_current(&Value::Text("1\n420\n".into()), &Value::Int(42))
        );
    }

    proptest! {
        #[test]
        fn conversions_stay_in_range_and_are_monotonic(a in any::<i64>(), b in any::<i64>()) {
            let (wa, wb) = (shares_to_weight(a), shares_to_weight(b));
            prop_assert!((MIN_WEIGHT..=MAX_WEIGHT).contains(&wa));
            prop_assert!((MIN_SHARES..=MAX_SHARES).contains(&weight_to_shares(a)));
            if a <= b {
                prop_assert!(wa <= wb);
                prop_assert!(weight_to_shares(a) <= weight_to_shares(b));
            }
        }

        #[test]
        fn weight_round_trips_within_one(w in MIN_WEIGHT..=MAX_WEIGHT) {
            // weight → shares → weight may lose one step (39 → 998 → 38):
            // that is why the executor compares v2 values as weights.
            let back = shares_to_weight(weight_to_shares(w));
            prop_assert!(back == w || back == w - 1);
        }

        #[test]
        fn shares_round_trip_within_one_weight_step(s in MIN_SHARES..=MAX_SHARES) {
            let back = weight_to_shares(shares_to_weight(s));
            prop_assert!((back - s).abs() <= 262_142 / 9999 + 1);
        }

        #[test]
        fn validators_never_panic(n in any::<i64>(), text in "\\PC{0,20}") {
            for &r in Resource::ALL {
                for v in [CgroupVersion::V1, CgroupVersion::V2] {
                    let _ = r.validate(v, &Value::Int(n));
                    let _ = r.validate(v, &Value::Text(text.clone()));
                    let _ = r.parse_file(v, &text);
                }
            }
        }
    }
}
