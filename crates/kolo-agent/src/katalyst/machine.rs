//! The machine as the pools see it: NUMA nodes with their CPUs and memory,
//! and each CPU's (socket, core) for whole-core placement.

use std::collections::BTreeMap;

use kolo_core::cpuset::CpuSet;

use crate::collect::topology::CpuTopology;
use crate::qos::cpu_suppress::place;

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numa {
    /// Node id.
    pub id: u32,
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its memory, bytes (0 when unknown).
    pub memory_bytes: u64,
}

/// The machine.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Machine {
    /// NUMA nodes with CPUs, by id.
    pub numa: Vec<Numa>,
    /// CPU → (socket, core).
    pub cores: BTreeMap<u32, (u32, u32)>,
}

impl Machine {
    /// From the sysfs topology; NUMA nodes without CPUs are left out.
    pub fn from_topology(topology: &CpuTopology) -> Machine {
        let numa = topology
            .numa_nodes
            .iter()
            .filter(|n| !n.cpus.is_empty())
            .map(|n| Numa {
                id: n.id,
                cpus: n.cpus.clone(),
                memory_bytes: n.memory_total_bytes.unwrap_or(0),
            })
            .collect();
        let cores = topology.cpus.iter().map(|c| (c.id, (c.socket_id, c.core_id))).collect();
        Machine { numa, cores }
    }

    /// A regular machine: `numa` nodes of `cpus_per_numa` CPUs each (ids
    /// consecutive per node), one socket per node, hyper-thread pairs
    /// (`2k`, `2k+1`) when `smt`, `memory_per_numa` bytes per node.
    pub fn uniform(numa: u32, cpus_per_numa: u32, smt: bool, memory_per_numa: u64) -> Machine {
        let mut m = Machine::default();
        for n in 0..numa {
            let first = n * cpus_per_numa;
            let cpus = CpuSet::from_range(first, first + cpus_per_numa - 1);
            for cpu in &cpus {
                let core = if smt { cpu / 2 } else { cpu };
                m.cores.insert(cpu, (n, core));
            }
            m.numa.push(Numa { id: n, cpus, memory_bytes: memory_per_numa });
        }
        m
    }

    /// Every CPU.
    pub fn cpus(&self) -> CpuSet {
        let mut all = CpuSet::default();
        for n in &self.numa {
            all.union_with(&n.cpus);
        }
        all
    }

    /// The CPUs of NUMA node `id` (empty if unknown).
    pub fn numa_cpus(&self, id: u32) -> CpuSet {
        self.numa.iter().find(|n| n.id == id).map(|n| n.cpus.clone()).unwrap_or_default()
    }

    /// The NUMA node holding `cpu`.
    pub fn numa_of(&self, cpu: u32) -> Option<u32> {
        self.numa.iter().find(|n| n.cpus.contains(cpu)).map(|n| n.id)
    }

    /// Whether some core has two logical CPUs.
    pub fn smt(&self) -> bool {
        let mut seen = std::collections::BTreeSet::new();
        self.cores.values().any(|core| !seen.insert(*core))
    }

    /// Total memory, bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.numa.iter().map(|n| n.memory_bytes).sum()
    }

    /// `n` CPUs of `from`, balanced over the NUMA nodes (a share per node
    /// in turns, whole cores at a time on an SMT machine) and whole cores
    /// first within a node ([`place`]). At most all of `from`.
    pub fn take_balanced(&self, from: &CpuSet, n: usize) -> CpuSet {
        let parts: Vec<CpuSet> = self.numa.iter().map(|m| m.cpus.intersection(from)).collect();
        let mut want = vec![0usize; parts.len()];
        let step = if self.smt() { 2 } else { 1 };
        let mut left = n.min(from.len());
        while left > 0 {
            let mut progressed = false;
            for (i, part) in parts.iter().enumerate() {
                let take = step.min(left).min(part.len() - want[i]);
                want[i] += take;
                left -= take;
                progressed |= take > 0;
            }
            if !progressed {
                break;
            }
        }
        let mut picked = CpuSet::default();
        for (part, k) in parts.iter().zip(want) {
            picked.union_with(&place(k, part, &self.cores));
        }
        picked
    }

    /// The `n` highest CPUs of `from` (where Katalyst carves the reclaimed
    /// overlap out of a pool, "reversely").
    pub fn take_highest(from: &CpuSet, n: usize) -> CpuSet {
        let skip = from.len().saturating_sub(n);
        from.iter().skip(skip).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    #[test]
    fn from_the_sysfs_topology() {
        use crate::collect::topology::{CpuInfo, NumaNode};
        let cpu = |id: u32, core: u32, numa: u32| CpuInfo {
            id,
            core_id: core,
            socket_id: numa,
            numa_node: numa,
            siblings: CpuSet::default(),
        };
        let node = |id: u32, cpus: &str, mem: Option<u64>| NumaNode {
            id,
            cpus: set(cpus),
            memory_total_bytes: mem,
        };
        let t = CpuTopology {
            cpus: vec![cpu(0, 0, 0), cpu(1, 0, 0), cpu(2, 1, 1), cpu(3, 1, 1)],
            // Node 2 has memory but no CPUs: left out.
            numa_nodes: vec![
                node(0, "0-1", Some(1 << 30)),
                node(1, "2-3", None),
                node(2, "", Some(1)),
            ],
        };
        let m = Machine::from_topology(&t);
        assert_eq!(m.numa.len(), 2);
        assert_eq!((m.numa[0].memory_bytes, m.numa[1].memory_bytes), (1 << 30, 0));
        assert_eq!(m.cpus(), set("0-3"));
        assert_eq!((m.numa_of(2), m.numa_of(9)), (Some(1), None));
        assert!(m.smt());
        assert_eq!(m.numa_cpus(1), set("2-3"));
    }

    #[test]
    fn take_balanced_spreads_whole_cores_over_numa_nodes() {
        let m = Machine::uniform(2, 8, true, 0);
        // (from, n, expected)
        let table = [
            ("0-15", 2, "0-1"),
            ("0-15", 4, "0-1,8-9"),
            ("0-15", 6, "0-3,8-9"),
            ("2-15", 4, "2-3,8-9"),
            ("0-3", 4, "0-3"), // one node only
            ("0-3", 9, "0-3"), // more than there is
            ("0-15", 0, ""),
        ];
        for (from, n, want) in table {
            assert_eq!(m.take_balanced(&set(from), n), set(want), "{from} {n}");
        }
        assert!(m.smt());
        assert!(!Machine::uniform(1, 4, false, 0).smt());
        assert_eq!(Machine::take_highest(&set("0-5,9"), 3), set("4-5,9"));
    }
}
