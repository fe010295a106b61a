//! The numbers behind a planned write or eviction, as typed fields: what
//! the `reason` text says in words, for scripts (`kolo agent plan -o
//! json`) and tests to read without parsing it.

use serde::{Deserialize, Serialize};

/// The figures a strategy decided from.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Figures {
    /// No figure beyond the written value (isolation, per-pod limits).
    #[default]
    None,
    /// `cpuSuppress`: the CPU BE pods may use and its terms, milli-cores.
    BeBudget {
        /// Capacity × threshold − non-BE − system (floored by the min
        /// percent; may be negative before it).
        budget_milli: i64,
        /// CPU used by pods that are not BE.
        non_be_milli: i64,
        /// CPU used by the system (at least the reserved CPU).
        system_milli: i64,
        /// The suppression threshold, percent of the node's CPU.
        threshold_percent: i64,
    },
    /// `memoryEvict`: node memory above the threshold.
    MemoryRelease {
        /// Node memory usage, percent of capacity.
        usage_percent: i64,
        /// The eviction threshold, percent.
        threshold_percent: i64,
        /// The level eviction brings usage down to, percent.
        lower_percent: i64,
        /// Bytes the round must release.
        release_target_bytes: i64,
        /// Bytes this pod releases (its memory usage).
        pod_bytes: i64,
    },
    /// `cpuEvict`: BE pods get too little of the CPU they requested.
    CpuRelease {
        /// BE CPU satisfaction: limit / request, percent.
        satisfaction_percent: i64,
        /// Σ BE pods' `batch-cpu` requests, milli.
        be_request_milli: i64,
        /// The CPU BE may really use, milli.
        be_limit_milli: i64,
        /// Σ BE pods' CPU usage (or its window average), milli.
        be_usage_milli: i64,
        /// The satisfaction that triggers eviction, percent.
        lower_percent: i64,
        /// The satisfaction eviction aims for, percent.
        upper_percent: i64,
        /// `batch-cpu` request the round must release, milli.
        release_target_milli: i64,
        /// `batch-cpu` request this pod releases, milli.
        pod_milli: i64,
    },
    /// `cfsQuotaBurst`: a container's quota scaled by how much it was
    /// throttled.
    Throttle {
        /// Δnr_throttled / Δnr_periods over the last interval (`None`:
        /// unknown yet).
        throttled_ratio: Option<f64>,
        /// The quota the kubelet set for the CPU limit, µs per period.
        base_quota_us: i64,
    },
}
