//! `NodeSLO` (`slo.koordinator.sh/v1alpha1`, cluster-scoped): the QoS
//! configuration of one node, named after the node. The control plane
//! computes it from the `slo-controller-config` ConfigMap; the node agent
//! merges it over its defaults and applies it.
//!
//! Reference: Koordinator `apis/slo/v1alpha1/nodeslo_types.go`,
//! `host_application.go`, and `config/crd/bases/slo.koordinator.sh_nodeslos.yaml`.
//!
//! Every field of the reference is modelled, including fields that only
//! exist in some reference versions (the union of them), so that a NodeSLO
//! dumped from a Koordinator cluster round-trips without loss. All fields are
//! optional: absent means "use the default".

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{JsonObject, int_or_string_schema, preserved_object_schema, quantity_schema};

/// The QoS configuration of a node.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "slo.koordinator.sh",
    version = "v1alpha1",
    kind = "NodeSLO",
    plural = "nodeslos",
    status = "NodeSLOStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "The QoS configuration of one node (named after the node)."
)]
pub struct NodeSLOSpec {
    /// Thresholds that limit or evict BE pods when the node is overloaded.
    #[serde(
        default,
        rename = "resourceUsedThresholdWithBE",
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_used_threshold_with_be: Option<ResourceThresholdStrategy>,
    /// Per-QoS-class cgroup/resctrl/network settings.
    #[serde(default, rename = "resourceQOSStrategy", skip_serializing_if = "Option::is_none")]
    pub resource_qos_strategy: Option<ResourceQOSStrategy>,
    /// CPU burst configuration.
    #[serde(default, rename = "cpuBurstStrategy", skip_serializing_if = "Option::is_none")]
    pub cpu_burst_strategy: Option<CPUBurstStrategy>,
    /// Node-wide kernel settings.
    #[serde(default, rename = "systemStrategy", skip_serializing_if = "Option::is_none")]
    pub system_strategy: Option<SystemStrategy>,
    /// Third-party extensions, kept as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object_schema")]
    pub extensions: Option<JsonObject>,
    /// QoS management of out-of-band (non-pod) applications.
    #[serde(default, rename = "hostApplications", skip_serializing_if = "Option::is_none")]
    pub host_applications: Option<Vec<HostApplicationSpec>>,
}

/// NodeSLO has an (empty) status, with a status subresource as in the reference.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NodeSLOStatus {}

/// Thresholds for suppressing and evicting lower-priority pods.
///
/// The `cpuSuppressPolicy` values are `cpuset` and `cfsQuota`; the
/// `cpuEvictPolicy` values are `evictByRealLimit` and `evictByAllocatable`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceThresholdStrategy {
    /// Whether the strategy is on (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// BE CPU suppression threshold, percent of node CPU (default 65).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cpu_suppress_threshold_percent: Option<i64>,
    /// Lower bound of the CPU left to BE pods when suppressing, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cpu_suppress_min_percent: Option<i64>,
    /// How BE CPU is suppressed: `cpuset` or `cfsQuota`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_suppress_policy: Option<String>,
    /// Memory usage percent above which BE pods are evicted (default 70).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub memory_evict_threshold_percent: Option<i64>,
    /// Memory usage percent eviction brings the node back under
    /// (default: threshold minus 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub memory_evict_lower_percent: Option<i64>,
    /// Memory allocated-to-allocatable percent above which pods are evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_allocatable_evict_threshold_percent: Option<i64>,
    /// Memory allocated-to-allocatable percent eviction brings the node back under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_allocatable_evict_lower_percent: Option<i64>,
    /// BE CPU satisfaction (real limit / request) percent at which eviction stops.
    #[serde(
        default,
        rename = "cpuEvictBESatisfactionUpperPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_evict_be_satisfaction_upper_percent: Option<i64>,
    /// BE CPU satisfaction percent below which eviction may start.
    #[serde(
        default,
        rename = "cpuEvictBESatisfactionLowerPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_evict_be_satisfaction_lower_percent: Option<i64>,
    /// BE CPU usage (of its real limit) percent required before evicting.
    #[serde(
        default,
        rename = "cpuEvictBEUsageThresholdPercent",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_evict_be_usage_threshold_percent: Option<i64>,
    /// Window, in seconds, of the CPU usage average used for eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_evict_time_window_seconds: Option<i64>,
    /// Node CPU usage percent above which pods are evicted (CPUEvict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cpu_evict_threshold_percent: Option<i64>,
    /// Node CPU usage percent eviction brings the node back under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cpu_evict_lower_percent: Option<i64>,
    /// CPU allocated-to-allocatable percent above which pods are evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_allocatable_evict_threshold_percent: Option<i64>,
    /// CPU allocated-to-allocatable percent eviction brings the node back under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_allocatable_evict_lower_percent: Option<i64>,
    /// BE CPU eviction policy: `evictByRealLimit` or `evictByAllocatable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_evict_policy: Option<String>,
    /// Highest pod priority the usage-based evictions may evict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evict_enabled_priority_threshold: Option<i32>,
    /// Highest pod priority the allocation-based evictions may evict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocatable_evict_priority_threshold: Option<i32>,
}

/// QoS settings per Koordinator QoS class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQOSStrategy {
    /// Which mechanisms implement CPU and network QoS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<ResourceQOSPolicies>,
    /// Settings of LSR pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsr_class: Option<ResourceQOS>,
    /// Settings of LS pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ls_class: Option<ResourceQOS>,
    /// Settings of BE pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub be_class: Option<ResourceQOS>,
    /// Settings of SYSTEM pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_class: Option<ResourceQOS>,
    /// Settings of the root cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_root: Option<ResourceQOS>,
}

/// Mechanism choices for CPU and network QoS.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceQOSPolicies {
    /// `groupIdentity` (default) or `coreSched`.
    #[serde(default, rename = "cpuPolicy", skip_serializing_if = "Option::is_none")]
    pub cpu_policy: Option<String>,
    /// `tc` (default) or `terway-qos`.
    #[serde(default, rename = "netQOSPolicy", skip_serializing_if = "Option::is_none")]
    pub net_qos_policy: Option<String>,
}

/// The QoS settings of one class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceQOS {
    /// CPU QoS.
    #[serde(default, rename = "cpuQOS", skip_serializing_if = "Option::is_none")]
    pub cpu_qos: Option<CPUQOSCfg>,
    /// Memory QoS.
    #[serde(default, rename = "memoryQOS", skip_serializing_if = "Option::is_none")]
    pub memory_qos: Option<MemoryQOSCfg>,
    /// Block I/O QoS.
    #[serde(default, rename = "blkioQOS", skip_serializing_if = "Option::is_none")]
    pub blkio_qos: Option<BlkIOQOSCfg>,
    /// LLC and memory bandwidth (resctrl) QoS.
    #[serde(default, rename = "resctrlQOS", skip_serializing_if = "Option::is_none")]
    pub resctrl_qos: Option<ResctrlQOSCfg>,
    /// Network bandwidth QoS.
    #[serde(default, rename = "networkQOS", skip_serializing_if = "Option::is_none")]
    pub network_qos: Option<NetworkQOSCfg>,
}

/// CPU QoS of a class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CPUQOSCfg {
    /// Whether CPU QoS is on for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Group identity (bvt) value, -1..2; used with the `groupIdentity` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_identity: Option<i64>,
    /// `cpu.idle` value (1 = SCHED_IDLE); used with the `coreSched` policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_idle: Option<i64>,
    /// Whether the class may expel idle pods at SMT level (`coreSched` policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_expeller: Option<bool>,
}

/// Memory QoS (memcg) of a class. Percentages are of the pod's request or limit.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryQOSCfg {
    /// Whether memory QoS is on for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// `memory.min` as a percent of the memory request (0 = off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_limit_percent: Option<i64>,
    /// `memory.low` as a percent of the memory request (0 = off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub low_limit_percent: Option<i64>,
    /// Factor placing `memory.high` between request and limit, percent (0 = off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub throttling_percent: Option<i64>,
    /// `memory.wmark_ratio` (Anolis OS), 0..100 (0 = off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub wmark_ratio: Option<i64>,
    /// `memory.wmark_scale_factor` (Anolis OS), permill, 1..1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub wmark_scale_permill: Option<i64>,
    /// `memory.wmark_min_adj` (Anolis OS), -25..50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -25, max = 50))]
    pub wmark_min_adj: Option<i64>,
    /// `memory.pagecache_limit.enable` (Anolis OS), 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache_limit_enable: Option<i64>,
    /// `memory.pagecache_limit.sync` (Anolis OS), 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache_limit_sync: Option<i64>,
    /// `memory.pagecache_limit.size` (Anolis OS), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache_limit_size: Option<i64>,
    /// `memory.priority_enable`, 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_enable: Option<i64>,
    /// `memory.priority`, 0..12.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// `memory.oom.group`, 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kill_group: Option<i64>,
}

/// Block I/O QoS of a class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BlkIOQOSCfg {
    /// Whether block I/O QoS is on for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Per-block-device settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<BlockCfg>>,
}

/// Settings of one block device, volume group or pod volume.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BlockCfg {
    /// Device path, volume group or volume name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `device`, `volumegroup` or `podvolume`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub block_type: Option<String>,
    /// The limits.
    #[serde(default, rename = "ioCfg", skip_serializing_if = "Option::is_none")]
    pub io_cfg: Option<IOCfg>,
}

/// Block I/O limits and blk-iocost model; 0 disables a limit.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct IOCfg {
    /// Read IOPS limit.
    #[serde(default, rename = "readIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub read_iops: Option<i64>,
    /// Write IOPS limit.
    #[serde(default, rename = "writeIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub write_iops: Option<i64>,
    /// Read throughput limit, bytes per second.
    #[serde(default, rename = "readBPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub read_bps: Option<i64>,
    /// Write throughput limit, bytes per second.
    #[serde(default, rename = "writeBPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub write_bps: Option<i64>,
    /// blk-iocost weight of the group, 1..100 (default 100).
    #[serde(default, rename = "ioWeightPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub io_weight_percent: Option<i64>,
    /// blk-iocost read latency target, microseconds (root class only).
    #[serde(default, rename = "readLatency", skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<i64>,
    /// blk-iocost write latency target, microseconds (root class only).
    #[serde(default, rename = "writeLatency", skip_serializing_if = "Option::is_none")]
    pub write_latency: Option<i64>,
    /// blk-iocost read latency percentile, 0..100.
    #[serde(default, rename = "readLatencyPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub read_latency_percent: Option<i64>,
    /// blk-iocost write latency percentile, 0..100.
    #[serde(default, rename = "writeLatencyPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub write_latency_percent: Option<i64>,
    /// Whether the blk-iocost cost model below is used (default false).
    #[serde(default, rename = "enableUserModel", skip_serializing_if = "Option::is_none")]
    pub enable_user_model: Option<bool>,
    /// Cost model: read bytes per second.
    #[serde(default, rename = "modelReadBPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_read_bps: Option<i64>,
    /// Cost model: write bytes per second.
    #[serde(default, rename = "modelWriteBPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_write_bps: Option<i64>,
    /// Cost model: sequential read IOPS.
    #[serde(default, rename = "modelReadSeqIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_read_seq_iops: Option<i64>,
    /// Cost model: sequential write IOPS.
    #[serde(default, rename = "modelWriteSeqIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_write_seq_iops: Option<i64>,
    /// Cost model: random read IOPS.
    #[serde(default, rename = "modelReadRandIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_read_rand_iops: Option<i64>,
    /// Cost model: random write IOPS.
    #[serde(default, rename = "modelWriteRandIOPS", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub model_write_rand_iops: Option<i64>,
}

/// LLC (CAT) and memory bandwidth (MBA) QoS of a class.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResctrlQOSCfg {
    /// Whether resctrl QoS is on for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Start of the LLC ways range, percent.
    #[serde(default, rename = "catRangeStartPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cat_range_start_percent: Option<i64>,
    /// End of the LLC ways range, percent.
    #[serde(default, rename = "catRangeEndPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub cat_range_end_percent: Option<i64>,
    /// Memory bandwidth, percent.
    #[serde(default, rename = "mbaPercent", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub mba_percent: Option<i64>,
}

/// Network bandwidth QoS of a class. Each value is either an integer
/// percentage of the total bandwidth or a bandwidth string such as `50M`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkQOSCfg {
    /// Whether network QoS is on for the class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// Guaranteed ingress bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub ingress_request: Option<IntOrString>,
    /// Maximum ingress bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub ingress_limit: Option<IntOrString>,
    /// Guaranteed egress bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub egress_request: Option<IntOrString>,
    /// Maximum egress bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub egress_limit: Option<IntOrString>,
}

/// CPU burst configuration. `policy` is one of `none`, `cpuBurstOnly`,
/// `cfsQuotaBurstOnly` and `auto`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CPUBurstStrategy {
    /// The burst policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// `cpu.cfs_burst_us` (v2: `cpu.max.burst`) as a percent of the limit,
    /// 0..10000 (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10000))]
    pub cpu_burst_percent: Option<i64>,
    /// Ceiling of the CFS quota scale-up, percent (default 300).
    #[serde(default, rename = "cfsQuotaBurstPercent", skip_serializing_if = "Option::is_none")]
    pub cfs_quota_burst_percent: Option<i64>,
    /// How long a pod may stay scaled up, seconds (default -1: unlimited).
    #[serde(
        default,
        rename = "cfsQuotaBurstPeriodSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub cfs_quota_burst_period_seconds: Option<i64>,
    /// Node CPU usage percent above which quotas are scaled back (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_pool_threshold_percent: Option<i64>,
}

/// Node-wide kernel settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemStrategy {
    /// `vm.min_free_kbytes` = factor × total memory / 10000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_free_kbytes_factor: Option<i64>,
    /// `vm.watermark_scale_factor`, 1..400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_scale_factor: Option<i64>,
    /// `memcg_reaper/reap_background`, 0 or 1.
    #[serde(default, rename = "memcgReapBackGround", skip_serializing_if = "Option::is_none")]
    pub memcg_reap_background: Option<i64>,
    /// `mm/pagecache_limit/enabled` (Anolis OS), 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_cache_limit_enabled: Option<i64>,
    /// `kernel.sched_group_identity_enabled`, 0 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_group_identity_enabled: Option<i64>,
    /// `kernel.sched_idle_saver_wmark`, nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_idle_saver_wmark: Option<i64>,
    /// Extra `sched_features` switches, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_features: Option<BTreeMap<String, bool>>,
    /// Total network bandwidth of the node (Mbps). The reference always
    /// writes it (`"0"` when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "quantity_schema")]
    pub total_network_bandwidth: Option<Quantity>,
}

/// QoS management of one out-of-band application.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostApplicationSpec {
    /// Application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Koordinator priority class of the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Koordinator QoS class of the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<String>,
    /// The application's cgroup; derived from priority and QoS when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_path: Option<CgroupPath>,
    /// QoS strategy of the application (no fields yet in the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<HostApplicationStrategy>,
}

/// The QoS strategy of a host application (empty in the reference).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct HostApplicationStrategy {}

/// The cgroup of an out-of-band application.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CgroupPath {
    /// Base directory: `CgroupRoot`, `Kubepods`, `KubepodsBurstable` or
    /// `KubepodsBesteffort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Parent directory under the base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_dir: Option<String>,
    /// Path relative to the parent directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_path: Option<String>,
}
