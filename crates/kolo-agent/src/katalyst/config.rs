//! The knobs of kolo's Katalyst node policy, with Katalyst's defaults
//! (spec `katalyst.md` §2.2–§2.7, §3.1) except where `docs/katalyst.md`
//! says otherwise.

use std::time::Duration;

/// Bytes in a GiB.
pub const GIB: u64 = 1 << 30;

/// The Katalyst node policy's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct KatalystConfig {
    /// Whether reclaimed pods may use what non-reclaimed pods leave
    /// (Katalyst's `--enable-reclaim`). Katalyst defaults to `false`
    /// (§10.1); kolo defaults to `true`, the point of co-location.
    pub enable_reclaim: bool,
    /// Shared pools overlap the reclaim pool (the reclaimed pods also run
    /// on the idle part of each shared pool, §2.5 overlap mode).
    pub allow_shared_overlap_reclaimed: bool,
    /// CPUs of the reserve pool, for system daemons (§3.1; default 0).
    pub reserved_cpus: usize,
    /// CPUs always left to reclaimed pods (§2.2 `reservedForReclaim`,
    /// default 4, clamped to [#NUMA, #CPUs]).
    pub reserved_for_reclaim: usize,
    /// CPUs kept for bursting of non-reclaimed pods (§2.2
    /// `ReservedForAllocate`, default 4).
    pub reserved_for_allocate: f64,
    /// Lower bound of a share region (§2.2, default 4).
    pub min_share_cpus: f64,
    /// Lower bound of a dedicated region (§2.2, default 4).
    pub min_dedicated_cpus: f64,
    /// The regulator's largest increase per cycle (§2.4, default 10).
    pub max_ramp_up: usize,
    /// The regulator's largest decrease per cycle (§2.4, default 2).
    pub max_ramp_down: usize,
    /// The regulator's shortest time between two decreases (§2.4, 30 s).
    pub min_ramp_down_period: Duration,
    /// Memory kept for non-reclaimed pods' bursts (§2.7, default 5 GiB).
    pub reserved_memory_for_allocate: u64,
}

impl Default for KatalystConfig {
    fn default() -> KatalystConfig {
        KatalystConfig {
            enable_reclaim: true,
            allow_shared_overlap_reclaimed: false,
            reserved_cpus: 0,
            reserved_for_reclaim: 4,
            reserved_for_allocate: 4.0,
            min_share_cpus: 4.0,
            min_dedicated_cpus: 4.0,
            max_ramp_up: 10,
            max_ramp_down: 2,
            min_ramp_down_period: Duration::from_secs(30),
            reserved_memory_for_allocate: 5 * GIB,
        }
    }
}
