//! The plugin's own resource vector: a few `i64`s in the fixed, sorted
//! resource order of spec §1.2.
//!
//! Filter and Score run for every (pod, node) pair, so their inputs are
//! plain arrays: [`LoadVector`] is `[i64; MAX_RESOURCES]` (64 bytes, `Copy`,
//! no presence mask) instead of kolo-core's 200-byte
//! [`ResourceVector`], and the
//! name ↔ slot mapping lives once in [`ResourceLayout`]. A resource missing
//! from a Kubernetes list is 0, exactly as the reference's vectoriser reads a
//! missing key.

use std::collections::BTreeMap;
use std::fmt;

use kolo_core::compact_vector::CompactVector;
use kolo_core::resources::{ResourceName, ResourceVector};

/// Most distinct resources the plugin tracks.
///
/// The reference vectorises `cpu`, `memory` and every resource its arguments
/// name; real configurations name two to four. Eight keeps a vector in one
/// cache line; [`LoadAwareConfig::new`](super::LoadAwareConfig::new)
/// rejects arguments naming more.
pub const MAX_RESOURCES: usize = 8;

/// Amounts in [`ResourceLayout`] order: cpu in milli-cores, everything else
/// in integral units (`batch-cpu` / `mid-cpu` are milli-cores held as
/// integers, spec §0.1). Slots past the layout's length are always 0.
///
/// LoadAwareScheduling's own working vector (per-node usage, estimates,
/// thresholds), not a general resource list: its slots are the few
/// resources the plugin's arguments name, and a missing resource is just 0,
/// so it needs no presence mask and is 64 bytes against the 200 of a
/// [`ResourceVector`] (every known resource, missing ≠ 0, `quotav1`
/// semantics); [`CompactVector`] is a `ResourceVector` stored small in
/// reports, read into a `LoadVector` once.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LoadVector(pub [i64; MAX_RESOURCES]);

impl LoadVector {
    /// All zero.
    pub const ZERO: LoadVector = LoadVector([0; MAX_RESOURCES]);

    /// The amount in slot `i` (0 past the layout's length).
    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        self.0[i]
    }

    /// Whether every amount is 0 (the reference's "nil" estimate and
    /// "empty" threshold map).
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&v| v == 0)
    }

    /// Slot-wise sum, saturating at the `i64` bounds.
    #[inline]
    #[must_use]
    pub fn saturating_add(&self, other: &LoadVector) -> LoadVector {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
        out
    }

    /// Slot-wise `max(0, self - other)`: how much an estimate exceeds the
    /// usage already reported for the same pod.
    #[inline]
    #[must_use]
    pub fn excess_over(&self, other: &LoadVector) -> LoadVector {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(other.0) {
            *a = a.saturating_sub(b).max(0);
        }
        out
    }

    /// Adds `other` into `self`, wrapping.
    ///
    /// The assign cache accumulates with wrapping arithmetic, like the
    /// reference's int64s, because wrapping addition is exactly undone by
    /// wrapping subtraction: removing every pod always returns the
    /// accumulators to their start, whatever the amounts.
    #[inline]
    pub(crate) fn wrapping_add_assign(&mut self, other: &LoadVector) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_add(b);
        }
    }

    /// Subtracts `other` from `self`, wrapping (see
    /// [`wrapping_add_assign`](Self::wrapping_add_assign)).
    #[inline]
    pub(crate) fn wrapping_sub_assign(&mut self, other: &LoadVector) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.wrapping_sub(b);
        }
    }
}

impl fmt::Debug for LoadVector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Trailing zero slots are noise: show the prefix up to the last
        // non-zero amount.
        let used = self.0.iter().rposition(|&v| v != 0).map_or(0, |i| i + 1);
        f.debug_list().entries(&self.0[..used]).finish()
    }
}

/// The plugin's resources in vector order (spec §1.2): `cpu`, `memory` and
/// every resource the arguments name, sorted by name.
///
/// Names are resolved to kolo's [`ResourceName`], so aliases fold
/// (`koordinator.sh/batch-cpu` is `kubernetes.io/batch-cpu`) and the sort is
/// over canonical names. `cpu` sorts before `memory`, so Filter checks cpu
/// first, as in the reference.
#[derive(Clone, PartialEq, Eq)]
pub struct ResourceLayout {
    names: [ResourceName; MAX_RESOURCES],
    len: usize,
}

/// More resources than a [`LoadVector`] holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the arguments name {count} distinct resources ({names}); kolo's load-aware plugin tracks at \
     most {MAX_RESOURCES}"
)]
pub struct TooManyResources {
    /// How many distinct resources were named.
    pub count: usize,
    /// The names, comma-separated.
    pub names: String,
}

impl ResourceLayout {
    /// The layout of `names` (deduplicated, sorted by canonical name).
    pub fn new(
        names: impl IntoIterator<Item = ResourceName>,
    ) -> Result<ResourceLayout, TooManyResources> {
        let mut all: Vec<ResourceName> = names.into_iter().collect();
        all.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        all.dedup();
        if all.len() > MAX_RESOURCES {
            return Err(TooManyResources {
                count: all.len(),
                names: all.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", "),
            });
        }
        let mut fixed = [ResourceName::Cpu; MAX_RESOURCES];
        fixed[..all.len()].copy_from_slice(&all);
        Ok(ResourceLayout { names: fixed, len: all.len() })
    }

    /// Number of resources.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the layout is empty (never, for a layout built from
    /// arguments: cpu and memory are always in it).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The resources in vector order.
    pub fn names(&self) -> &[ResourceName] {
        &self.names[..self.len]
    }

    /// The resource in slot `i`.
    pub fn name(&self, i: usize) -> ResourceName {
        self.names()[i]
    }

    /// The slot of `name`, if the plugin tracks it.
    pub fn index_of(&self, name: ResourceName) -> Option<usize> {
        self.names().iter().position(|n| *n == name)
    }

    /// The slot of the resource spelled `name`, if the plugin tracks it.
    /// Never interns a new extended resource name.
    pub fn index_of_str(&self, name: &str) -> Option<usize> {
        ResourceName::lookup(name).and_then(|n| self.index_of(n))
    }

    /// A kolo-core vector in this layout; resources the plugin does not
    /// track are dropped, missing ones are 0.
    pub fn vector(&self, resources: &ResourceVector) -> LoadVector {
        self.vector_of(|name| resources.value(name))
    }

    /// [`vector`](Self::vector) of a compact vector (a reported pod's
    /// usage), without expanding it.
    pub fn compact_vector(&self, resources: &CompactVector) -> LoadVector {
        self.vector_of(|name| resources.value(name))
    }

    fn vector_of(&self, value: impl Fn(ResourceName) -> i64) -> LoadVector {
        let mut out = LoadVector::ZERO;
        for (slot, name) in self.names().iter().enumerate() {
            out.0[slot] = value(*name);
        }
        out
    }

    /// A vector as a map by resource name: the inverse of
    /// [`vector_from_ints`](Self::vector_from_ints), for reports.
    pub fn ints(&self, vector: &LoadVector) -> BTreeMap<&'static str, i64> {
        self.names()
            .iter()
            .enumerate()
            .map(|(slot, name)| (name.as_str(), vector.0[slot]))
            .collect()
    }

    /// A map of integers keyed by resource name (thresholds, weights) in
    /// this layout; names the plugin does not track are ignored.
    pub fn vector_from_ints(&self, map: &BTreeMap<String, i64>) -> LoadVector {
        let mut out = LoadVector::ZERO;
        for (name, value) in map {
            if let Some(slot) = self.index_of_str(name) {
                out.0[slot] = *value;
            }
        }
        out
    }
}

impl fmt::Debug for ResourceLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names().iter().map(|n| n.as_str())).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_api::names::resource::{BATCH_CPU, BATCH_CPU_DEPRECATED};

    #[test]
    fn layout_sorts_by_name_and_folds_aliases() {
        let names = ["memory", BATCH_CPU, "cpu", BATCH_CPU_DEPRECATED, "ephemeral-storage"]
            .map(|n| ResourceName::parse(n).unwrap());
        let layout = ResourceLayout::new(names).unwrap();
        let got: Vec<&str> = layout.names().iter().map(|n| n.as_str()).collect();
        assert_eq!(got, ["cpu", "ephemeral-storage", BATCH_CPU, "memory"]);
        assert_eq!(layout.index_of_str(BATCH_CPU_DEPRECATED), Some(2));
        assert_eq!(layout.index_of_str("pods"), None);
    }

    #[test]
    fn layout_rejects_more_than_max() {
        // The eight well-known resources plus one extended one; interning
        // only one name keeps the process-wide registry free for other tests.
        let names = kolo_core::resources::WELL_KNOWN_NAMES
            .into_iter()
            .chain([ResourceName::parse("example.com/ninth").unwrap()]);
        let err = ResourceLayout::new(names).unwrap_err();
        assert_eq!(err.count, MAX_RESOURCES + 1);
    }

    #[test]
    fn a_resource_vector_keeps_the_tracked_resources_in_layout_order() {
        let layout =
            ResourceLayout::new([ResourceName::Cpu, ResourceName::Memory, ResourceName::BatchCpu])
                .unwrap();
        let v = ResourceVector::cpu_memory(1500, 1024)
            .with(ResourceName::BatchCpu, 25_000)
            .with(ResourceName::Pods, 110);
        assert_eq!(layout.vector(&v).0[..4], [1500, 25_000, 1024, 0]);
        assert_eq!(layout.vector(&ResourceVector::EMPTY), LoadVector::ZERO);
    }

    #[test]
    fn excess_is_clamped_at_zero() {
        let mut e = LoadVector::ZERO;
        e.0[..2].copy_from_slice(&[100, 50]);
        let mut u = LoadVector::ZERO;
        u.0[..2].copy_from_slice(&[30, 80]);
        assert_eq!(e.excess_over(&u).0[..2], [70, 0]);
    }
}
