//! [`NodeAllocation`]: which CPUs and NUMA resources the pods on one node
//! hold (spec §6.6 step 4).

use std::collections::{BTreeMap, HashMap};

use kolo_core::resources::ResourceVector;

use super::annotations::{CpuExclusivePolicy, NumaNodeResources};
use super::cpuset::CpuSet;
use super::topology::CpuTopology;

/// A CPU counts as allocated once this many pods hold it (Koordinator's
/// `MaxRefCount`; CPUs are never shared between cpuset pods).
pub const MAX_REF_COUNT: u32 = 1;

/// What one pod holds on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAllocation {
    /// The pod's CPUs (empty if it has no cpuset).
    pub cpuset: CpuSet,
    /// The pod's exclusive policy.
    pub exclusive_policy: CpuExclusivePolicy,
    /// The resources it takes from each NUMA node.
    pub numa_resources: Vec<NumaNodeResources>,
}

/// Per-CPU holders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CpuRefs {
    /// Pods holding the CPU.
    total: u32,
    /// Of which PCPULevel-exclusive.
    pcpu_level: u32,
    /// Of which NUMANodeLevel-exclusive.
    numa_node_level: u32,
}

/// The cpusets and NUMA resources held on one node, keyed by pod.
///
/// Koordinator keeps one exclusive policy per CPU (the last writer's); kolo
/// counts holders per policy, so releasing one pod never clears the
/// exclusivity another pod still holds on a shared CPU.
#[derive(Debug, Clone, Default)]
pub struct NodeAllocation {
    pods: HashMap<Box<str>, PodAllocation>,
    /// Indexed by CPU id.
    cpus: Vec<CpuRefs>,
    /// CPUs whose refcount reached [`MAX_REF_COUNT`].
    allocated: CpuSet,
    numa: BTreeMap<u32, ResourceVector>,
}

impl NodeAllocation {
    /// No pod holds anything.
    pub fn new() -> NodeAllocation {
        NodeAllocation::default()
    }

    /// Records what pod `pod_key` (namespace/name or uid; any stable key)
    /// holds. Idempotent: adding a pod again replaces its previous record,
    /// so an informer replay or a Reserve after an assume counts once.
    pub fn add(
        &mut self,
        pod_key: &str,
        cpuset: CpuSet,
        exclusive_policy: CpuExclusivePolicy,
        numa_resources: Vec<NumaNodeResources>,
    ) {
        self.release(pod_key);
        let record = PodAllocation { cpuset, exclusive_policy, numa_resources };
        self.apply(&record, true);
        self.pods.insert(pod_key.into(), record);
    }

    /// Forgets pod `pod_key`; returns what it held. Releasing an unknown
    /// pod does nothing.
    pub fn release(&mut self, pod_key: &str) -> Option<PodAllocation> {
        let record = self.pods.remove(pod_key)?;
        self.apply(&record, false);
        Some(record)
    }

    fn apply(&mut self, record: &PodAllocation, add: bool) {
        for cpu in record.cpuset.iter() {
            let i = cpu as usize;
            if i >= self.cpus.len() {
                self.cpus.resize(i + 1, CpuRefs::default());
            }
            let refs = &mut self.cpus[i];
            let step =
                |v: &mut u32| *v = if add { v.saturating_add(1) } else { v.saturating_sub(1) };
            step(&mut refs.total);
            match record.exclusive_policy {
                CpuExclusivePolicy::PCPULevel => step(&mut refs.pcpu_level),
                CpuExclusivePolicy::NUMANodeLevel => step(&mut refs.numa_node_level),
                CpuExclusivePolicy::None => {}
            }
            if refs.total >= MAX_REF_COUNT {
                self.allocated.insert(cpu);
            } else {
                self.allocated.remove(cpu);
            }
        }
        for n in &record.numa_resources {
            let slot = self.numa.entry(n.node).or_default();
            *slot = if add {
                slot.saturating_add(&n.resources)
            } else {
                slot.saturating_sub(&n.resources)
            };
        }
        if !add {
            self.numa.retain(|_, v| !v.is_zero());
        }
    }

    /// What pod `pod_key` holds.
    pub fn get(&self, pod_key: &str) -> Option<&PodAllocation> {
        self.pods.get(pod_key)
    }

    /// The number of pods recorded.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Whether no pod holds anything.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// CPUs held by at least [`MAX_REF_COUNT`] pods.
    pub fn allocated_cpus(&self) -> &CpuSet {
        &self.allocated
    }

    /// How many pods hold `cpu`.
    pub fn ref_count(&self, cpu: u32) -> u32 {
        self.cpus.get(cpu as usize).map_or(0, |r| r.total)
    }

    /// Whether a PCPULevel pod holds `cpu`.
    pub fn held_pcpu_exclusive(&self, cpu: u32) -> bool {
        self.cpus.get(cpu as usize).is_some_and(|r| r.pcpu_level > 0)
    }

    /// Whether a NUMANodeLevel pod holds `cpu`.
    pub fn held_numa_exclusive(&self, cpu: u32) -> bool {
        self.cpus.get(cpu as usize).is_some_and(|r| r.numa_node_level > 0)
    }

    /// The resources allocated from NUMA node `node`.
    pub fn numa_allocated(&self, node: u32) -> ResourceVector {
        self.numa.get(&node).copied().unwrap_or_default()
    }

    /// The CPUs a new cpuset may use: the topology's CPUs minus the
    /// allocated and the reserved ones, plus `preferred` (CPUs a matched
    /// reservation holds for the pod) that are neither reserved nor outside
    /// the topology (spec §6.7 step 1).
    pub fn available_cpus(
        &self,
        topology: &CpuTopology,
        reserved: &CpuSet,
        preferred: &CpuSet,
    ) -> CpuSet {
        let mut available = topology.all_cpus().difference(&self.allocated);
        available.union_with(&preferred.intersection(topology.all_cpus()));
        available.difference_with(reserved);
        available
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_core::resources::ResourceName;
    use proptest::prelude::*;

    fn numa(node: u32, cpu: i64) -> NumaNodeResources {
        NumaNodeResources { node, resources: ResourceVector::EMPTY.with(ResourceName::Cpu, cpu) }
    }

    #[test]
    fn add_release_and_available() {
        let t = CpuTopology::synthetic(1, 2, 2, 2);
        let mut a = NodeAllocation::new();
        a.add(
            "ns/a",
            CpuSet::parse("0-1").unwrap(),
            CpuExclusivePolicy::PCPULevel,
            vec![numa(0, 2000)],
        );
        a.add(
            "ns/b",
            CpuSet::parse("4").unwrap(),
            CpuExclusivePolicy::NUMANodeLevel,
            vec![numa(1, 1000)],
        );
        assert_eq!(a.allocated_cpus().to_string(), "0-1,4");
        assert!(a.held_pcpu_exclusive(1) && !a.held_pcpu_exclusive(4));
        assert!(a.held_numa_exclusive(4));
        assert_eq!(a.numa_allocated(0).cpu(), 2000);
        let reserved = CpuSet::parse("7").unwrap();
        assert_eq!(a.available_cpus(&t, &reserved, &CpuSet::new()).to_string(), "2-3,5-6");
        let preferred = CpuSet::parse("0-1,7,40").unwrap();
        assert_eq!(a.available_cpus(&t, &reserved, &preferred).to_string(), "0-3,5-6");

        // Same pod again with another cpuset: replaced, not added.
        a.add("ns/a", CpuSet::parse("2").unwrap(), CpuExclusivePolicy::None, vec![numa(0, 1000)]);
        assert_eq!(a.allocated_cpus().to_string(), "2,4");
        assert!(!a.held_pcpu_exclusive(0));
        assert_eq!(a.numa_allocated(0).cpu(), 1000);
        assert_eq!(a.pod_count(), 2);

        assert!(a.release("ns/a").is_some());
        assert!(a.release("ns/a").is_none());
        assert!(a.release("ns/b").is_some());
        assert!(a.is_empty() && a.allocated_cpus().is_empty());
        assert_eq!(a.numa_allocated(0), ResourceVector::EMPTY);
    }

    proptest! {
        /// Any sequence of adds and releases leaves the state of a fresh
        /// allocation built from the surviving pods only; adding twice counts
        /// once.
        #[test]
        fn idempotent(ops in proptest::collection::vec((0usize..4, any::<bool>(), proptest::collection::btree_set(0u32..16, 0..4), 0usize..3), 0..40)) {
            let mut a = NodeAllocation::new();
            let mut model: BTreeMap<usize, (CpuSet, CpuExclusivePolicy)> = BTreeMap::new();
            let policies = [CpuExclusivePolicy::None, CpuExclusivePolicy::PCPULevel, CpuExclusivePolicy::NUMANodeLevel];
            for (pod, add, cpus, policy) in ops {
                let key = format!("p{pod}");
                if add {
                    let set: CpuSet = cpus.into_iter().collect();
                    let n = set.len() as i64 * 1000;
                    a.add(&key, set.clone(), policies[policy], vec![numa(0, n)]);
                    a.add(&key, set.clone(), policies[policy], vec![numa(0, n)]);
                    model.insert(pod, (set, policies[policy]));
                } else {
                    a.release(&key);
                    model.remove(&pod);
                }
            }
            let mut fresh = NodeAllocation::new();
            for (pod, (set, policy)) in &model {
                fresh.add(&format!("p{pod}"), set.clone(), *policy, vec![numa(0, set.len() as i64 * 1000)]);
            }
            prop_assert_eq!(a.allocated_cpus(), fresh.allocated_cpus());
            prop_assert_eq!(a.numa_allocated(0).cpu(), fresh.numa_allocated(0).cpu());
            for cpu in 0..16 {
                prop_assert_eq!(a.ref_count(cpu), fresh.ref_count(cpu));
                prop_assert_eq!(a.held_pcpu_exclusive(cpu), fresh.held_pcpu_exclusive(cpu));
                prop_assert_eq!(a.held_numa_exclusive(cpu), fresh.held_numa_exclusive(cpu));
            }
        }
    }
}
