//! The provision assembler (spec §2.5, `common`): region sizes → pool
//! sizes, and how many CPUs of each pool reclaimed pods may overlap.
//!
//! **Unbound scope** (the NUMA nodes no dedicated pod is bound to):
//!
//! * `available = Σ numaAvailable − (overlap mode ? 0 : Σ reservedForReclaim)`;
//! * a share region's target is `max(1, size)` if reclaimed pods may use
//!   what it leaves, else `max(1, ceil(Σ requests))`;
//! * with reclaim disabled or in overlap mode, the pools are **stretched**
//!   to fill `available`: `⌊target × available / Σ targets⌋` each, the CPUs
//!   left one by one to the largest fractions (ties: pool name order);
//! * if `Σ targets > available`, they are **scaled down**: `⌈target ×
//!   available / Σ targets⌉` each, then one CPU at a time off the pool
//!   with the largest scaled/target ratio (ties: the larger pool) until
//!   they fit; the pools are then "throttled". kolo differs in two ways:
//!   the pools' floors (a share region's lower bound: its largest pod's
//!   request) may use the reclaim reserve (`available` grows to at most
//!   `Σ numaAvailable` for them), and only the part of each target above
//!   its floor is scaled while the floors fit;
//! * the reclaim pool is what is left (in the default non-overlap mode
//!   this is at least Σ reservedForReclaim);
//! * overlap mode (only with reclaim on and a pool that allows it): each pool overlaps `size − requirement`;
//!   if that totals less than Σ reservedForReclaim, that total is spread
//!   over the pools in proportion to their sizes instead (largest first,
//!   rounded up, at most a pool's size).
//!
//! **Dedicated pods** (their own node): an exclusive pod overlaps
//! `max(reservedForReclaim[n], numaAvailable[n] − requirement)` where the
//! requirement is its whole node if it disallows reclaim (so reclaimed
//! pods keep `reservedForReclaim` CPUs on its node even then — Katalyst's
//! behaviour, kept); a non-exclusive pod overlaps `|cpuset| − size` if it
//! allows reclaim. Both at most its cpuset.

use std::collections::BTreeMap;

use serde::Serialize;

use super::region::{Essentials, Region, RegionKind};
use crate::katalyst::config::KatalystConfig;
use crate::katalyst::pools::PoolTargets;

/// The reclaim pool's fallback size when it would be empty: `max(4,
/// #NUMA)` CPUs (§3.1: the reclaim pool is never empty).
pub const RECLAIM_FALLBACK: usize = 4;

/// A region with its regulated size.
#[derive(Debug, Clone, PartialEq)]
pub struct Sized<'a> {
    /// The region.
    pub region: &'a Region,
    /// Its regulated size, CPUs.
    pub size: usize,
}

/// The assembler's result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assembly {
    /// CPUs the unbound scope has for shared pools.
    pub available: usize,
    /// Σ share targets before stretching or scaling.
    pub requested: usize,
    /// Σ the share pools' floors (lower bounds).
    pub floors: usize,
    /// Σ numaAvailable of the unbound nodes.
    pub capacity: usize,
    /// The pools were stretched to fill `available`.
    pub expanded: bool,
    /// The pools were scaled down to fit `available`.
    pub throttled: bool,
    /// What the pools become.
    #[serde(skip)]
    pub targets: PoolTargets,
}

/// Assembles the sized regions. `unbound`: the nodes of the share regions.
pub fn assemble(
    cfg: &KatalystConfig,
    ess: &Essentials,
    unbound: &[u32],
    regions: &[Sized<'_>],
) -> Assembly {
    // Overlap mode needs reclaim on and a pool to overlap; else the
    // reserve for reclaim stays out of the shared pools.
    let overlap_mode = cfg.allow_shared_overlap_reclaimed
        && cfg.enable_reclaim
        && regions.iter().any(|s| s.region.is_share() && s.region.reclaim_allowed);
    let reserve = if overlap_mode { 0 } else { ess.reclaim_reserve(unbound) };
    let available = ess.available(unbound).saturating_sub(reserve);
    let mut out = Assembly { available, ..Assembly::default() };
    out.targets.reclaim_fallback = RECLAIM_FALLBACK.max(ess.numa_available.len());
    let share: Vec<(&str, usize, &Sized<'_>)> = regions
        .iter()
        .filter_map(|s| match &s.region.kind {
            RegionKind::Share { pool } => {
                let target = if cfg.enable_reclaim && s.region.reclaim_allowed {
                    s.size.max(1)
                } else {
                    (s.region.request.ceil() as usize).max(1)
                };
                Some((pool.as_str(), target, s))
            }
            RegionKind::Dedicated { .. } => None,
        })
        .collect();
    let targets: Vec<usize> = share.iter().map(|(_, t, _)| *t).collect();
    let floors: Vec<usize> =
        share.iter().map(|(_, t, s)| (s.region.lower.max(0.0) as usize).min(*t)).collect();
    out.requested = targets.iter().sum();
    out.floors = floors.iter().sum();
    out.capacity = ess.available(unbound);
    // kolo: the pools' floors (their largest requests) may take CPUs of the
    // reclaim reserve; usage beyond them may not.
    let room = available.max(out.floors.min(out.capacity));
    let sizes = if out.requested > room {
        out.throttled = true;
        scale_down_with_floors(&targets, &floors, room)
    } else if !cfg.enable_reclaim || overlap_mode {
        out.expanded = true;
        stretch(&targets, room)
    } else {
        targets.clone()
    };
    for ((pool, _, _), size) in share.iter().zip(&sizes) {
        out.targets.shared.insert(pool.to_string(), *size);
    }
    if overlap_mode {
        out.targets.shared_overlap = shared_overlap(&share, &sizes, ess.reclaim_reserve(unbound));
    }
    for s in regions {
        if let RegionKind::Dedicated { uid, exclusive, cpus } = &s.region.kind {
            let n = overlap_on_dedicated(cfg, ess, s, *exclusive, *cpus);
            out.targets.dedicated_overlap.insert(uid.clone(), n);
        }
    }
    out
}

fn overlap_on_dedicated(
    cfg: &KatalystConfig,
    ess: &Essentials,
    s: &Sized<'_>,
    exclusive: bool,
    cpus: usize,
) -> usize {
    let allowed = cfg.enable_reclaim && s.region.reclaim_allowed;
    let n = if exclusive {
        let available = ess.available(&s.region.numas);
        let requirement = if allowed { s.size } else { available };
        ess.reclaim_reserve(&s.region.numas).max(available.saturating_sub(requirement))
    } else if allowed {
        cpus.saturating_sub(s.size)
    } else {
        0
    };
    n.min(cpus)
}

/// Overlap per shared pool (overlap mode).
fn shared_overlap(
    share: &[(&str, usize, &Sized<'_>)],
    sizes: &[usize],
    reserve: usize,
) -> BTreeMap<String, usize> {
    let eligible: Vec<(usize, usize)> = share
        .iter()
        .zip(sizes)
        .enumerate()
        .filter(|(_, ((_, _, s), _))| s.region.reclaim_allowed)
        .map(|(i, ((_, t, _), size))| (i, size.saturating_sub(*t)))
        .collect();
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    let idle: usize = eligible.iter().map(|(_, o)| o).sum();
    if idle >= reserve {
        for (i, o) in eligible {
            out.insert(share[i].0.to_string(), o);
        }
        return out;
    }
    let total: usize = eligible.iter().map(|(i, _)| sizes[*i]).sum();
    let mut order: Vec<usize> = eligible.iter().map(|(i, _)| *i).collect();
    order.sort_by_key(|i| std::cmp::Reverse(sizes[*i]));
    let mut left = reserve;
    for i in order {
        let share_of = (reserve * sizes[i]).div_ceil(total.max(1)).min(sizes[i]).min(left);
        left -= share_of;
        out.insert(share[i].0.to_string(), share_of);
    }
    out
}

/// Stretches `targets` to sum to `available` in proportion.
pub fn stretch(targets: &[usize], available: usize) -> Vec<usize> {
    let sum: usize = targets.iter().sum();
    if sum == 0 {
        return targets.to_vec();
    }
    let mut sizes: Vec<usize> = targets.iter().map(|t| t * available / sum).collect();
    let mut order: Vec<usize> = (0..targets.len()).collect();
    // Largest fraction first; the sort is stable, so ties keep pool order.
    order.sort_by_key(|&i| std::cmp::Reverse(targets[i] * available % sum));
    // Each floor loses less than one CPU: fewer CPUs are left than pools.
    let left = available - sizes.iter().sum::<usize>();
    for &i in order.iter().take(left) {
        sizes[i] += 1;
    }
    sizes
}

/// Scales `targets` down to `room`, each at least its floor when the
/// floors fit (the excess over the floors is scaled); the floors
/// themselves are scaled when they do not.
pub fn scale_down_with_floors(targets: &[usize], floors: &[usize], room: usize) -> Vec<usize> {
    let sum: usize = floors.iter().sum();
    if sum >= room {
        return scale_down(floors, room);
    }
    let excess: Vec<usize> = targets.iter().zip(floors).map(|(t, f)| t - f).collect();
    let scaled = scale_down(&excess, room - sum);
    floors.iter().zip(scaled).map(|(f, e)| f + e).collect()
}

/// Scales `targets` down to sum to at most `available` in proportion.
pub fn scale_down(targets: &[usize], available: usize) -> Vec<usize> {
    let sum: usize = targets.iter().sum();
    if sum == 0 {
        return targets.to_vec();
    }
    let mut sizes: Vec<usize> = targets.iter().map(|t| (t * available).div_ceil(sum)).collect();
    while sizes.iter().sum::<usize>() > available {
        // Largest scaled/target ratio: a/b > c/d ⇔ a·d > c·b; ties → larger.
        let i = (0..sizes.len())
            .filter(|&i| sizes[i] > 0)
            .max_by(|&i, &j| {
                (sizes[i] * targets[j])
                    .cmp(&(sizes[j] * targets[i]))
                    .then(sizes[i].cmp(&sizes[j]))
                    .then(j.cmp(&i))
            })
            .expect("a non-empty pool while the sum exceeds available");
        sizes[i] -= 1;
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::machine::Machine;
    use kolo_core::cpuset::CpuSet;

    #[test]
    fn stretch_and_scale_table() {
        // (targets, available, stretched, scaled down)
        type Row<'a> = (&'a [usize], usize, &'a [usize], &'a [usize]);
        let table: [Row; 5] = [
            // 4 + 4 → 14: 7 + 7.
            (&[4, 4], 14, &[7, 7], &[4, 4]),
            // 2 + 4 → 9: ⌊18/6⌋ = 3, ⌊36/6⌋ = 6 → 3 + 6 = 9.
            (&[2, 4], 9, &[3, 6], &[2, 4]),
            // 3 + 3 + 3 → 10: 3 each (9), one left to the first (ties → pool order).
            (&[3, 3, 3], 10, &[4, 3, 3], &[3, 3, 3]),
            // 6 + 4 → 5: ⌈30/10⌉ = 3, ⌈20/10⌉ = 2 = 5, fits.
            (&[6, 4], 5, &[6, 4], &[3, 2]),
            // 5 + 5 + 2 → 7: ⌈35/12⌉ = 3, 3, ⌈14/12⌉ = 2 → 8; ratios 3/5, 3/5, 2/2:
            // the last pool has the largest ratio → 3, 3, 1.
            (&[5, 5, 2], 7, &[5, 5, 2], &[3, 3, 1]),
        ];
        for (targets, available, stretched, scaled) in table {
            let sum: usize = targets.iter().sum();
            if sum <= available {
                assert_eq!(stretch(targets, available), stretched, "{targets:?} {available}");
            }
            assert_eq!(
                if sum > available { scale_down(targets, available) } else { targets.to_vec() },
                scaled,
                "{targets:?} {available}"
            );
        }
    }

    fn share(pool: &str, request: f64, allowed: bool) -> Region {
        Region {
            name: format!("share-{pool}"),
            kind: RegionKind::Share { pool: pool.into() },
            numas: vec![0, 1],
            pods: vec![],
            request,
            reclaim_allowed: allowed,
            upper: 0.0,
            lower: 0.0,
            reserved_for_allocate: 0.0,
            reserved_for_reclaim: 0.0,
        }
    }

    fn dedicated(uid: &str, exclusive: bool, cpus: usize, numa: u32, allowed: bool) -> Region {
        Region {
            kind: RegionKind::Dedicated { uid: uid.into(), exclusive, cpus },
            numas: vec![numa],
            ..share("x", 0.0, allowed)
        }
    }

    /// One assembler case: config, regions with sizes, expected pool
    /// sizes, shared overlaps, dedicated overlaps, throttled.
    struct Row<'a> {
        cfg: &'a KatalystConfig,
        regions: Vec<(&'a Region, usize)>,
        shared: &'a [(&'a str, usize)],
        overlap: &'a [(&'a str, usize)],
        dedicated: &'a [(&'a str, usize)],
        throttled: bool,
    }

    /// 3 NUMA × 8 CPUs, no reserve: numaAvailable 8 each, rfr = 4/3 = 1
    /// each. Unbound nodes 0-1: available = 16 − 2 = 14 (non-overlap).
    fn essentials() -> Essentials {
        let m = Machine::uniform(3, 8, true, 0);
        let ess = Essentials::new(&m, &CpuSet::default(), &KatalystConfig::default());
        assert_eq!(ess.reserved_for_reclaim[&0], 1);
        ess
    }

    fn check(rows: &[Row<'_>]) {
        let ess = essentials();
        let map = |v: &[(&str, usize)]| {
            v.iter().map(|(k, n)| (k.to_string(), *n)).collect::<BTreeMap<_, _>>()
        };
        for (i, row) in rows.iter().enumerate() {
            let regions: Vec<Sized<'_>> =
                row.regions.iter().map(|(r, size)| Sized { region: r, size: *size }).collect();
            let out = assemble(row.cfg, &ess, &[0, 1], &regions);
            assert_eq!(out.targets.shared, map(row.shared), "row {i}");
            assert_eq!(out.targets.shared_overlap, map(row.overlap), "row {i}");
            assert_eq!(out.targets.dedicated_overlap, map(row.dedicated), "row {i}");
            assert_eq!(out.throttled, row.throttled, "row {i}");
        }
    }

    #[test]
    fn assembler_share_table() {
        let on = KatalystConfig::default();
        let off = KatalystConfig { enable_reclaim: false, ..on.clone() };
        let overlap = KatalystConfig { allow_shared_overlap_reclaimed: true, ..on.clone() };
        let a = share("a", 5.5, true);
        let b = share("b", 3.0, true);
        let b_no = share("b", 3.0, false);
        check(&[
            // Reclaim on, no overlap: sizes as regulated (4 + 6 = 10 ≤ 14); reclaim gets 16 − 10 = 6.
            Row {
                cfg: &on,
                regions: vec![(&a, 4), (&b, 6)],
                shared: &[("a", 4), ("b", 6)],
                overlap: &[],
                dedicated: &[],
                throttled: false,
            },
            // b disallows reclaim: its target is ceil(3.0) = 3, not 6.
            Row {
                cfg: &on,
                regions: vec![(&a, 4), (&b_no, 6)],
                shared: &[("a", 4), ("b", 3)],
                overlap: &[],
                dedicated: &[],
                throttled: false,
            },
            // Too big: 10 + 8 = 18 > 14 → ⌈140/18⌉ = 8, ⌈112/18⌉ = 7 = 15; ratios 8/10 > 7/8? 64 < 70: b → 6.
            Row {
                cfg: &on,
                regions: vec![(&a, 10), (&b, 8)],
                shared: &[("a", 8), ("b", 6)],
                overlap: &[],
                dedicated: &[],
                throttled: true,
            },
            // Reclaim off: targets are requests ceil(5.5) = 6, 3 → stretched to 14: ⌊84/9⌋ = 9, ⌊42/9⌋ = 4, the CPU left to the larger fraction (b: 6/9 > 3/9): 9, 5.
            Row {
                cfg: &off,
                regions: vec![(&a, 4), (&b, 6)],
                shared: &[("a", 9), ("b", 5)],
                overlap: &[],
                dedicated: &[],
                throttled: false,
            },
            // Overlap mode: available = 16; 4 + 6 stretched: ⌊64/10⌋ = 6, ⌊96/10⌋ = 9, the CPU left to b (6/10 > 4/10) → 6, 10;
            // overlap = size − target: 2 and 4 (6 ≥ Σrfr = 2).
            Row {
                cfg: &overlap,
                regions: vec![(&a, 4), (&b, 6)],
                shared: &[("a", 6), ("b", 10)],
                overlap: &[("a", 2), ("b", 4)],
                dedicated: &[],
                throttled: false,
            },
        ]);
    }

    #[test]
    fn assembler_dedicated_table() {
        let on = KatalystConfig::default();
        let ex = dedicated("ex", true, 8, 2, true);
        let ex_no = dedicated("ex", true, 8, 2, false);
        let ne = dedicated("ne", false, 6, 2, true);
        check(&[
            // Exclusive dedicated, size 5 on node 2: overlap max(1, 8 − 5) = 3.
            Row {
                cfg: &on,
                regions: vec![(&ex, 5)],
                shared: &[],
                overlap: &[],
                dedicated: &[("ex", 3)],
                throttled: false,
            },
            // ... disallowing reclaim: requirement = 8 → max(1, 0) = 1 (the kept quirk).
            Row {
                cfg: &on,
                regions: vec![(&ex_no, 5)],
                shared: &[],
                overlap: &[],
                dedicated: &[("ex", 1)],
                throttled: false,
            },
            // Non-exclusive with 6 CPUs, size 4: overlap 2.
            Row {
                cfg: &on,
                regions: vec![(&ne, 4)],
                shared: &[],
                overlap: &[],
                dedicated: &[("ne", 2)],
                throttled: false,
            },
        ]);
    }

    #[test]
    fn overlap_is_raised_to_the_reclaim_reserve() {
        // 2 NUMA × 8, rfr 2 + 2 = 4; overlap mode; pools sized exactly 6 and 10 with
        // targets 6 and 10 (no idle part): 4 spread by size, largest first:
        // b ⌈4 × 10/16⌉ = 3, a min(⌈4 × 6/16⌉ = 2, 1 left) = 1.
        let m = Machine::uniform(2, 8, true, 0);
        let cfg =
            KatalystConfig { allow_shared_overlap_reclaimed: true, ..KatalystConfig::default() };
        let ess = Essentials::new(&m, &CpuSet::default(), &cfg);
        let (a, b) = (share("a", 1.0, true), share("b", 1.0, true));
        let regions = [Sized { region: &a, size: 6 }, Sized { region: &b, size: 10 }];
        let out = assemble(&cfg, &ess, &[0, 1], &regions);
        assert_eq!(out.targets.shared, BTreeMap::from([("a".into(), 6), ("b".into(), 10)]));
        assert_eq!(out.targets.shared_overlap, BTreeMap::from([("a".into(), 1), ("b".into(), 3)]));
    }
}
