//! Exclusive cpusets for `dedicated_cores` pods, allocated like Katalyst's
//! QRM dynamic policy (spec §3.1–§3.3), and the checkpoint that keeps them.
//!
//! * A dedicated pod must have `numa_binding` (§10.4: Katalyst refuses
//!   dedicated pods without it; so does this policy — the koordinator
//!   policy runs them as LSR).
//! * It gets CPUs of **one** NUMA node: with `numa_exclusive`, every CPU of
//!   a node nothing else is allocated on (minus the reserve pool);
//!   otherwise `ceil(request)` CPUs, whole cores first, preferring a node
//!   that already hosts dedicated pods (so fewer nodes leave the shared
//!   pools), then the lowest id. A pod larger than a node is refused
//!   (Katalyst's multi-NUMA `numa_number` hints are not implemented).
//! * A node is not taken if the non-binding nodes left could no longer
//!   hold the shared pods' requests (§3.2's starvation check).
//! * **Stable**: an allocation in the checkpoint is never moved or resized
//!   while its pod stays `dedicated_cores` (Katalyst does not resize
//!   dedicated pods in place either); a pod gone or no longer dedicated
//!   releases it. The checkpoint is data in and out: the act side persists
//!   it so a restart finds the same CPUs.
//!
//! A refused pod keeps running where it is; the pools count it with the
//! default shared pool.

use std::collections::{BTreeMap, BTreeSet};

use kolo_api::katalyst::KatalystQoSLevel;
use kolo_core::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

use super::machine::Machine;
use super::pod::KPod;
use crate::qos::cpu_suppress::place;

/// One dedicated pod's CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DedicatedAllocation {
    /// `namespace/name` (for people reading the checkpoint).
    pub pod: String,
    /// The NUMA node (its `cpuset.mems`).
    pub numa: u32,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Whether it owns the whole node.
    pub exclusive: bool,
}

/// The dedicated allocations, by pod UID: what the act side persists.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DedicatedCheckpoint {
    /// Allocations by pod UID.
    pub allocations: BTreeMap<String, DedicatedAllocation>,
}

/// Why a dedicated pod got no CPUs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `dedicated_cores` without `numa_binding`.
    #[error(
        "dedicated_cores without memory_enhancement numa_binding is not supported by the katalyst node policy"
    )]
    NoNumaBinding,
    /// Larger than any NUMA node.
    #[error(
        "needs {needed} CPUs, the largest NUMA node has {largest} outside the reserve pool (multi-NUMA dedicated pods are not supported)"
    )]
    TooLarge {
        /// CPUs needed.
        needed: usize,
        /// CPUs of the largest node, minus reserved ones.
        largest: usize,
    },
    /// No node has room.
    #[error("no NUMA node has {needed} free CPUs{}", if *exclusive { " and nothing else allocated (numa_exclusive)" } else { "" })]
    NoRoom {
        /// CPUs needed.
        needed: usize,
        /// Whether it asked for a whole node.
        exclusive: bool,
    },
    /// Every node with room would leave shared pods without their CPUs.
    #[error(
        "taking NUMA node {numa} would leave {left} CPUs for shared pods requesting {shared} CPUs"
    )]
    WouldStarveShared {
        /// The first node that had room.
        numa: u32,
        /// CPUs left on non-binding nodes.
        left: usize,
        /// The shared pods' requests, CPUs (rounded up).
        shared: usize,
    },
    /// A checkpointed allocation is not possible on this machine (CPUs
    /// outside its node or the reserve pool, or taken by another entry).
    #[error("checkpointed CPUs {cpus} on NUMA node {numa} are not available")]
    CheckpointConflict {
        /// The entry's node.
        numa: u32,
        /// The entry's CPUs.
        cpus: CpuSet,
    },
}

/// A refused pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// UID.
    pub uid: String,
    /// `namespace/name`.
    pub pod: String,
    /// Why.
    pub reason: Refusal,
}

/// What an allocation round decided.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DedicatedOutcome {
    /// The allocations now (persist this).
    pub checkpoint: DedicatedCheckpoint,
    /// UIDs allocated this round.
    pub admitted: Vec<String>,
    /// Allocations released (pod gone or no longer dedicated), by UID.
    pub released: Vec<String>,
    /// Pods that got nothing.
    pub refused: Vec<Refused>,
}

/// The free CPUs of each node, and which nodes are bound / exclusive.
struct Room {
    /// Each node's CPUs outside the reserve pool.
    available: BTreeMap<u32, usize>,
    free: BTreeMap<u32, CpuSet>,
    bound: BTreeSet<u32>,
    exclusive: BTreeSet<u32>,
}

impl Room {
    fn new(machine: &Machine, reserve: &CpuSet) -> Room {
        let free: BTreeMap<u32, CpuSet> =
            machine.numa.iter().map(|n| (n.id, n.cpus.difference(reserve))).collect();
        let available = free.iter().map(|(id, f)| (*id, f.len())).collect();
        Room { available, free, bound: BTreeSet::new(), exclusive: BTreeSet::new() }
    }

    fn fits(&self, a: &DedicatedAllocation) -> bool {
        let free = self.free.get(&a.numa);
        let ok = free.is_some_and(|f| !a.cpus.is_empty() && a.cpus.is_subset(f));
        ok && !self.exclusive.contains(&a.numa) && !(a.exclusive && self.bound.contains(&a.numa))
    }

    fn take(&mut self, a: &DedicatedAllocation) {
        if let Some(free) = self.free.get_mut(&a.numa) {
            free.difference_with(&a.cpus);
        }
        self.bound.insert(a.numa);
        if a.exclusive {
            self.exclusive.insert(a.numa);
        }
    }

    /// CPUs of the non-binding nodes if `numa` became binding too.
    fn unbound_left(&self, numa: u32) -> usize {
        let mut left = 0;
        for (id, free) in &self.free {
            if *id != numa && !self.bound.contains(id) {
                left += free.len();
            }
        }
        left
    }
}

/// Allocates the dedicated pods of `pods` (in order: earlier pods first),
/// keeping every allocation of `previous` whose pod is still dedicated.
pub fn allocate(
    machine: &Machine,
    reserve: &CpuSet,
    previous: &DedicatedCheckpoint,
    pods: &[KPod],
) -> DedicatedOutcome {
    let dedicated: BTreeMap<&str, &KPod> = pods
        .iter()
        .filter(|p| p.level == KatalystQoSLevel::DedicatedCores)
        .map(|p| (p.uid.as_str(), p))
        .collect();
    let mut out = DedicatedOutcome::default();
    let mut room = Room::new(machine, reserve);
    for (uid, a) in &previous.allocations {
        if !dedicated.contains_key(uid.as_str()) {
            out.released.push(uid.clone());
        } else if room.fits(a) {
            room.take(a);
            out.checkpoint.allocations.insert(uid.clone(), a.clone());
        } else {
            let reason = Refusal::CheckpointConflict { numa: a.numa, cpus: a.cpus.clone() };
            out.refused.push(Refused { uid: uid.clone(), pod: a.pod.clone(), reason });
        }
    }
    let shared: usize = pods
        .iter()
        .filter(|p| p.level == KatalystQoSLevel::SharedCores)
        .map(|p| usize::try_from(p.cpu_request_milli.max(0)).unwrap_or(0))
        .sum::<usize>()
        .div_ceil(1000);
    for p in pods.iter().filter(|p| p.level == KatalystQoSLevel::DedicatedCores) {
        if previous.allocations.contains_key(&p.uid) {
            continue;
        }
        match place_one(machine, &room, p, shared) {
            Ok(a) => {
                room.take(&a);
                out.admitted.push(p.uid.clone());
                out.checkpoint.allocations.insert(p.uid.clone(), a);
            }
            Err(reason) => {
                out.refused.push(Refused { uid: p.uid.clone(), pod: p.key.clone(), reason })
            }
        }
    }
    out
}

/// Picks a node and CPUs for one new pod.
fn place_one(
    machine: &Machine,
    room: &Room,
    p: &KPod,
    shared: usize,
) -> Result<DedicatedAllocation, Refusal> {
    if !p.numa_binding {
        return Err(Refusal::NoNumaBinding);
    }
    let needed = p.cpus_needed();
    let largest = room.available.values().copied().max().unwrap_or(0);
    if largest < needed {
        return Err(Refusal::TooLarge { needed, largest });
    }
    // Nodes with room: bound ones first (non-exclusive pods), then by id.
    let mut candidates: Vec<u32> = room
        .free
        .iter()
        .filter(|(id, free)| {
            !room.exclusive.contains(id)
                && free.len() >= needed
                && !(p.numa_exclusive && room.bound.contains(id))
        })
        .map(|(id, _)| *id)
        .collect();
    candidates.sort_by_key(|id| (!room.bound.contains(id) || p.numa_exclusive, *id));
    let Some(&first) = candidates.first() else {
        return Err(Refusal::NoRoom { needed, exclusive: p.numa_exclusive });
    };
    let numa = candidates
        .into_iter()
        .find(|id| room.bound.contains(id) || room.unbound_left(*id) >= shared)
        .ok_or(Refusal::WouldStarveShared {
            numa: first,
            left: room.unbound_left(first),
            shared,
        })?;
    let free = &room.free[&numa];
    let cpus = if p.numa_exclusive { free.clone() } else { place(needed, free, &machine.cores) };
    Ok(DedicatedAllocation { pod: p.key.clone(), numa, cpus, exclusive: p.numa_exclusive })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::pod::testing::{dedicated, shared};

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    /// (uid, numa, cpus) of every allocation.
    fn alloc(o: &DedicatedOutcome) -> Vec<(String, u32, String)> {
        o.checkpoint
            .allocations
            .iter()
            .map(|(u, a)| (u.clone(), a.numa, a.cpus.to_string()))
            .collect()
    }

    #[test]
    fn allocation_table() {
        // 2 NUMA nodes × 8 CPUs, SMT pairs (2k, 2k+1); reserve 0-1.
        let m = Machine::uniform(2, 8, true, 0);
        let reserve = set("0-1");
        let row = |u: &str, n: u32, c: &str| (format!("uid-{u}"), n, c.to_string());
        type Row = (Vec<KPod>, Vec<(String, u32, String)>, Vec<(&'static str, &'static str)>);
        let table: Vec<Row> = vec![
            // ceil(2.5) = 3 CPUs, whole cores first: 2-3 then 4.
            (vec![dedicated("a", 2_500, false)], vec![row("a", 0, "2-4")], vec![]),
            // Exclusive: every CPU of node 0 but the reserve.
            (vec![dedicated("a", 1_000, true)], vec![row("a", 0, "2-7")], vec![]),
            // A second non-exclusive pod packs onto the bound node 0.
            (
                vec![dedicated("a", 2_000, false), dedicated("b", 2_000, false)],
                vec![row("a", 0, "2-3"), row("b", 0, "4-5")],
                vec![],
            ),
            // An exclusive pod cannot share a node: node 1 for the second.
            (
                vec![dedicated("a", 2_000, false), dedicated("b", 1_000, true)],
                vec![row("a", 0, "2-3"), row("b", 1, "8-15")],
                vec![],
            ),
            // 9 CPUs: larger than a node.
            (vec![dedicated("a", 9_000, false)], vec![], vec![("ns/a", "needs 9 CPUs")]),
            // Node 0 has only 6 CPUs outside the reserve: node 1.
            (vec![dedicated("a", 7_000, false)], vec![row("a", 1, "8-14")], vec![]),
            // Shared pods request 7 CPUs: the last unbound node stays theirs.
            (
                vec![
                    shared("s", 7_000, 1.0),
                    dedicated("a", 2_000, true),
                    dedicated("b", 2_000, true),
                ],
                vec![row("a", 0, "2-7")],
                vec![("ns/b", "taking NUMA node 1 would leave 0 CPUs")],
            ),
            // Without numa_binding: refused.
            (
                vec![{
                    let mut p = dedicated("a", 1_000, false);
                    p.numa_binding = false;
                    p
                }],
                vec![],
                vec![("ns/a", "dedicated_cores without")],
            ),
        ];
        for (pods, want, refused) in table {
            let out = allocate(&m, &reserve, &DedicatedCheckpoint::default(), &pods);
            assert_eq!(alloc(&out), want, "{pods:?}");
            let got: Vec<(String, String)> =
                out.refused.iter().map(|r| (r.pod.clone(), r.reason.to_string())).collect();
            assert_eq!(got.len(), refused.len(), "{got:?}");
            for ((pod, reason), (want_pod, want_reason)) in got.iter().zip(&refused) {
                assert_eq!(pod, want_pod);
                assert!(reason.starts_with(want_reason), "{reason}");
            }
        }
    }

    #[test]
    fn checkpointed_allocations_never_move() {
        let m = Machine::uniform(2, 8, true, 0);
        let reserve = CpuSet::default();
        // Round 1: a on node 0.
        let first = allocate(
            &m,
            &reserve,
            &DedicatedCheckpoint::default(),
            &[dedicated("a", 2_000, false)],
        );
        assert_eq!(alloc(&first), [("uid-a".to_string(), 0, "0-1".to_string())]);
        // A restart: the checkpoint round-trips through JSON.
        let json = serde_json::to_string(&first.checkpoint).unwrap();
        let restored: DedicatedCheckpoint = serde_json::from_str(&json).unwrap();
        // Round 2: a's request grew and b arrives first in the list: a keeps 0-1.
        let pods = [dedicated("b", 2_000, false), dedicated("a", 4_000, false)];
        let second = allocate(&m, &reserve, &restored, &pods);
        assert_eq!(
            alloc(&second),
            [
                ("uid-a".to_string(), 0, "0-1".to_string()),
                ("uid-b".to_string(), 0, "2-3".to_string())
            ]
        );
        assert_eq!(second.admitted, ["uid-b"]);
        // Round 3: a is gone: released; b stays.
        let third = allocate(&m, &reserve, &second.checkpoint, &pods[..1]);
        assert_eq!(third.released, ["uid-a"]);
        assert_eq!(alloc(&third), [("uid-b".to_string(), 0, "2-3".to_string())]);
        // A corrupt checkpoint (CPUs of node 1 said to be on node 0) is refused, named.
        let mut bad = third.checkpoint.clone();
        bad.allocations.get_mut("uid-b").unwrap().cpus = set("8-9");
        let out = allocate(&m, &reserve, &bad, &pods[..1]);
        assert_eq!(
            out.refused[0].reason.to_string(),
            "checkpointed CPUs 8-9 on NUMA node 0 are not available"
        );
    }
}
