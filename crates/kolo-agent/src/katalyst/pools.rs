//! The pool model (spec §3.1, §3.4): the machine's CPUs split into
//!
//! * the **reserve** pool (system daemons), static;
//! * one **dedicated** cpuset per `dedicated_cores` pod ([`super::dedicated`]);
//! * the **shared** pools, one per `cpuset_pool` name, sized by the
//!   advisor, only on the NUMA nodes no dedicated pod is bound to (§3.4: a
//!   node hosting a NUMA-bound pod gives its leftover CPUs to reclaim, so
//!   bound and unbound pods never mix on a node);
//! * the **reclaim** pool: every CPU left.
//!
//! These partition the machine's CPUs exactly. On top of the partition,
//! [`Pools::reclaim_overlap`] holds CPUs of shared and dedicated pools that
//! reclaimed pods may also run on (the idle part the advisor found, §2.5 and
//! §3.4 step 5), taken from each pool's highest ids as Katalyst does.
//!
//! CPU placement keeps churn low: a shared pool first keeps the CPUs it had
//! (up to its new size), then grows from the free CPUs balanced over NUMA
//! nodes, whole cores first.

use std::collections::BTreeMap;

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::cpuset::CpuSet;

use super::dedicated::{DedicatedAllocation, DedicatedCheckpoint};
use super::machine::Machine;
use super::pod::{DEFAULT_SHARED_POOL, KPod};

/// What the advisor wants of the pools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolTargets {
    /// Each shared pool's size, CPUs.
    pub shared: BTreeMap<String, usize>,
    /// CPUs of each shared pool reclaimed pods may also use.
    pub shared_overlap: BTreeMap<String, usize>,
    /// CPUs of each dedicated pod (by UID) reclaimed pods may also use.
    pub dedicated_overlap: BTreeMap<String, usize>,
    /// If the reclaim pool and the overlap came out empty, this many CPUs
    /// of the shared and dedicated pools (balanced, whole cores first)
    /// become the overlap: reclaimed pods never get an empty cpuset.
    pub reclaim_fallback: usize,
}

/// The node's pools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pools {
    /// The reserve pool.
    pub reserve: CpuSet,
    /// Dedicated pods' CPUs, by UID.
    pub dedicated: BTreeMap<String, DedicatedAllocation>,
    /// Shared pools by name.
    pub shared: BTreeMap<String, CpuSet>,
    /// The reclaim pool (CPUs nobody else has).
    pub reclaim: CpuSet,
    /// CPUs of shared and dedicated pools reclaimed pods may also use.
    pub reclaim_overlap: CpuSet,
}

/// The reserve pool: `n` CPUs balanced over NUMA nodes, whole cores first,
/// low ids first (§3.1).
pub fn reserve_pool(machine: &Machine, n: usize) -> CpuSet {
    machine.take_balanced(&machine.cpus(), n)
}

/// The NUMA nodes no dedicated pod is bound to: where shared pools live.
pub fn unbound_numas(machine: &Machine, dedicated: &DedicatedCheckpoint) -> Vec<u32> {
    let bound: Vec<u32> = dedicated.allocations.values().map(|a| a.numa).collect();
    machine.numa.iter().map(|n| n.id).filter(|id| !bound.contains(id)).collect()
}

/// Lays the pools out on the CPUs. `previous` are the shared pools' CPUs
/// last time (for stability). Sizes beyond the free CPUs get what there is.
pub fn build(
    machine: &Machine,
    reserve: &CpuSet,
    dedicated: &DedicatedCheckpoint,
    targets: &PoolTargets,
    previous: &BTreeMap<String, CpuSet>,
) -> Pools {
    let reserve = reserve.intersection(&machine.cpus());
    let mut taken = reserve.clone();
    for a in dedicated.allocations.values() {
        taken.union_with(&a.cpus);
    }
    let mut free = CpuSet::default();
    for id in unbound_numas(machine, dedicated) {
        free.union_with(&machine.numa_cpus(id));
    }
    free.difference_with(&taken);
    // Pass 1: each pool keeps what it had, up to its size.
    let mut shared: BTreeMap<String, CpuSet> = BTreeMap::new();
    for (name, &size) in &targets.shared {
        let had = previous.get(name).map(|p| p.intersection(&free)).unwrap_or_default();
        let kept = machine.take_balanced(&had, size);
        free.difference_with(&kept);
        shared.insert(name.clone(), kept);
    }
    // Pass 2: each pool grows from the free CPUs.
    for (name, &size) in &targets.shared {
        let pool = shared.get_mut(name).expect("inserted in pass 1");
        let more = machine.take_balanced(&free, size.saturating_sub(pool.len()));
        free.difference_with(&more);
        pool.union_with(&more);
    }
    let mut reclaim = machine.cpus().difference(&taken);
    for pool in shared.values() {
        reclaim.difference_with(pool);
    }
    let mut reclaim_overlap = CpuSet::default();
    for (name, &n) in &targets.shared_overlap {
        if let Some(pool) = shared.get(name) {
            reclaim_overlap.union_with(&Machine::take_highest(pool, n));
        }
    }
    for (uid, &n) in &targets.dedicated_overlap {
        if let Some(a) = dedicated.allocations.get(uid) {
            reclaim_overlap.union_with(&Machine::take_highest(&a.cpus, n));
        }
    }
    if reclaim.is_empty() && reclaim_overlap.is_empty() {
        let pooled = machine.cpus().difference(&reserve);
        reclaim_overlap = machine.take_balanced(&pooled, targets.reclaim_fallback);
    }
    Pools { reserve, dedicated: dedicated.allocations.clone(), shared, reclaim, reclaim_overlap }
}

impl Pools {
    /// Every CPU reclaimed pods may use: the reclaim pool and the overlap.
    pub fn reclaimed_cpus(&self) -> CpuSet {
        self.reclaim.union(&self.reclaim_overlap)
    }

    /// Why the pools are not an exact partition of `machine`'s CPUs with
    /// the overlap inside shared and dedicated pools (`None`: they are).
    pub fn partition_error(&self, machine: &Machine) -> Option<String> {
        let mut parts: Vec<(String, &CpuSet)> = vec![("reserve".into(), &self.reserve)];
        parts.extend(self.dedicated.iter().map(|(u, a)| (format!("dedicated {u}"), &a.cpus)));
        parts.extend(self.shared.iter().map(|(n, p)| (format!("shared {n}"), p)));
        parts.push(("reclaim".into(), &self.reclaim));
        let mut seen = CpuSet::default();
        let mut overlappable = CpuSet::default();
        for (name, cpus) in &parts {
            if seen.intersects(cpus) {
                return Some(format!("{name} ({cpus}) overlaps an earlier pool ({seen})"));
            }
            seen.union_with(cpus);
            if name.starts_with("dedicated") || name.starts_with("shared") {
                overlappable.union_with(cpus);
            }
        }
        if seen != machine.cpus() {
            return Some(format!("pools cover {seen}, the machine has {}", machine.cpus()));
        }
        if !self.reclaim_overlap.is_subset(&overlappable) {
            return Some(format!(
                "reclaim overlap {} outside shared and dedicated pools",
                self.reclaim_overlap
            ));
        }
        None
    }

    /// The CPUs every pod should run on, by UID: a dedicated pod its own;
    /// a shared pod (or a dedicated one that got no allocation) its pool —
    /// if that is empty, every CPU outside the reserve and dedicated pools,
    /// else the reclaimed CPUs, else every CPU: never an empty cpuset; a reclaimed pod [`Pools::reclaimed_cpus`]; a system pod the
    /// reserve pool when its `cpuset_pool` names a `system*` pool and the
    /// reserve is not empty, else every CPU (Katalyst's §10.5, kept).
    pub fn pod_cpusets(&self, machine: &Machine, pods: &[KPod]) -> BTreeMap<String, CpuSet> {
        let mut pooled = machine.cpus().difference(&self.reserve);
        for a in self.dedicated.values() {
            pooled.difference_with(&a.cpus);
        }
        let shared = |name: &str| {
            let pool = self.shared.get(name).or_else(|| self.shared.get(DEFAULT_SHARED_POOL));
            let fallbacks = [pool.cloned(), Some(pooled.clone()), Some(self.reclaimed_cpus())];
            fallbacks
                .into_iter()
                .flatten()
                .find(|c| !c.is_empty())
                .unwrap_or_else(|| machine.cpus())
        };
        let mut out = BTreeMap::new();
        for p in pods {
            let cpus = match p.level {
                KatalystQoSLevel::DedicatedCores => match self.dedicated.get(&p.uid) {
                    Some(a) => a.cpus.clone(),
                    None => shared(DEFAULT_SHARED_POOL),
                },
                KatalystQoSLevel::SharedCores => shared(&p.pool),
                KatalystQoSLevel::ReclaimedCores => self.reclaimed_cpus(),
                KatalystQoSLevel::SystemCores => {
                    if p.pool.starts_with("system") && !self.reserve.is_empty() {
                        self.reserve.clone()
                    } else {
                        machine.cpus()
                    }
                }
            };
            out.insert(p.uid.clone(), cpus);
        }
        out
    }

    /// The NUMA nodes every pod's memory may come from (`cpuset.mems`,
    /// §3.5), by UID: a dedicated pod its node; shared and reclaimed pods
    /// the nodes no dedicated pod is bound to (every node if there are
    /// none); system pods every node.
    pub fn pod_mems(&self, machine: &Machine, pods: &[KPod]) -> BTreeMap<String, CpuSet> {
        let all: CpuSet = machine.numa.iter().map(|n| n.id).collect();
        let mut unbound = all.clone();
        for a in self.dedicated.values() {
            unbound.remove(a.numa);
        }
        if unbound.is_empty() {
            unbound = all.clone();
        }
        let mut out = BTreeMap::new();
        for p in pods {
            let mems = match (p.level, self.dedicated.get(&p.uid)) {
                (KatalystQoSLevel::DedicatedCores, Some(a)) => CpuSet::from_range(a.numa, a.numa),
                (KatalystQoSLevel::SystemCores, _) => all.clone(),
                _ => unbound.clone(),
            };
            out.insert(p.uid.clone(), mems);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::dedicated::allocate;
    use crate::katalyst::pod::testing::{dedicated, kpod, shared};
    use proptest::prelude::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    fn targets(
        shared: &[(&str, usize)],
        overlap: &[(&str, usize)],
        ded: &[(&str, usize)],
    ) -> PoolTargets {
        let map = |v: &[(&str, usize)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        PoolTargets {
            shared: map(shared),
            shared_overlap: map(overlap),
            dedicated_overlap: map(ded),
            reclaim_fallback: 4,
        }
    }

    #[test]
    fn layout_table() {
        // 2 NUMA × 8 CPUs (SMT pairs); reserve = 2 CPUs balanced: one core on each... taken
        // whole-core-wise: 0-1 (node 0's first core), since 2 CPUs fit one core step.
        let m = Machine::uniform(2, 8, true, 0);
        let reserve = reserve_pool(&m, 2);
        assert_eq!(reserve, set("0-1"));
        assert_eq!(reserve_pool(&m, 4), set("0-1,8-9"));
        let pods = [dedicated("d", 3_000, false), shared("s", 2_000, 1.0)];
        let ded = allocate(&m, &reserve, &DedicatedCheckpoint::default(), &pods).checkpoint;
        // d: 3 CPUs on node 0 → 2-4; node 0 is bound, so its leftovers 5-7 go to reclaim.
        // share: 6 CPUs on node 1 (8-15), balanced, whole cores first → 8-13; reclaim 14-15 too.
        // Overlap: the 2 highest of share (12-13), the 1 highest of d (4).
        let t = targets(&[("share", 6)], &[("share", 2)], &[("uid-d", 1)]);
        let p = build(&m, &reserve, &ded, &t, &BTreeMap::new());
        assert_eq!(p.dedicated["uid-d"].cpus, set("2-4"));
        assert_eq!(p.shared["share"], set("8-13"));
        assert_eq!(p.reclaim, set("5-7,14-15"));
        assert_eq!(p.reclaim_overlap, set("4,12-13"));
        assert_eq!(p.reclaimed_cpus(), set("4-7,12-15"));
        assert_eq!(p.partition_error(&m), None);
        // Shrinking share to 4 keeps 4 of its CPUs (balanced over what it had: 8-11).
        let t = targets(&[("share", 4)], &[], &[]);
        let q = build(&m, &reserve, &ded, &t, &p.shared);
        assert_eq!(q.shared["share"], set("8-11"));
        // Growing back to 6 from 8-11 adds 12-13: nothing it had moves.
        let t = targets(&[("share", 6)], &[], &[]);
        let r = build(&m, &reserve, &ded, &t, &q.shared);
        assert_eq!(r.shared["share"], set("8-13"));
        // Pod cpusets.
        let mut sys = kpod("sys", KatalystQoSLevel::SystemCores, 0);
        let all = p.pod_cpusets(&m, &[sys.clone()]);
        assert_eq!(all["uid-sys"], set("0-15"), "no system pool named: every CPU");
        sys.pool = "system-agents".into();
        let pods =
            [pods[0].clone(), pods[1].clone(), kpod("r", KatalystQoSLevel::ReclaimedCores, 0), sys];
        let cs = p.pod_cpusets(&m, &pods);
        assert_eq!(cs["uid-d"], set("2-4"));
        assert_eq!(cs["uid-s"], set("8-13"));
        assert_eq!(cs["uid-r"], set("4-7,12-15"));
        assert_eq!(cs["uid-sys"], set("0-1"));
        // Memory nodes: d its node 0; the others node 1 (unbound); system all.
        let mems = p.pod_mems(&m, &pods);
        let got: Vec<String> = pods.iter().map(|x| mems[&x.uid].to_string()).collect();
        assert_eq!(got, ["0", "1", "1", "0-1"]);
    }

    /// A random pod mix on a random machine.
    fn scenario() -> impl Strategy<Value = (Machine, usize, Vec<KPod>)> {
        (1u32..=4, 1u32..=8, any::<bool>(), 0usize..=4).prop_flat_map(
            |(numa, half, smt, reserved)| {
                let m = Machine::uniform(numa, half * 2, smt, 0);
                let pod = (0u8..4, 1i64..=12_000, any::<bool>(), 0u8..3)
                    .prop_map(|(kind, cpu, ex, pool)| (kind, cpu, ex, pool));
                (Just(m), Just(reserved), proptest::collection::vec(pod, 0..10)).prop_map(
                    |(m, r, raw)| {
                        let pods = raw
                            .into_iter()
                            .enumerate()
                            .map(|(i, (kind, cpu, ex, pool))| {
                                let name = format!("p{i}");
                                let mut p = match kind {
                                    0 => dedicated(&name, cpu, ex),
                                    1 => kpod(&name, KatalystQoSLevel::ReclaimedCores, cpu),
                                    _ => shared(&name, cpu / 4, 0.5),
                                };
                                p.pool = format!("pool{pool}");
                                p
                            })
                            .collect();
                        (m, r, pods)
                    },
                )
            },
        )
    }

    proptest! {
        #[test]
        fn pools_partition_the_cpus_and_dedicated_cpus_never_move(
            (m, reserved, pods) in scenario(),
            sizes in proptest::collection::vec(0usize..40, 3),
            overlaps in proptest::collection::vec(0usize..40, 3),
            dropped in 0usize..10,
        ) {
            let reserve = reserve_pool(&m, reserved);
            let first = allocate(&m, &reserve, &DedicatedCheckpoint::default(), &pods);
            let t = PoolTargets {
                shared: (0..3).map(|i| (format!("pool{i}"), sizes[i])).collect(),
                shared_overlap: (0..3).map(|i| (format!("pool{i}"), overlaps[i])).collect(),
                dedicated_overlap: first.checkpoint.allocations.keys().map(|u| (u.clone(), 1)).collect(),
                reclaim_fallback: 4,
            };
            let p1 = build(&m, &reserve, &first.checkpoint, &t, &BTreeMap::new());
            prop_assert_eq!(p1.partition_error(&m), None);
            // Second round: one pod gone, sizes reversed: kept allocations are identical.
            let mut later = pods.clone();
            if dropped < later.len() { later.remove(dropped); }
            let second = allocate(&m, &reserve, &first.checkpoint, &later);
            for (uid, a) in &second.checkpoint.allocations {
                if let Some(before) = first.checkpoint.allocations.get(uid) {
                    prop_assert_eq!(a, before);
                }
            }
            let t2 = PoolTargets {
                shared: (0..3).map(|i| (format!("pool{i}"), sizes[2 - i])).collect(),
                ..t
            };
            let p2 = build(&m, &reserve, &second.checkpoint, &t2, &p1.shared);
            prop_assert_eq!(p2.partition_error(&m), None);
            // Every non-reclaimed pod's cpuset is non-empty (the reclaimed
            // CPUs' floor is the advisor's job, tested with it); a dedicated
            // pod's is its own and overlaps no other pool.
            let cpusets = p2.pod_cpusets(&m, &later);
            for p in later.iter().filter(|p| !p.is_reclaimed()) {
                prop_assert!(!cpusets[&p.uid].is_empty(), "{} empty", p.key);
                if let Some(a) = p2.dedicated.get(&p.uid) {
                    prop_assert_eq!(&cpusets[&p.uid], &a.cpus);
                    prop_assert!(!a.cpus.intersects(&p2.reclaim) && !a.cpus.intersects(&p2.reserve));
                }
            }
        }
    }
}
