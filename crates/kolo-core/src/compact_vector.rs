//! A [`ResourceVector`] stored in a few words when it holds no more than
//! cpu and memory, which is what a pod's or a node's usage holds nearly
//! always.
//!
//! Why: a usage report lists every pod of a node, and a thousand nodes
//! report every minute (`kolo sim`; a large cluster too). With a full
//! vector (24 slots, 200 bytes) per pod, writing and reading the reports
//! was mostly moving cache lines of zeros; a compact entry fits a report's
//! pod in one line.

use crate::resources::{ResourceName, ResourceVector};

/// Which of cpu and memory a [`CompactVector::CpuMemory`] holds.
const HAS_CPU: u8 = 1;
const HAS_MEMORY: u8 = 2;

/// A resource vector, compact when it holds only cpu and/or memory.
///
/// A storage form of [`ResourceVector`], not a type to compute with: it
/// holds exactly the same values (any resource, with presence), and readers
/// convert it back; it exists to keep the thousands of per-pod usage entries
/// of reports small. Unlike [`CpuMem`](crate::CpuMem), it can hold any
/// resource and tells a missing cpu or memory from a zero one.
///
/// The form is canonical (a vector that fits the compact form is always
/// stored in it), so the derived equality is the vectors' equality.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CompactVector {
    /// At most cpu (milli-cores) and memory (bytes); `present` says which.
    CpuMemory {
        /// `HAS_CPU | HAS_MEMORY` bits.
        present: u8,
        /// cpu, 0 when absent.
        cpu: i64,
        /// memory, 0 when absent.
        memory: i64,
    },
    /// Any other resource present: the whole vector.
    Full(Box<ResourceVector>),
}

impl Default for CompactVector {
    fn default() -> CompactVector {
        CompactVector::CpuMemory { present: 0, cpu: 0, memory: 0 }
    }
}

impl CompactVector {
    /// A vector holding just `cpu` (milli-cores) and `memory` (bytes).
    pub fn cpu_memory(cpu_milli: i64, memory_bytes: i64) -> CompactVector {
        CompactVector::CpuMemory {
            present: HAS_CPU | HAS_MEMORY,
            cpu: cpu_milli,
            memory: memory_bytes,
        }
    }

    /// The amount of `name`, or `None` if it is missing.
    pub fn get(&self, name: ResourceName) -> Option<i64> {
        match self {
            CompactVector::CpuMemory { present, cpu, memory } => match name {
                ResourceName::Cpu => (present & HAS_CPU != 0).then_some(*cpu),
                ResourceName::Memory => (present & HAS_MEMORY != 0).then_some(*memory),
                _ => None,
            },
            CompactVector::Full(v) => v.get(name),
        }
    }

    /// The amount of `name`, 0 if it is missing.
    pub fn value(&self, name: ResourceName) -> i64 {
        self.get(name).unwrap_or(0)
    }

    /// `cpu` in milli-cores, 0 if missing.
    pub fn cpu(&self) -> i64 {
        self.value(ResourceName::Cpu)
    }

    /// `memory` in bytes, 0 if missing.
    pub fn memory(&self) -> i64 {
        self.value(ResourceName::Memory)
    }

    /// The full vector.
    pub fn to_vector(&self) -> ResourceVector {
        match self {
            CompactVector::CpuMemory { .. } => {
                let mut v = ResourceVector::EMPTY;
                for name in [ResourceName::Cpu, ResourceName::Memory] {
                    if let Some(amount) = self.get(name) {
                        v.set(name, amount);
                    }
                }
                v
            }
            CompactVector::Full(v) => **v,
        }
    }
}

impl From<ResourceVector> for CompactVector {
    fn from(v: ResourceVector) -> CompactVector {
        let mut present = 0;
        for (name, bit) in [(ResourceName::Cpu, HAS_CPU), (ResourceName::Memory, HAS_MEMORY)] {
            if v.contains(name) {
                present |= bit;
            }
        }
        if v.len() == present.count_ones() as usize {
            CompactVector::CpuMemory { present, cpu: v.cpu(), memory: v.memory() }
        } else {
            CompactVector::Full(Box::new(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn cpu_and_memory_stay_compact_and_anything_else_is_kept_whole() {
        let cases = [
            (ResourceVector::EMPTY, true),
            (ResourceVector::EMPTY.with(ResourceName::Cpu, 5), true),
            (ResourceVector::EMPTY.with(ResourceName::Memory, 0), true),
            (ResourceVector::cpu_memory(100, 1 << 30), true),
            (ResourceVector::EMPTY.with(ResourceName::Pods, 3), false),
            (ResourceVector::cpu_memory(1, 2).with(ResourceName::BatchCpu, 7), false),
        ];
        for (v, compact) in cases {
            let c = CompactVector::from(v);
            assert_eq!(matches!(c, CompactVector::CpuMemory { .. }), compact, "{v:?}");
            assert_eq!(c.to_vector(), v, "round trip");
        }
        assert_eq!(CompactVector::cpu_memory(100, 7), ResourceVector::cpu_memory(100, 7).into());
        assert_eq!(CompactVector::default(), ResourceVector::EMPTY.into());
    }

    fn any_vector() -> impl Strategy<Value = ResourceVector> {
        let names = [
            ResourceName::Cpu,
            ResourceName::Memory,
            ResourceName::Pods,
            ResourceName::BatchCpu,
            ResourceName::BatchMemory,
        ];
        prop::collection::vec((0..names.len(), any::<i64>()), 0..5).prop_map(move |entries| {
            entries.into_iter().fold(ResourceVector::EMPTY, |v, (i, a)| v.with(names[i], a))
        })
    }

    proptest! {
        #[test]
        fn reads_and_equality_are_the_vectors(a in any_vector(), b in any_vector()) {
            let (ca, cb) = (CompactVector::from(a), CompactVector::from(b));
            prop_assert_eq!(ca.to_vector(), a);
            prop_assert_eq!(ca == cb, a == b);
            for name in [ResourceName::Cpu, ResourceName::Memory, ResourceName::Pods, ResourceName::BatchCpu] {
                prop_assert_eq!(ca.get(name), a.get(name));
                prop_assert_eq!(ca.value(name), a.value(name));
            }
        }
    }
}
