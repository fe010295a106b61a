//! The regulator (spec §2.4) between a provision policy's requirement and
//! a region's size:
//!
//! 1. add the region's `ReservedForAllocate`;
//! 2. round up; a share region on an SMT machine with shared and
//!    reclaimed CPUs not overlapping rounds up to an even number (whole
//!    cores);
//! 3. slow down relative to the size in effect: at most `+10` per cycle, at
//!    most `−2` per cycle and at most one decrease per 30 s;
//! 4. clamp to the region's [lower, upper] bounds.
//!
//! The size in effect and the last decrease are the regulator's state,
//! data in and out (no clock inside: `now` is passed in).

use kolo_core::clock::Timestamp;
use serde::Serialize;

use super::region::Region;
use crate::katalyst::config::KatalystConfig;

/// What the regulator remembers of a region between cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RegulatorState {
    /// The size it gave last cycle.
    pub effective: Option<usize>,
    /// When it last decreased the size.
    pub last_ramp_down: Option<Timestamp>,
}

/// The regulator's steps for one region.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Regulated {
    /// Requirement + ReservedForAllocate.
    pub with_reserve: f64,
    /// Rounded up (to even for whole cores).
    pub rounded: usize,
    /// After the ramp limits.
    pub slowed: usize,
    /// After the bounds: the region's size.
    pub size: usize,
    /// Why the ramp limits held it back, if they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<&'static str>,
    /// The state for the next cycle.
    #[serde(skip)]
    pub state: RegulatorState,
}

/// Regulates `requirement` for `region`. `even`: round to whole cores.
pub fn regulate(
    requirement: f64,
    region: &Region,
    even: bool,
    prev: RegulatorState,
    now: Timestamp,
    cfg: &KatalystConfig,
) -> Regulated {
    let with_reserve = requirement + region.reserved_for_allocate;
    let mut rounded = with_reserve.max(0.0).ceil() as usize;
    if even && region.is_share() && rounded % 2 == 1 {
        rounded += 1;
    }
    let mut state = prev;
    let mut held = None;
    let slowed = match prev.effective {
        Some(cur) if rounded > cur + cfg.max_ramp_up => {
            held = Some("ramp-up limit");
            cur + cfg.max_ramp_up
        }
        Some(cur) if rounded < cur => {
            let recent = prev.last_ramp_down.is_some_and(|t| {
                let elapsed = now.as_millisecond().saturating_sub(t.as_millisecond());
                elapsed < i64::try_from(cfg.min_ramp_down_period.as_millis()).unwrap_or(i64::MAX)
            });
            if recent {
                held = Some("ramp-down period");
                cur
            } else {
                if rounded < cur.saturating_sub(cfg.max_ramp_down) {
                    held = Some("ramp-down limit");
                }
                rounded.max(cur.saturating_sub(cfg.max_ramp_down))
            }
        }
        _ => rounded,
    };
    let size = (slowed as f64).clamp(region.lower, region.upper.max(region.lower)).ceil() as usize;
    if prev.effective.is_some_and(|cur| size < cur) {
        state.last_ramp_down = Some(now);
    }
    state.effective = Some(size);
    Regulated { with_reserve, rounded, slowed, size, held, state }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::advisor::region::RegionKind;

    fn region(share: bool, lower: f64, upper: f64) -> Region {
        let kind = if share {
            RegionKind::Share { pool: "share".into() }
        } else {
            RegionKind::Dedicated { uid: "u".into(), exclusive: true, cpus: 8 }
        };
        Region {
            name: "r".into(),
            kind,
            numas: vec![0],
            pods: vec![],
            request: 0.0,
            reclaim_allowed: true,
            upper,
            lower,
            reserved_for_allocate: 2.0,
            reserved_for_reclaim: 2.0,
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn regulator_table() {
        let cfg = KatalystConfig::default();
        let st = |eff: Option<usize>, down: Option<i64>| RegulatorState {
            effective: eff,
            last_ramp_down: down.map(at),
        };
        // (share, even, lower, upper, requirement, prev, now, rounded, slowed, size)
        let table = [
            // 3.2 + 2 = 5.2 → 6; no history; within [4, 30].
            (true, false, 4.0, 30.0, 3.2, st(None, None), 100, 6, 6, 6),
            // 3.2 + 2 = 5.2 → 6 (already even) ; 4.5 + 2 = 6.5 → 7 → 8 even.
            (true, true, 4.0, 30.0, 4.5, st(None, None), 100, 8, 8, 8),
            // A dedicated region is never rounded to even: 7.
            (false, true, 4.0, 30.0, 4.5, st(None, None), 100, 7, 7, 7),
            // Ramp up: 28 + 2 = 30 from 6 → at most 6 + 10 = 16.
            (true, false, 4.0, 30.0, 28.0, st(Some(6), None), 100, 30, 16, 16),
            // Ramp down: 1 + 2 = 3 from 12 → at most 12 − 2 = 10.
            (true, false, 4.0, 30.0, 1.0, st(Some(12), None), 100, 3, 10, 10),
            // ... but not within 30 s of the last decrease: stays 12.
            (true, false, 4.0, 30.0, 1.0, st(Some(12), Some(80)), 100, 3, 12, 12),
            // 30 s later it may: 10.
            (true, false, 4.0, 30.0, 1.0, st(Some(12), Some(70)), 100, 3, 10, 10),
            // Bounds: 0 + 2 = 2 → lower 4; 40 + 2 = 42 → upper 30.
            (true, false, 4.0, 30.0, 0.0, st(None, None), 100, 2, 2, 4),
            (true, false, 4.0, 30.0, 40.0, st(None, None), 100, 42, 42, 30),
        ];
        for (share, even, lower, upper, req, prev, now, rounded, slowed, size) in table {
            let r = regulate(req, &region(share, lower, upper), even, prev, at(now), &cfg);
            assert_eq!((r.rounded, r.slowed, r.size), (rounded, slowed, size), "{req} {prev:?}");
            assert_eq!(r.state.effective, Some(size));
            let went_down = prev.effective.is_some_and(|c| size < c);
            assert_eq!(r.state.last_ramp_down == Some(at(now)), went_down, "{req} {prev:?}");
        }
    }
}
