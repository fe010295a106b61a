//! NUMA memory pressure (spec §4.2), per node, every cycle:
//!
//! * watermarks from `/proc/zoneinfo`: `low = zone low + 256 MiB`, `min =
//!   zone min + 1 GiB`, and if `inactive_file < max(4 GiB, low)` then `low
//!   = max(4 GiB, low + 1 GiB)`; without zoneinfo `low = total ×
//!   watermark_scale_factor / 10000`, `min = 0`;
//! * `free < min` ⇒ reclaimed pods are evicted now and the counter jumps to
//!   the reclaimed threshold (kolo's reading of "threshold − fast wait
//!   cycle", whose default the spec does not give);
//! * `free < low` ⇒ counter + 1, and + 1 more once it is above 2 and free
//!   is below `(min + low) / 2` or `low − 1 GiB`;
//! * otherwise counter − 1, capped at the reclaimed threshold;
//! * counter > 6 ⇒ reclaimed pods are evicted; counter ≥ 12 ⇒ any
//!   evictable pod.
//!
//! Always hard-met when it acts. Candidates: pods using ≥ 0.1 % of a
//! pressured node's memory, reclaimed first, lower priority first, larger
//! use on that node first.

use std::time::Duration;

use super::{
    EvictionInput, EvictionPlugin, EvictionPod, EvictionState, Met, Scope, Verdict, rank_by_usage,
};

/// The plugin's name.
pub const NAME: &str = "numa-memory-pressure";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Counter above which reclaimed pods are evicted.
pub const RECLAIMED_THRESHOLD: u32 = 6;
/// Counter from which any pod is evicted.
pub const ANY_THRESHOLD: u32 = 12;

/// Zone watermarks of a node (`/proc/zoneinfo`, summed over its zones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Zone {
    /// `min` watermark, bytes.
    pub min: u64,
    /// `low` watermark, bytes.
    pub low: u64,
    /// Inactive file pages, bytes.
    pub inactive_file: u64,
}

/// One node's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NumaMemory {
    /// Node id.
    pub id: u32,
    /// Total, bytes.
    pub total: u64,
    /// Free, bytes.
    pub free: u64,
    /// Zone watermarks, if read.
    pub zone: Option<Zone>,
    /// `vm.watermark_scale_factor`.
    pub watermark_scale_factor: u64,
}

/// (min, low) watermarks of a node.
pub fn watermarks(n: &NumaMemory) -> (u64, u64) {
    match n.zone {
        Some(z) => {
            let mut low = z.low + 256 * MIB;
            let min = z.min + GIB;
            if z.inactive_file < (4 * GIB).max(low) {
                low = (4 * GIB).max(low + GIB);
            }
            (min, low)
        }
        None => (0, n.total.saturating_mul(n.watermark_scale_factor) / 10_000),
    }
}

/// What a node's counter asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    None,
    Reclaimed,
    Any,
}

/// Updates a node's counter; returns the action.
fn step(n: &NumaMemory, counter: &mut u32) -> Action {
    let (min, low) = watermarks(n);
    if n.free < min {
        *counter = (*counter).max(RECLAIMED_THRESHOLD);
        return if *counter >= ANY_THRESHOLD { Action::Any } else { Action::Reclaimed };
    }
    if n.free < low {
        *counter += 1;
        if *counter > 2 && (n.free < (min + low) / 2 || n.free < low.saturating_sub(GIB)) {
            *counter += 1;
        }
    } else {
        *counter = counter.saturating_sub(1).min(RECLAIMED_THRESHOLD);
    }
    if *counter >= ANY_THRESHOLD {
        Action::Any
    } else if *counter > RECLAIMED_THRESHOLD {
        Action::Reclaimed
    } else {
        Action::None
    }
}

/// The plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct NumaMemoryPressure;

impl EvictionPlugin for NumaMemoryPressure {
    fn name(&self) -> &'static str {
        NAME
    }

    fn threshold_met(&self, input: &EvictionInput<'_>, state: &mut EvictionState) -> Verdict {
        let mut candidates: Vec<String> = Vec::new();
        let mut reasons = Vec::new();
        let mut worst = (0.0, 0.0);
        for n in input.numa_memory {
            let counter = state.numa_counters.entry(n.id).or_default();
            let action = step(n, counter);
            if action == Action::None {
                continue;
            }
            let (min, low) = watermarks(n);
            reasons.push(format!(
                "NUMA {}: free {} (min {min}, low {low}), counter {counter}",
                n.id, n.free
            ));
            worst = (n.free as f64, low as f64);
            let usage = |p: &EvictionPod| p.memory_by_numa.get(&n.id).copied().unwrap_or(0);
            let mut list: Vec<&EvictionPod> = input
                .pods
                .iter()
                .filter(|p| action == Action::Any || p.is_reclaimed())
                .filter(|p| usage(p) >= n.total / 1000)
                .collect();
            rank_by_usage(&mut list, usage);
            for p in list {
                if !candidates.contains(&p.uid) {
                    candidates.push(p.uid.clone());
                }
            }
        }
        if reasons.is_empty() {
            return Verdict::not_met(NAME, Scope::Memory, "every NUMA node above its watermarks");
        }
        Verdict {
            plugin: NAME,
            met: Met::HardMet,
            observed: worst.0,
            threshold: worst.1,
            scope: Scope::Memory,
            grace: Duration::ZERO,
            reason: reasons.join("; "),
            condition: None,
            candidates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermarks_and_counter_table() {
        // Zoneinfo: low 1 GiB + 256 MiB = 1.25 GiB; min 0.5 GiB + 1 GiB = 1.5 GiB;
        // inactive file 2 GiB < max(4 GiB, 1.25 GiB) → low = max(4, 2.25) GiB = 4 GiB.
        let z = Zone { min: GIB / 2, low: GIB, inactive_file: 2 * GIB };
        let n = |free: u64| NumaMemory {
            id: 0,
            total: 64 * GIB,
            free,
            zone: Some(z),
            watermark_scale_factor: 10,
        };
        assert_eq!(watermarks(&n(0)), (GIB + GIB / 2, 4 * GIB));
        // Plenty of inactive file: low stays 1.25 GiB.
        let rich = NumaMemory { zone: Some(Zone { inactive_file: 10 * GIB, ..z }), ..n(0) };
        assert_eq!(watermarks(&rich), (GIB + GIB / 2, GIB + 256 * MIB));
        // No zoneinfo: low = 64 GiB × 10 / 10000 = 65.536 MiB (67108864 bytes), min 0.
        let bare = NumaMemory { zone: None, ..n(0) };
        assert_eq!(watermarks(&bare), (0, 64 * GIB / 1000));
        // (free, counter before, counter after, action)
        let table = [
            (8 * GIB, 0, 0, Action::None),          // above low
            (8 * GIB, 9, 6, Action::None),          // −1 then capped at 6
            (7 * GIB / 2, 0, 1, Action::None),      // below low (3.5 < 4): +1
            (7 * GIB / 2, 2, 3, Action::None), // 3 > 2 but 3.5 ≥ (1.5+4)/2 = 2.75 and ≥ 3: +1 only
            (5 * GIB / 2, 2, 4, Action::None), // 2.5 < 2.75: +2
            (5 * GIB / 2, 5, 7, Action::Reclaimed), // 7 > 6
            (5 * GIB / 2, 10, 12, Action::Any), // 12 ≥ 12
            (GIB, 0, 6, Action::Reclaimed),    // below min: jump to 6, act now
        ];
        for (free, before, after, action) in table {
            let mut c = before;
            assert_eq!(step(&n(free), &mut c), action, "{free} {before}");
            assert_eq!(c, after, "{free} {before}");
        }
    }
}
