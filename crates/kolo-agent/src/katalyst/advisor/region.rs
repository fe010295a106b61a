//! Regions and their essentials (spec §2.2): every non-reclaimed pod is in
//! one region — a `share` region per shared pool (on the NUMA nodes no
//! dedicated pod is bound to) or a `dedicated` region per dedicated pod (on
//! its node). Rebuilt from scratch every cycle.
//!
//! Per node: `numaAvailable[n] = |CPUs(n)| − |reserve ∩ n|` and
//! `reservedForReclaim[n] = clamp(reserved_for_reclaim, #NUMA, #CPUs) / #NUMA`
//! (integer division: 4 on 2 nodes → 2 each). Per region:
//!
//! * `reservedForAllocate = Σ_{n ∈ region} (reserved_for_allocate / #NUMA) / regionsOn[n]`;
//! * `reservedForReclaim = Σ_{n ∈ region} reservedForReclaim[n] / regionsOn[n]`;
//! * upper bound: share and exclusive dedicated `Σ (numaAvailable[n] − reservedForReclaim[n])`,
//!   non-exclusive dedicated `max(1, CPU limit)` (its request without a limit);
//! * lower bound: share `max(4, the largest pod's ceil(request))`, at most
//!   `Σ numaAvailable` — kolo adds the second term so no shared pod gets
//!   fewer CPUs than its request rounds up to, even if that takes CPUs of
//!   the reclaim reserve (the upper bound is raised to it); dedicated `4`,
//!   at most the upper bound.
//!
//! Isolation regions (off by default in Katalyst) and NUMA-bound shared
//! pools (SNB) are not implemented.

use std::collections::BTreeMap;

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::cpuset::CpuSet;

use crate::katalyst::config::KatalystConfig;
use crate::katalyst::dedicated::DedicatedCheckpoint;
use crate::katalyst::machine::Machine;
use crate::katalyst::pod::{DEFAULT_SHARED_POOL, KPod};
use crate::katalyst::pools::unbound_numas;

/// Per-node figures of a cycle.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Essentials {
    /// CPUs outside the reserve pool, by node.
    pub numa_available: BTreeMap<u32, usize>,
    /// CPUs always left to reclaimed pods, by node.
    pub reserved_for_reclaim: BTreeMap<u32, usize>,
}

impl Essentials {
    /// The essentials of `machine` with `reserve` set aside.
    pub fn new(machine: &Machine, reserve: &CpuSet, cfg: &KatalystConfig) -> Essentials {
        let numas = machine.numa.len().max(1);
        let total = cfg.reserved_for_reclaim.clamp(numas, machine.cpus().len().max(numas));
        let per_numa = total / numas;
        Essentials {
            numa_available: machine
                .numa
                .iter()
                .map(|n| (n.id, n.cpus.difference(reserve).len()))
                .collect(),
            reserved_for_reclaim: machine.numa.iter().map(|n| (n.id, per_numa)).collect(),
        }
    }

    /// Σ numaAvailable over `numas`.
    pub fn available(&self, numas: &[u32]) -> usize {
        numas.iter().map(|n| self.numa_available.get(n).copied().unwrap_or(0)).sum()
    }

    /// Σ reservedForReclaim over `numas`.
    pub fn reclaim_reserve(&self, numas: &[u32]) -> usize {
        numas.iter().map(|n| self.reserved_for_reclaim.get(n).copied().unwrap_or(0)).sum()
    }
}

/// What kind of region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionKind {
    /// A shared pool.
    Share {
        /// The pool's name.
        pool: String,
    },
    /// One dedicated pod.
    Dedicated {
        /// The pod's UID.
        uid: String,
        /// `numa_exclusive`.
        exclusive: bool,
        /// Its CPUs.
        cpus: usize,
    },
}

/// A region with its bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// `share-<pool>` or `dedicated-<namespace/name>`.
    pub name: String,
    /// Kind.
    pub kind: RegionKind,
    /// NUMA nodes it is bound to.
    pub numas: Vec<u32>,
    /// Its pods' UIDs.
    pub pods: Vec<String>,
    /// Σ CPU requests, cores.
    pub request: f64,
    /// Whether reclaimed pods may use what it leaves (every pod allows it).
    pub reclaim_allowed: bool,
    /// Upper bound, CPUs.
    pub upper: f64,
    /// Lower bound, CPUs.
    pub lower: f64,
    /// ReservedForAllocate, CPUs.
    pub reserved_for_allocate: f64,
    /// ReservedForReclaim, CPUs.
    pub reserved_for_reclaim: f64,
}

impl Region {
    /// Whether it is a share region.
    pub fn is_share(&self) -> bool {
        matches!(self.kind, RegionKind::Share { .. })
    }
}

/// The pool a pod counts in: its `cpuset_pool` for shared pods, the
/// default pool for a dedicated pod without an allocation.
fn share_pool(p: &KPod, dedicated: &DedicatedCheckpoint) -> Option<String> {
    match p.level {
        KatalystQoSLevel::SharedCores => Some(p.pool.clone()),
        KatalystQoSLevel::DedicatedCores if !dedicated.allocations.contains_key(&p.uid) => {
            Some(DEFAULT_SHARED_POOL.to_string())
        }
        _ => None,
    }
}

/// The cycle's regions, share regions by pool name then dedicated regions
/// by pod UID.
pub fn regions(
    machine: &Machine,
    cfg: &KatalystConfig,
    ess: &Essentials,
    pods: &[KPod],
    dedicated: &DedicatedCheckpoint,
) -> Vec<Region> {
    let unbound = unbound_numas(machine, dedicated);
    let mut share: BTreeMap<String, Vec<&KPod>> = BTreeMap::new();
    for p in pods {
        if let Some(pool) = share_pool(p, dedicated) {
            share.entry(pool).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    for (pool, members) in share {
        out.push(skeleton(
            format!("share-{pool}"),
            RegionKind::Share { pool },
            unbound.clone(),
            &members,
        ));
    }
    let by_uid: BTreeMap<&str, &KPod> = pods.iter().map(|p| (p.uid.as_str(), p)).collect();
    for (uid, a) in &dedicated.allocations {
        let Some(p) = by_uid.get(uid.as_str()) else { continue };
        let kind =
            RegionKind::Dedicated { uid: uid.clone(), exclusive: a.exclusive, cpus: a.cpus.len() };
        out.push(skeleton(format!("dedicated-{}", p.key), kind, vec![a.numa], &[p]));
    }
    let mut regions_on: BTreeMap<u32, usize> = BTreeMap::new();
    for r in &out {
        for n in &r.numas {
            *regions_on.entry(*n).or_default() += 1;
        }
    }
    let numas = machine.numa.len().max(1) as f64;
    for r in &mut out {
        let on = |n: &u32| regions_on[n] as f64;
        r.reserved_for_allocate =
            r.numas.iter().map(|n| cfg.reserved_for_allocate / numas / on(n)).sum();
        r.reserved_for_reclaim =
            r.numas.iter().map(|n| ess.reserved_for_reclaim[n] as f64 / on(n)).sum();
        let spare =
            (ess.available(&r.numas) as f64 - ess.reclaim_reserve(&r.numas) as f64).max(0.0);
        let (upper, lower) = match &r.kind {
            RegionKind::Share { .. } => {
                let largest = r
                    .pods
                    .iter()
                    .filter_map(|u| by_uid.get(u.as_str()))
                    .map(|p| p.cpus_needed())
                    .max();
                let floor = cfg.min_share_cpus.max(largest.unwrap_or(0) as f64);
                // kolo: the floor may eat into the reclaim reserve, never past the nodes.
                let floor = floor.min(ess.available(&r.numas) as f64);
                (spare.max(floor), floor)
            }
            RegionKind::Dedicated { exclusive: true, .. } => (spare, cfg.min_dedicated_cpus),
            RegionKind::Dedicated { exclusive: false, uid, .. } => {
                let p = by_uid[uid.as_str()];
                let limit =
                    if p.cpu_limit_milli > 0 { p.cpu_limit_milli } else { p.cpu_request_milli };
                ((limit as f64 / 1000.0).max(1.0), cfg.min_dedicated_cpus)
            }
        };
        r.upper = upper;
        r.lower = lower.min(upper);
    }
    out
}

fn skeleton(name: String, kind: RegionKind, numas: Vec<u32>, pods: &[&KPod]) -> Region {
    Region {
        name,
        kind,
        numas,
        pods: pods.iter().map(|p| p.uid.clone()).collect(),
        request: pods.iter().map(|p| p.cpu_request()).sum(),
        reclaim_allowed: pods.iter().all(|p| p.reclaim_allowed),
        upper: 0.0,
        lower: 0.0,
        reserved_for_allocate: 0.0,
        reserved_for_reclaim: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::dedicated::allocate;
    use crate::katalyst::pod::testing::{dedicated, shared};

    #[test]
    fn essentials_and_bounds_table() {
        // 2 NUMA × 8 CPUs, reserve 0-1 (node 0). numaAvailable = {0: 6, 1: 8};
        // reservedForReclaim = clamp(4, 2, 16) / 2 = 2 per node.
        let m = Machine::uniform(2, 8, true, 0);
        let cfg = KatalystConfig::default();
        let reserve = CpuSet::parse("0-1").unwrap();
        let ess = Essentials::new(&m, &reserve, &cfg);
        assert_eq!(ess.numa_available, BTreeMap::from([(0, 6), (1, 8)]));
        assert_eq!(ess.reserved_for_reclaim, BTreeMap::from([(0, 2), (1, 2)]));
        let pods = [shared("a", 2_000, 1.0), shared("b", 5_500, 1.0), dedicated("d", 3_000, false)];
        let ded = allocate(&m, &reserve, &DedicatedCheckpoint::default(), &pods).checkpoint;
        // d lands on node 0 (2-4): node 1's 8 CPUs still hold the shared
        // requests (7.5 → 8), so node 1 is the only unbound node.
        let rs = regions(&m, &cfg, &ess, &pods, &ded);
        assert_eq!(rs.len(), 2);
        let (share, ded_r) = (&rs[0], &rs[1]);
        assert_eq!(share.name, "share-share");
        assert_eq!(share.numas, [1]);
        assert_eq!(share.request, 7.5); // 2 + 5.5
        // upper = numaAvailable[1] − rfr[1] = 8 − 2 = 6;
        // lower = max(4, ceil(5.5) = 6) = 6.
        assert_eq!((share.upper, share.lower), (6.0, 6.0));
        // A 7.5-CPU pod alone: lower = 8 (its request) > 6: upper raised to 8.
        let big = [shared("big", 7_500, 1.0)];
        let rs7 = regions(&m, &cfg, &ess, &big, &ded);
        assert_eq!((rs7[0].upper, rs7[0].lower), (8.0, 8.0));
        // One region per node: rfa = 4 / 2 / 1 = 2; rfr = 2 / 1 = 2.
        assert_eq!((share.reserved_for_allocate, share.reserved_for_reclaim), (2.0, 2.0));
        assert_eq!(ded_r.name, "dedicated-ns/d");
        // Non-exclusive: upper = max(1, limit 3) = 3; lower = min(4, 3) = 3.
        assert_eq!((ded_r.upper, ded_r.lower), (3.0, 3.0));
        // An exclusive pod: upper = numaAvailable − rfr = 6 − 2 = 4 on node 0.
        let pods = [dedicated("x", 1_000, true)];
        let ded = allocate(&m, &reserve, &DedicatedCheckpoint::default(), &pods).checkpoint;
        let rs = regions(&m, &cfg, &ess, &pods, &ded);
        assert_eq!((rs[0].upper, rs[0].lower), (4.0, 4.0));
        // Two share pools on the same 2 nodes: rfa = Σ_n 4/2/2 = 1 + 1 = 2,
        // rfr = Σ_n 2/2 = 2; upper = (6 − 2) + (8 − 2) = 10.
        let mut b = shared("b", 1_000, 0.5);
        b.pool = "batch".into();
        let pods = [shared("a", 1_000, 0.5), b];
        let rs = regions(&m, &cfg, &ess, &pods, &DedicatedCheckpoint::default());
        assert_eq!(
            rs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["share-batch", "share-share"]
        );
        assert_eq!(
            (rs[0].reserved_for_allocate, rs[0].reserved_for_reclaim, rs[0].upper),
            (2.0, 2.0, 10.0)
        );
    }
}
