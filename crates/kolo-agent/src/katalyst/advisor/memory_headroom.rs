//! Memory headroom (spec §2.7, `canonical`): what becomes
//! `reclaimed_memory`.
//!
//! Each non-reclaimed pod's estimate: with reclaim enabled and allowed
//! for it, `(rss + cache + shmem) × 1.1` for shared and dedicated pods,
//! `rss × 1.0` for system pods, 8 GiB if nothing was measured; otherwise
//! its memory request — or, for an exclusive dedicated pod, its whole
//! node's memory. `headroom = max(total − ReservedForAllocate (5 GiB) −
//! Σ estimates, 0)`; 0 when reclaim is disabled. The util-based buffer
//! (off by default in Katalyst) and the per-NUMA split are not
//! implemented.

use kolo_api::katalyst::KatalystQoSLevel;
use serde::Serialize;

use crate::katalyst::config::{GIB, KatalystConfig};
use crate::katalyst::dedicated::DedicatedCheckpoint;
use crate::katalyst::machine::Machine;
use crate::katalyst::pod::KPod;

/// Factor on shared and dedicated pods' measured memory: 1.1, as the
/// exact fraction 11/10 (rounded up to a byte).
pub const MEMORY_FACTOR: (u64, u64) = (11, 10);

/// The estimate of a pod nothing was measured of.
pub const FALLBACK_BYTES: u64 = 8 * GIB;

/// The memory headroom and its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryHeadroom {
    /// The machine's memory.
    pub total: u64,
    /// ReservedForAllocate.
    pub reserved: u64,
    /// Σ non-reclaimed estimates.
    pub estimated: u64,
    /// `reclaimed_memory`, bytes.
    pub bytes: u64,
}

/// One non-reclaimed pod's estimate, bytes.
pub fn memory_estimate(
    p: &KPod,
    cfg: &KatalystConfig,
    machine: &Machine,
    dedicated: &DedicatedCheckpoint,
) -> u64 {
    if !(cfg.enable_reclaim && p.reclaim_allowed) {
        let whole = dedicated.allocations.get(&p.uid).filter(|a| a.exclusive);
        return match whole {
            Some(a) => machine.numa.iter().find(|n| n.id == a.numa).map_or(0, |n| n.memory_bytes),
            None => p.memory_request,
        };
    }
    let measured = if p.level == KatalystQoSLevel::SystemCores {
        p.usage.rss
    } else {
        let (num, den) = MEMORY_FACTOR;
        p.usage.memory.map(|b| b.saturating_mul(num).div_ceil(den))
    };
    measured.unwrap_or(FALLBACK_BYTES)
}

/// The node's memory headroom.
pub fn memory_headroom(
    cfg: &KatalystConfig,
    machine: &Machine,
    pods: &[KPod],
    dedicated: &DedicatedCheckpoint,
) -> MemoryHeadroom {
    let total = machine.memory_bytes();
    let reserved = cfg.reserved_memory_for_allocate;
    let estimated = pods
        .iter()
        .filter(|p| !p.is_reclaimed())
        .map(|p| memory_estimate(p, cfg, machine, dedicated))
        .sum::<u64>();
    let bytes = if cfg.enable_reclaim {
        total.saturating_sub(reserved).saturating_sub(estimated)
    } else {
        0
    };
    MemoryHeadroom { total, reserved, estimated, bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::dedicated::allocate;
    use crate::katalyst::pod::testing::{dedicated, kpod, shared};
    use kolo_core::cpuset::CpuSet;

    #[test]
    fn memory_headroom_table() {
        // 2 NUMA × 32 GiB = 64 GiB.
        let m = Machine::uniform(2, 8, false, 32 * GIB);
        let cfg = KatalystConfig::default();
        let mut a = shared("a", 1_000, 1.0);
        a.usage.memory = Some(10 * GIB); // × 1.1 = 11 GiB
        let b = shared("b", 1_000, 1.0); // nothing measured: 8 GiB
        let mut sys = kpod("sys", KatalystQoSLevel::SystemCores, 0);
        sys.usage.rss = Some(GIB); // × 1.0 = 1 GiB
        sys.usage.memory = Some(3 * GIB);
        let mut r = kpod("r", KatalystQoSLevel::ReclaimedCores, 0);
        r.usage.memory = Some(20 * GIB); // reclaimed: not counted
        let pods = [a.clone(), b, sys, r];
        let none = DedicatedCheckpoint::default();
        let h = memory_headroom(&cfg, &m, &pods, &none);
        // 64 − 5 − (11 + 8 + 1) = 39 GiB.
        assert_eq!((h.total, h.reserved, h.estimated), (64 * GIB, 5 * GIB, 20 * GIB));
        assert_eq!(h.bytes, 39 * GIB);
        // An exclusive dedicated pod that disallows reclaim counts its node: 32 GiB;
        // 64 − 5 − (11 + 32) = 16 GiB.
        let mut d = dedicated("d", 2_000, true);
        d.reclaim_allowed = false;
        let pods = [a, d];
        let ded = allocate(&m, &CpuSet::default(), &none, &pods).checkpoint;
        assert_eq!(memory_headroom(&cfg, &m, &pods, &ded).bytes, 16 * GIB);
        // Reclaim disabled: 0.
        let off = KatalystConfig { enable_reclaim: false, ..cfg };
        assert_eq!(memory_headroom(&off, &m, &pods, &ded).bytes, 0);
    }
}
