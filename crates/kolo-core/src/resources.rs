//! A compact, copyable resource vector with Koordinator's `quotav1` semantics.
//!
//! Every kolo algorithm adds, subtracts and compares resource amounts, often
//! millions of times per decision (a scheduling cycle visits every node, the
//! batch formula sums every pod). Kubernetes does this with
//! `map[ResourceName]Quantity`; kolo uses [`ResourceVector`], a fixed array of
//! `i64` with a bitmask of which resources are present:
//!
//! * `cpu` is in **milli-cores** (`Quantity::milli_value`);
//! * every other resource is in integral units (`Quantity::value`, rounded up):
//!   bytes for memory and storage, a count for pods and devices;
//! * `batch-cpu` and `mid-cpu` are **milli-cores held as plain integers**
//!   (`kubernetes.io/batch-cpu: 25000` is 25 cores), so they are read with
//!   `value()`, not `milli_value()` (spec §0.1).
//!
//! The bitmask matters because Koordinator's resource-list helpers treat a
//! missing resource differently from a zero one: a resource missing from a
//! limit is *unlimited* in [`ResourceVector::less_than_or_equal`].
//!
//! Resources other than the eight well-known ones (`nvidia.com/gpu`,
//! `hugepages-2Mi`, ...) are interned process-wide by
//! [`ExtendedResourceRegistry`] into at most [`EXTENDED_CAPACITY`] slots.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Add, AddAssign, BitAnd, BitOr, Sub, SubAssign};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, OnceLock};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::names::resource as names;
use kolo_api::quantity::{Format, Quantity, QuantityError, parse_milli, parse_value};

/// How many distinct extended resource names one process can track.
///
/// 16 covers a realistic cluster with room to spare: hugepages in two or four
/// sizes, a GPU vendor resource, Koordinator's four GPU resources, RDMA,
/// Katalyst's two bandwidth resources and a few attachable-volume counts.
/// Beyond it, [`ExtendedResourceRegistry::intern`] (and so every conversion
/// from a Kubernetes resource list) returns
/// [`ResourceError::TooManyExtendedResources`]: a vector never drops or
/// merges a resource silently.
pub const EXTENDED_CAPACITY: usize = 16;

/// The largest amount a Kubernetes resource list may carry, in vector units
/// (milli-cores for `cpu`, bytes or a count otherwise): 2^62, i.e. 4 EiB of
/// memory or 4.6 million million cores. Above it an amount would saturate
/// `i64` arithmetic (a binary quantity such as `99999999999999999999Ei` is
/// silently capped at 2^63-1 by Kubernetes' parser) and every later sum and
/// difference would be meaningless, so
/// [`ResourceVector::from_object_list`] refuses it for nodes and pods.
pub const MAX_LIST_AMOUNT: i64 = 1 << 62;

/// Number of resources with a fixed slot (cpu ... mid-memory).
pub const WELL_KNOWN: usize = 8;

/// Total number of slots of a vector.
const SLOTS: usize = WELL_KNOWN + EXTENDED_CAPACITY;

/// The well-known resources, in slot order, for iteration.
pub const WELL_KNOWN_NAMES: [ResourceName; WELL_KNOWN] = [
    ResourceName::Cpu,
    ResourceName::Memory,
    ResourceName::Pods,
    ResourceName::EphemeralStorage,
    ResourceName::BatchCpu,
    ResourceName::BatchMemory,
    ResourceName::MidCpu,
    ResourceName::MidMemory,
];

/// Errors converting Kubernetes resource lists or interning resource names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// A quantity in a resource list does not parse.
    // The quantity error already quotes the offending text, so it is part of
    // the message rather than a separate `source` that reporters would print
    // twice.
    #[error("resource {resource:?}: {error}")]
    InvalidQuantity {
        /// The resource name as written in the list.
        resource: String,
        /// What is wrong with the value (quotes the value).
        error: QuantityError,
    },
    /// A resource list holds a negative amount (the API server never
    /// accepts one in a request, a limit or a node's capacity).
    #[error("resource {resource:?}: negative quantity {value:?} (must be 0 or more)")]
    Negative {
        /// The resource name as written in the list.
        resource: String,
        /// The quantity as written.
        value: String,
    },
    /// A node's or a pod's resource list holds an amount above
    /// [`MAX_LIST_AMOUNT`] (see [`ResourceVector::from_object_list`]).
    #[error(
        "resource {resource:?}: quantity {value:?} is too large (at most 2^62 {unit}, \
         kolo's bound for any resource amount)"
    )]
    TooLarge {
        /// The resource name as written in the list.
        resource: String,
        /// The quantity as written.
        value: String,
        /// The unit of the bound: `millicores` for cpu, `units` otherwise.
        unit: &'static str,
    },
    /// The process already tracks [`EXTENDED_CAPACITY`] extended resources
    /// and this one is new.
    #[error(
        "cannot track extended resource {name:?}: kolo tracks at most {capacity} distinct \
         extended resources per process and all are in use ({in_use})"
    )]
    TooManyExtendedResources {
        /// The resource that did not fit.
        name: String,
        /// [`EXTENDED_CAPACITY`].
        capacity: usize,
        /// The names already tracked, comma-separated, so an operator can see
        /// which resources filled the registry.
        in_use: String,
    },
}

// ---------------------------------------------------------------------------
// Extended resource registry
// ---------------------------------------------------------------------------

/// Slot `i` holds the name of extended resource `i` once it is published.
static EXTENDED_NAMES: [OnceLock<&'static str>; EXTENDED_CAPACITY] =
    [const { OnceLock::new() }; EXTENDED_CAPACITY];
/// Number of published slots; slots `0..len` are all set.
static EXTENDED_LEN: AtomicUsize = AtomicUsize::new(0);
/// Serialises insertions so two threads never publish the same name twice.
static EXTENDED_INSERT: Mutex<()> = Mutex::new(());

/// The process-wide interner of extended resource names.
///
/// A vector stores an extended resource by a small index so that it stays
/// `Copy` and compares as plain integers. The index → name table is global
/// rather than per snapshot so that views can be built from a bare
/// `&Pod` / `&Node` anywhere (watch handlers, webhooks, the simulator)
/// without threading a registry through every call. Indices are only
/// meaningful inside one process; anything that leaves the process goes
/// through [`ResourceVector::to_resource_list`], which writes names.
///
/// Index order depends on which name was seen first, so nothing observable
/// follows it: iteration, [`Display`](fmt::Display) and the [`Ord`] of
/// [`ResourceName`] sort extended resources by name.
///
/// Reads are lock-free (a linear scan over at most [`EXTENDED_CAPACITY`]
/// names); only the first sighting of a new name takes a mutex. Names are
/// never removed: a name that appears once (even in a rejected pod) keeps its
/// slot until the process restarts.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtendedResourceRegistry;

impl ExtendedResourceRegistry {
    /// The index of `name` if it is already interned.
    pub fn lookup(name: &str) -> Option<ExtendedResource> {
        let len = EXTENDED_LEN.load(AtomicOrdering::Acquire);
        (0..len)
            .find(|&i| EXTENDED_NAMES[i].get().is_some_and(|n| *n == name))
            .map(|i| ExtendedResource(i as u8))
    }

    /// The index of `name`, interning it if it is new.
    ///
    /// `name` should not be one of the well-known resources or their aliases
    /// (use [`ResourceName::parse`], which handles those); interning one
    /// anyway just gives it an extended slot.
    pub fn intern(name: &str) -> Result<ExtendedResource, ResourceError> {
        if let Some(found) = Self::lookup(name) {
            return Ok(found);
        }
        // A poisoned lock only means another thread panicked while holding
        // it; the table itself is always consistent (slots are published
        // before the length), so keep going.
        let _guard = EXTENDED_INSERT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = Self::lookup(name) {
            return Ok(found);
        }
        let len = EXTENDED_LEN.load(AtomicOrdering::Acquire);
        if len == EXTENDED_CAPACITY {
            return Err(ResourceError::TooManyExtendedResources {
                name: name.to_owned(),
                capacity: EXTENDED_CAPACITY,
                in_use: Self::names().collect::<Vec<_>>().join(", "),
            });
        }
        // Leaking is bounded by EXTENDED_CAPACITY names per process and lets
        // `name()` hand out `&'static str` without a lock.
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        // Under the mutex nobody else can have set slot `len`.
        let _ = EXTENDED_NAMES[len].set(leaked);
        EXTENDED_LEN.store(len + 1, AtomicOrdering::Release);
        Ok(ExtendedResource(len as u8))
    }

    /// How many extended resources are interned.
    pub fn len() -> usize {
        EXTENDED_LEN.load(AtomicOrdering::Acquire)
    }

    /// Whether no extended resource is interned yet.
    pub fn is_empty() -> bool {
        Self::len() == 0
    }

    /// The interned names, in index order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        (0..Self::len()).filter_map(|i| EXTENDED_NAMES[i].get().copied())
    }
}

/// An interned extended resource (see [`ExtendedResourceRegistry`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtendedResource(u8);

impl ExtendedResource {
    /// The resource name, e.g. `nvidia.com/gpu`.
    pub fn name(self) -> &'static str {
        // Indices are only created after their slot is published.
        EXTENDED_NAMES[usize::from(self.0)].get().copied().unwrap_or("<unknown>")
    }

    /// The registry index (0-based, below [`EXTENDED_CAPACITY`]).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Debug for ExtendedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.name())
    }
}

// ---------------------------------------------------------------------------
// ResourceName
// ---------------------------------------------------------------------------

/// The name of one resource dimension.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ResourceName {
    /// `cpu`, in milli-cores.
    Cpu,
    /// `memory`, in bytes.
    Memory,
    /// `pods`, a count.
    Pods,
    /// `ephemeral-storage`, in bytes.
    EphemeralStorage,
    /// `kubernetes.io/batch-cpu` (aliases: `koordinator.sh/batch-cpu`,
    /// Katalyst `reclaimed_millicpu`), milli-cores as a plain integer.
    BatchCpu,
    /// `kubernetes.io/batch-memory` (aliases: `koordinator.sh/batch-memory`,
    /// Katalyst `reclaimed_memory`), in bytes.
    BatchMemory,
    /// `kubernetes.io/mid-cpu`, milli-cores as a plain integer.
    MidCpu,
    /// `kubernetes.io/mid-memory`, in bytes.
    MidMemory,
    /// Any other resource, interned by [`ExtendedResourceRegistry`].
    Extended(ExtendedResource),
}

impl ResourceName {
    /// Resolves a well-known name or alias without interning anything.
    ///
    /// Returns the resource and the alias rank: 0 for the canonical name,
    /// higher for less preferred aliases (the order of
    /// [`names::BATCH_CPU_ALIASES`]). `None` for extended resources.
    fn well_known(name: &str) -> Option<(ResourceName, usize)> {
        let fixed = match name {
            "cpu" => Some(ResourceName::Cpu),
            "memory" => Some(ResourceName::Memory),
            "pods" => Some(ResourceName::Pods),
            "ephemeral-storage" => Some(ResourceName::EphemeralStorage),
            names::MID_CPU => Some(ResourceName::MidCpu),
            names::MID_MEMORY => Some(ResourceName::MidMemory),
            _ => None,
        };
        if let Some(fixed) = fixed {
            return Some((fixed, 0));
        }
        if let Some(rank) = names::BATCH_CPU_ALIASES.iter().position(|a| *a == name) {
            return Some((ResourceName::BatchCpu, rank));
        }
        names::BATCH_MEMORY_ALIASES
            .iter()
            .position(|a| *a == name)
            .map(|rank| (ResourceName::BatchMemory, rank))
    }

    /// The resource a Kubernetes resource name means, folding aliases
    /// (`koordinator.sh/batch-cpu` and Katalyst's `reclaimed_millicpu` are
    /// [`ResourceName::BatchCpu`]) and interning unknown names.
    pub fn parse(name: &str) -> Result<ResourceName, ResourceError> {
        match Self::well_known(name) {
            Some((known, _)) => Ok(known),
            None => ExtendedResourceRegistry::intern(name).map(ResourceName::Extended),
        }
    }

    /// Like [`parse`](Self::parse) but never interns: `None` for an extended
    /// resource this process has not seen. Use it for look-ups, where an
    /// unseen name simply is not in any vector.
    pub fn lookup(name: &str) -> Option<ResourceName> {
        match Self::well_known(name) {
            Some((known, _)) => Some(known),
            None => ExtendedResourceRegistry::lookup(name).map(ResourceName::Extended),
        }
    }

    /// The canonical Kubernetes name, e.g. `kubernetes.io/batch-cpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceName::Cpu => "cpu",
            ResourceName::Memory => "memory",
            ResourceName::Pods => "pods",
            ResourceName::EphemeralStorage => "ephemeral-storage",
            ResourceName::BatchCpu => names::BATCH_CPU,
            ResourceName::BatchMemory => names::BATCH_MEMORY,
            ResourceName::MidCpu => names::MID_CPU,
            ResourceName::MidMemory => names::MID_MEMORY,
            ResourceName::Extended(e) => e.name(),
        }
    }

    /// A short name for logs and [`Display`](fmt::Display): the
    /// `kubernetes.io/` prefix of the colocation resources is dropped
    /// (`batch-cpu`); other names are unchanged.
    pub fn short_name(self) -> &'static str {
        match self {
            ResourceName::BatchCpu => "batch-cpu",
            ResourceName::BatchMemory => "batch-memory",
            ResourceName::MidCpu => "mid-cpu",
            ResourceName::MidMemory => "mid-memory",
            other => other.as_str(),
        }
    }

    /// Whether a Kubernetes quantity of this resource is read with
    /// `milli_value()` (only `cpu`); everything else uses `value()`.
    pub fn is_milli(self) -> bool {
        self == ResourceName::Cpu
    }

    /// The index of a well-known resource in [`WELL_KNOWN_NAMES`] (`None`
    /// for extended resources), for code that keeps the well-known amounts
    /// in a small array of its own.
    pub fn well_known_index(self) -> Option<usize> {
        let slot = self.slot();
        (slot < WELL_KNOWN).then_some(slot)
    }

    /// The vector slot of this resource.
    fn slot(self) -> usize {
        match self {
            ResourceName::Cpu => 0,
            ResourceName::Memory => 1,
            ResourceName::Pods => 2,
            ResourceName::EphemeralStorage => 3,
            ResourceName::BatchCpu => 4,
            ResourceName::BatchMemory => 5,
            ResourceName::MidCpu => 6,
            ResourceName::MidMemory => 7,
            ResourceName::Extended(e) => WELL_KNOWN + e.index(),
        }
    }

    /// The resource in vector slot `slot`.
    fn from_slot(slot: usize) -> ResourceName {
        if slot < WELL_KNOWN {
            WELL_KNOWN_NAMES[slot]
        } else {
            ResourceName::Extended(ExtendedResource((slot - WELL_KNOWN) as u8))
        }
    }

    /// The unit family used to print an amount of this resource.
    fn display_kind(self) -> DisplayKind {
        match self {
            ResourceName::Cpu => DisplayKind::Milli,
            ResourceName::Memory
            | ResourceName::EphemeralStorage
            | ResourceName::BatchMemory
            | ResourceName::MidMemory => DisplayKind::Bytes,
            ResourceName::Extended(e) if e.name().starts_with("hugepages-") => DisplayKind::Bytes,
            _ => DisplayKind::Plain,
        }
    }
}

/// How an amount is printed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DisplayKind {
    /// A milli-quantity (`1500m`, `2`).
    Milli,
    /// A binary-SI byte quantity (`2Gi`).
    Bytes,
    /// The bare integer; used for counts and for batch-/mid-cpu, whose
    /// integer already is milli-cores and reads best unscaled.
    Plain,
}

impl Ord for ResourceName {
    /// Well-known resources in slot order (cpu, memory, pods,
    /// ephemeral-storage, batch-cpu, batch-memory, mid-cpu, mid-memory), then
    /// extended resources by name, so that the order never depends on which
    /// extended resource the process happened to intern first.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (ResourceName::Extended(a), ResourceName::Extended(b)) => {
                if a == b {
                    Ordering::Equal
                } else {
                    a.name().cmp(b.name())
                }
            }
            (ResourceName::Extended(_), _) => Ordering::Greater,
            (_, ResourceName::Extended(_)) => Ordering::Less,
            (a, b) => a.slot().cmp(&b.slot()),
        }
    }
}

impl PartialOrd for ResourceName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------
// ResourceSet
// ---------------------------------------------------------------------------

/// A set of resource names (a bitmask over vector slots); the argument of
/// [`ResourceVector::mask`] and the result of the comparisons that report
/// which resources failed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResourceSet(u32);

impl ResourceSet {
    /// The empty set.
    pub const EMPTY: ResourceSet = ResourceSet(0);
    /// `{cpu, memory}`: what the batch formula and load-aware scheduling
    /// mask requests to.
    pub const CPU_MEMORY: ResourceSet = ResourceSet(0b11);
    /// `{batch-cpu, batch-memory}`.
    pub const BATCH: ResourceSet = ResourceSet(0b11_0000);
    /// `{mid-cpu, mid-memory}`.
    pub const MID: ResourceSet = ResourceSet(0b1100_0000);

    /// The set holding exactly `name`.
    pub fn single(name: ResourceName) -> ResourceSet {
        ResourceSet(1 << name.slot())
    }

    /// Adds `name`.
    pub fn insert(&mut self, name: ResourceName) {
        self.0 |= 1 << name.slot();
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: ResourceName) {
        self.0 &= !(1 << name.slot());
    }

    /// Whether `name` is in the set.
    pub fn contains(self, name: ResourceName) -> bool {
        self.0 & (1 << name.slot()) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The number of names in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The names in the set, in [`ResourceName`]'s order.
    pub fn iter(self) -> impl Iterator<Item = ResourceName> {
        SlotOrder::new(self.0).map(ResourceName::from_slot)
    }
}

impl BitOr for ResourceSet {
    type Output = ResourceSet;
    fn bitor(self, rhs: ResourceSet) -> ResourceSet {
        ResourceSet(self.0 | rhs.0)
    }
}

impl BitAnd for ResourceSet {
    type Output = ResourceSet;
    fn bitand(self, rhs: ResourceSet) -> ResourceSet {
        ResourceSet(self.0 & rhs.0)
    }
}

impl FromIterator<ResourceName> for ResourceSet {
    fn from_iter<I: IntoIterator<Item = ResourceName>>(iter: I) -> Self {
        let mut set = ResourceSet::EMPTY;
        for name in iter {
            set.insert(name);
        }
        set
    }
}

impl fmt::Debug for ResourceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The slots of a bitmask in [`ResourceName`]'s order: well-known slots
/// ascending, then extended slots sorted by name.
struct SlotOrder {
    slots: [u8; SLOTS],
    len: u8,
    pos: u8,
}

impl SlotOrder {
    fn new(mask: u32) -> SlotOrder {
        let mut slots = [0u8; SLOTS];
        let mut len = 0usize;
        let mut rest = mask;
        while rest != 0 {
            let slot = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            slots[len] = slot as u8;
            len += 1;
        }
        // Only extended slots need sorting, and most vectors have none.
        let first_extended =
            slots[..len].iter().position(|&s| usize::from(s) >= WELL_KNOWN).unwrap_or(len);
        if len - first_extended > 1 {
            slots[first_extended..len]
                .sort_unstable_by_key(|&s| ResourceName::from_slot(usize::from(s)).as_str());
        }
        SlotOrder { slots, len: len as u8, pos: 0 }
    }
}

impl Iterator for SlotOrder {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.pos < self.len {
            let slot = self.slots[usize::from(self.pos)];
            self.pos += 1;
            Some(usize::from(slot))
        } else {
            None
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::from(self.len - self.pos);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SlotOrder {}

// ---------------------------------------------------------------------------
// ResourceVector
// ---------------------------------------------------------------------------

/// A resource list as a fixed array: `cpu` in milli-cores, everything else
/// in integral units, plus which resources are present.
///
/// The general form every component computes with (requests, limits,
/// allocatable, free): every resource kolo knows has a fixed slot, and a
/// missing resource differs from a zero one, as Kubernetes' lists do.
/// [`CompactVector`](crate::compact_vector::CompactVector) is the same value
/// stored small for the many per-pod entries of usage reports;
/// [`CpuMem`](crate::CpuMem) is just the two numbers, always present, for
/// formulas that only ever read cpu and memory.
///
/// Arithmetic saturates at the `i64` bounds instead of wrapping, so a
/// pathological input can distort a number but never flip its sign.
/// Set operations follow Kubernetes' `quotav1` helpers exactly (spec §0.1);
/// see each method.
///
/// Invariant: a missing resource's slot holds 0, so the derived equality is
/// `quotav1.Equals` (same keys, same values) and hashing is consistent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResourceVector {
    values: [i64; SLOTS],
    present: u32,
}

impl ResourceVector {
    /// The empty vector (no resource present).
    pub const EMPTY: ResourceVector = ResourceVector { values: [0; SLOTS], present: 0 };

    /// The empty vector.
    pub fn new() -> ResourceVector {
        ResourceVector::EMPTY
    }

    /// A vector holding just `cpu` (milli-cores) and `memory` (bytes).
    pub fn cpu_memory(cpu_milli: i64, memory_bytes: i64) -> ResourceVector {
        ResourceVector::EMPTY
            .with(ResourceName::Cpu, cpu_milli)
            .with(ResourceName::Memory, memory_bytes)
    }

    /// The amount of `name`, or `None` if it is missing.
    pub fn get(&self, name: ResourceName) -> Option<i64> {
        let slot = name.slot();
        (self.present & (1 << slot) != 0).then_some(self.values[slot])
    }

    /// The amount of `name`, 0 if it is missing.
    pub fn value(&self, name: ResourceName) -> i64 {
        // Missing slots hold 0 (type invariant).
        self.values[name.slot()]
    }

    /// `cpu` in milli-cores, 0 if missing.
    pub fn cpu(&self) -> i64 {
        self.value(ResourceName::Cpu)
    }

    /// `memory` in bytes, 0 if missing.
    pub fn memory(&self) -> i64 {
        self.value(ResourceName::Memory)
    }

    /// Whether `name` is present (possibly with amount 0).
    pub fn contains(&self, name: ResourceName) -> bool {
        self.present & (1 << name.slot()) != 0
    }

    /// Sets `name` to `amount`, making it present.
    pub fn set(&mut self, name: ResourceName, amount: i64) {
        let slot = name.slot();
        self.values[slot] = amount;
        self.present |= 1 << slot;
    }

    /// `self` with `name` set to `amount` (builder style).
    #[must_use]
    pub fn with(mut self, name: ResourceName, amount: i64) -> ResourceVector {
        self.set(name, amount);
        self
    }

    /// Removes `name`, returning its amount if it was present.
    pub fn remove(&mut self, name: ResourceName) -> Option<i64> {
        let old = self.get(name);
        let slot = name.slot();
        self.values[slot] = 0;
        self.present &= !(1 << slot);
        old
    }

    /// The present resources.
    pub fn names(&self) -> ResourceSet {
        ResourceSet(self.present)
    }

    /// The number of present resources.
    pub fn len(&self) -> usize {
        self.present.count_ones() as usize
    }

    /// Whether no resource is present (an empty list).
    pub fn is_empty(&self) -> bool {
        self.present == 0
    }

    /// `quotav1.IsZero`: every present amount is 0 (true for an empty
    /// vector).
    pub fn is_zero(&self) -> bool {
        self.values.iter().all(|&v| v == 0)
    }

    /// The present resources and amounts, in [`ResourceName`]'s order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (ResourceName, i64)> + '_ {
        SlotOrder::new(self.present).map(|slot| (ResourceName::from_slot(slot), self.values[slot]))
    }

    /// Applies `f` slot-wise over the union of both vectors' resources; `f`
    /// gets each side's amount, or `None` where that side lacks the resource.
    #[inline]
    fn zip_union(
        &self,
        other: &ResourceVector,
        f: impl Fn(Option<i64>, Option<i64>) -> i64,
    ) -> ResourceVector {
        let present = self.present | other.present;
        let mut out = ResourceVector { values: [0; SLOTS], present };
        // Vectors are sparse (typically 2-5 of 24 slots), so visiting the set
        // bits beats a pass over every slot.
        let mut rest = present;
        while rest != 0 {
            let slot = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let bit = 1 << slot;
            let a = (self.present & bit != 0).then_some(self.values[slot]);
            let b = (other.present & bit != 0).then_some(other.values[slot]);
            out.values[slot] = f(a, b);
        }
        out
    }

    /// `quotav1.Add`: the union of the resources, summed (saturating).
    #[must_use]
    pub fn saturating_add(&self, other: &ResourceVector) -> ResourceVector {
        // Missing slots hold 0, so adding `other`'s present slots (sparse) is
        // the union sum.
        let mut out = *self;
        let mut rest = other.present;
        while rest != 0 {
            let slot = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            out.values[slot] = out.values[slot].saturating_add(other.values[slot]);
        }
        out.present |= other.present;
        out
    }

    /// `quotav1.Subtract`: the union of the resources; `a - b`, `a` where
    /// `other` lacks the resource and `-b` where only `other` has it
    /// (saturating).
    #[must_use]
    pub fn saturating_sub(&self, other: &ResourceVector) -> ResourceVector {
        // Missing slots hold 0: 0 - b = -b is exactly quotav1's rule.
        let mut out = *self;
        let mut rest = other.present;
        while rest != 0 {
            let slot = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            out.values[slot] = out.values[slot].saturating_sub(other.values[slot]);
        }
        out.present |= other.present;
        out
    }

    /// `quotav1.SubtractWithNonNegativeResult`: the union of the resources,
    /// `max(a - b, 0)`; a resource only in `other` becomes 0.
    ///
    /// That last rule follows current Kubernetes (a resource only in `b`
    /// yields 0 even if `b` is negative), which older Kubernetes versions
    /// vendored by Koordinator also do for non-negative `b`, the only case
    /// that occurs in practice.
    #[must_use]
    pub fn sub_non_negative(&self, other: &ResourceVector) -> ResourceVector {
        self.zip_union(other, |a, b| match a {
            Some(a) => a.saturating_sub(b.unwrap_or(0)).max(0),
            None => 0,
        })
    }

    /// `quotav1.Max`: the union of the resources; the larger amount where
    /// both have the resource, otherwise whichever amount exists (even a
    /// negative one).
    #[must_use]
    pub fn max(&self, other: &ResourceVector) -> ResourceVector {
        self.zip_union(other, |a, b| match (a, b) {
            (Some(a), Some(b)) => a.max(b),
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => 0,
        })
    }

    /// The union of the resources; the smaller amount where both have the
    /// resource, otherwise whichever amount exists. (Not a `quotav1` helper;
    /// the dual of [`max`](Self::max).)
    #[must_use]
    pub fn min(&self, other: &ResourceVector) -> ResourceVector {
        self.zip_union(other, |a, b| match (a, b) {
            (Some(a), Some(b)) => a.min(b),
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => 0,
        })
    }

    /// `quotav1.Mask`: only the resources in `names`.
    #[must_use]
    pub fn mask(&self, names: ResourceSet) -> ResourceVector {
        let mut out = *self;
        // Zero the dropped slots to keep the "missing holds 0" invariant.
        let mut dropped = self.present & !names.0;
        while dropped != 0 {
            let slot = dropped.trailing_zeros() as usize;
            dropped &= dropped - 1;
            out.values[slot] = 0;
        }
        out.present &= names.0;
        out
    }

    /// Every present amount clamped below at 0 (resources stay present).
    #[must_use]
    pub fn clamp_non_negative(&self) -> ResourceVector {
        let mut out = *self;
        for v in &mut out.values {
            *v = (*v).max(0);
        }
        out
    }

    /// The resources where `self` exceeds `limit`, with `quotav1` semantics:
    /// only resources present in **both** are compared. A resource missing
    /// from `limit` is unlimited; one missing from `self` is not checked
    /// either (even against a negative limit), exactly like
    /// `quotav1.LessThanOrEqual`.
    pub fn exceeding(&self, limit: &ResourceVector) -> ResourceSet {
        let mut out = 0u32;
        let mut both = self.present & limit.present;
        while both != 0 {
            let slot = both.trailing_zeros() as usize;
            both &= both - 1;
            if self.values[slot] > limit.values[slot] {
                out |= 1 << slot;
            }
        }
        ResourceSet(out)
    }

    /// `quotav1.LessThanOrEqual`: no resource present in both exceeds
    /// `limit` (see [`exceeding`](Self::exceeding)). Missing from the limit
    /// means unlimited.
    pub fn less_than_or_equal(&self, limit: &ResourceVector) -> bool {
        self.exceeding(limit).is_empty()
    }

    /// Alias of [`less_than_or_equal`](Self::less_than_or_equal): the quota
    /// check, where a resource missing from `limit` is unlimited. For the
    /// node-fit check, where missing means none, use
    /// [`fits_allocatable`](Self::fits_allocatable).
    pub fn fits_within(&self, limit: &ResourceVector) -> bool {
        self.less_than_or_equal(limit)
    }

    /// The resources a request (`self`) cannot get from `free`, with the
    /// node-fit semantics of kube-scheduler's `NodeResourcesFit`: every
    /// resource requested with a **positive** amount must be present in
    /// `free` with at least that amount; a resource missing from `free`
    /// counts as 0, and zero or negative requests always fit.
    pub fn insufficient(&self, free: &ResourceVector) -> ResourceSet {
        let mut out = 0u32;
        let mut requested = self.present;
        while requested != 0 {
            let slot = requested.trailing_zeros() as usize;
            requested &= requested - 1;
            // Missing slots of `free` hold 0, which is "none available".
            if self.values[slot] > 0 && self.values[slot] > free.values[slot] {
                out |= 1 << slot;
            }
        }
        ResourceSet(out)
    }

    /// Whether the request `self` fits in `free` with node-fit semantics
    /// (see [`insufficient`](Self::insufficient)).
    pub fn fits_allocatable(&self, free: &ResourceVector) -> bool {
        self.insufficient(free).is_empty()
    }

    /// `quotav1.IsNegative`: the resources with a negative amount.
    pub fn negative(&self) -> ResourceSet {
        let mut out = 0u32;
        for (slot, v) in self.values.iter().enumerate() {
            if *v < 0 {
                out |= 1 << slot;
            }
        }
        ResourceSet(out)
    }

    /// Reads a Kubernetes `ResourceList` (`requests`, `limits`,
    /// `allocatable`, ...).
    ///
    /// `cpu` is read with `milli_value()`, everything else with `value()`
    /// (rounded up); `batch-cpu`/`mid-cpu` are already milli-cores. Aliases
    /// are folded: if a list names the same resource twice
    /// (`kubernetes.io/batch-cpu` and Katalyst's `reclaimed_millicpu`), the
    /// most preferred spelling wins (the order of
    /// [`names::BATCH_CPU_ALIASES`]) rather than the sum, because systems
    /// that publish both publish the same capacity twice. Unknown names are
    /// interned as extended resources.
    ///
    /// Errors name the resource and quote the malformed value, or report a
    /// full extended-resource registry.
    ///
    /// A negative amount is an error ([`ResourceError::Negative`]): the API
    /// server accepts none anywhere. Huge amounts saturate (Koordinator's
    /// quota defaults are `MaxInt64 / 5` cores, meaning "no limit"); lists
    /// that describe a node or a pod are read with
    /// [`from_object_list`](Self::from_object_list), which refuses them.
    pub fn from_resource_list(
        list: &BTreeMap<String, KubeQuantity>,
    ) -> Result<ResourceVector, ResourceError> {
        Self::from_list_bounded(list, i64::MAX)
    }

    /// [`from_resource_list`](Self::from_resource_list) for the resource
    /// lists of a node (capacity, allocatable) or a pod (requests, limits):
    /// also refuses an amount above [`MAX_LIST_AMOUNT`]
    /// ([`ResourceError::TooLarge`]), where a saturated capacity would make
    /// every fit check and every derived limit (a CFS quota of 2^63-1 µs)
    /// meaningless.
    pub fn from_object_list(
        list: &BTreeMap<String, KubeQuantity>,
    ) -> Result<ResourceVector, ResourceError> {
        Self::from_list_bounded(list, MAX_LIST_AMOUNT)
    }

    /// The conversion of both, refusing amounts above `max`.
    fn from_list_bounded(
        list: &BTreeMap<String, KubeQuantity>,
        max: i64,
    ) -> Result<ResourceVector, ResourceError> {
        let mut out = ResourceVector::EMPTY;
        // Rank of the alias that set the batch-cpu / batch-memory slot.
        let mut batch_rank = [usize::MAX; 2];
        for (key, quantity) in list {
            let known = ResourceName::well_known(key);
            // Parse before interning so a rejected list never takes a
            // registry slot. Extended resources are never milli-valued.
            let milli = matches!(known, Some((ResourceName::Cpu, _)));
            let amount = parse_amount(key, milli, quantity, max)?;
            let (name, rank) = match known {
                Some(known) => known,
                None => (ResourceName::Extended(ExtendedResourceRegistry::intern(key)?), 0),
            };
            let rank_slot = match name {
                ResourceName::BatchCpu => Some(0),
                ResourceName::BatchMemory => Some(1),
                _ => None,
            };
            if let Some(i) = rank_slot {
                if rank >= batch_rank[i] {
                    continue;
                }
                batch_rank[i] = rank;
            }
            out.set(name, amount);
        }
        Ok(out)
    }

    /// Writes the vector as a Kubernetes `ResourceList` under canonical
    /// names: `cpu` as a milli-quantity (`1500m`), byte resources in
    /// binary-SI (`2Gi`), the rest in decimal-SI.
    pub fn to_resource_list(&self) -> BTreeMap<String, KubeQuantity> {
        self.iter()
            .map(|(name, v)| {
                let q = match name.display_kind() {
                    DisplayKind::Milli => Quantity::from_milli(v),
                    DisplayKind::Bytes => Quantity::from_value(v, Format::BinarySI),
                    DisplayKind::Plain => Quantity::from_value(v, Format::DecimalSI),
                };
                (name.as_str().to_owned(), KubeQuantity(q.to_string()))
            })
            .collect()
    }
}

/// Parses the quantity of resource `key` into vector units:
/// `milli_value()` if `milli`, else `value()`. Negative amounts and amounts
/// above `max` are errors.
fn parse_amount(
    key: &str,
    milli: bool,
    quantity: &KubeQuantity,
    max: i64,
) -> Result<i64, ResourceError> {
    let parsed = if milli { parse_milli(quantity) } else { parse_value(quantity) };
    let amount = parsed
        .map_err(|error| ResourceError::InvalidQuantity { resource: key.to_owned(), error })?;
    if amount < 0 {
        return Err(ResourceError::Negative {
            resource: key.to_owned(),
            value: quantity.0.clone(),
        });
    }
    if amount > max {
        return Err(ResourceError::TooLarge {
            resource: key.to_owned(),
            value: quantity.0.clone(),
            unit: if milli { "millicores" } else { "units" },
        });
    }
    Ok(amount)
}

impl Add for ResourceVector {
    type Output = ResourceVector;
    /// [`saturating_add`](ResourceVector::saturating_add).
    fn add(self, rhs: ResourceVector) -> ResourceVector {
        self.saturating_add(&rhs)
    }
}

impl AddAssign for ResourceVector {
    fn add_assign(&mut self, rhs: ResourceVector) {
        *self = self.saturating_add(&rhs);
    }
}

impl Sub for ResourceVector {
    type Output = ResourceVector;
    /// [`saturating_sub`](ResourceVector::saturating_sub).
    fn sub(self, rhs: ResourceVector) -> ResourceVector {
        self.saturating_sub(&rhs)
    }
}

impl SubAssign for ResourceVector {
    fn sub_assign(&mut self, rhs: ResourceVector) {
        *self = self.saturating_sub(&rhs);
    }
}

impl FromIterator<(ResourceName, i64)> for ResourceVector {
    /// Later entries for the same resource replace earlier ones.
    fn from_iter<I: IntoIterator<Item = (ResourceName, i64)>>(iter: I) -> Self {
        let mut out = ResourceVector::EMPTY;
        for (name, v) in iter {
            out.set(name, v);
        }
        out
    }
}

impl fmt::Display for ResourceVector {
    /// `cpu=1500m memory=2Gi batch-cpu=3000`; `(empty)` when no resource is
    /// present.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("(empty)");
        }
        for (i, (name, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}=", name.short_name())?;
            match name.display_kind() {
                DisplayKind::Milli => write!(f, "{}", Quantity::from_milli(v))?,
                DisplayKind::Bytes => write!(f, "{}", Quantity::from_value(v, Format::BinarySI))?,
                DisplayKind::Plain => write!(f, "{v}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ResourceVector {
    /// Raw numbers, so a failing test shows exact values:
    /// `{cpu: 1500, memory: 2147483648}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(n, v)| (n.short_name(), v))).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, KubeQuantity> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), KubeQuantity((*v).to_owned()))).collect()
    }

    fn v(pairs: &[(ResourceName, i64)]) -> ResourceVector {
        pairs.iter().copied().collect()
    }

    use ResourceName::{BatchCpu, BatchMemory, Cpu, EphemeralStorage, Memory, MidCpu, Pods};

    #[test]
    fn layout_is_small() {
        // 24 slots of i64 + the mask: keep an eye on PodView's footprint.
        assert_eq!(std::mem::size_of::<ResourceVector>(), 200);
        assert_eq!(std::mem::size_of::<ResourceName>(), 2);
    }

    #[test]
    fn quotav1_table() {
        // (a, b, add, subtract, max, sub_non_negative)
        type Case = (
            &'static str,
            Vec<(ResourceName, i64)>,
            Vec<(ResourceName, i64)>,
            Vec<(ResourceName, i64)>,
            Vec<(ResourceName, i64)>,
            Vec<(ResourceName, i64)>,
            Vec<(ResourceName, i64)>,
        );
        let cases: Vec<Case> = vec![
            ("both empty", vec![], vec![], vec![], vec![], vec![], vec![]),
            (
                "same keys",
                vec![(Cpu, 1000), (Memory, 10)],
                vec![(Cpu, 300), (Memory, 20)],
                vec![(Cpu, 1300), (Memory, 30)],
                vec![(Cpu, 700), (Memory, -10)],
                vec![(Cpu, 1000), (Memory, 20)],
                vec![(Cpu, 700), (Memory, 0)],
            ),
            (
                "key only in b",
                vec![(Cpu, 1000)],
                vec![(Memory, 5)],
                vec![(Cpu, 1000), (Memory, 5)],
                vec![(Cpu, 1000), (Memory, -5)],
                vec![(Cpu, 1000), (Memory, 5)],
                vec![(Cpu, 1000), (Memory, 0)],
            ),
            (
                "max keeps a lone negative",
                vec![(Cpu, -3)],
                vec![],
                vec![(Cpu, -3)],
                vec![(Cpu, -3)],
                vec![(Cpu, -3)],
                vec![(Cpu, 0)],
            ),
            (
                "zero is present",
                vec![(BatchCpu, 0)],
                vec![(BatchCpu, 0)],
                vec![(BatchCpu, 0)],
                vec![(BatchCpu, 0)],
                vec![(BatchCpu, 0)],
                vec![(BatchCpu, 0)],
            ),
        ];
        for (name, a, b, add, sub, max, subnn) in cases {
            let (a, b) = (v(&a), v(&b));
            assert_eq!(a + b, v(&add), "{name}: add");
            assert_eq!(a - b, v(&sub), "{name}: subtract");
            assert_eq!(a.max(&b), v(&max), "{name}: max");
            assert_eq!(a.sub_non_negative(&b), v(&subnn), "{name}: sub_non_negative");
        }
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        let big = v(&[(Cpu, i64::MAX - 1), (Memory, i64::MIN + 1)]);
        let two = v(&[(Cpu, 2), (Memory, 2)]);
        assert_eq!(big + two, v(&[(Cpu, i64::MAX), (Memory, i64::MIN + 3)]));
        assert_eq!(big - two, v(&[(Cpu, i64::MAX - 3), (Memory, i64::MIN)]));
        let mut acc = big;
        acc += big;
        assert_eq!(acc, v(&[(Cpu, i64::MAX), (Memory, i64::MIN)]));
        acc -= v(&[(Memory, i64::MAX)]);
        assert_eq!(acc.value(Memory), i64::MIN);
    }

    #[test]
    fn less_than_or_equal_quota_semantics() {
        // (request, limit, expected, exceeding)
        let cases = [
            (vec![(Cpu, 10)], vec![(Cpu, 10)], true, vec![]),
            (vec![(Cpu, 11)], vec![(Cpu, 10)], false, vec![Cpu]),
            // Missing from the limit: unlimited.
            (vec![(Cpu, 11), (Memory, 1 << 40)], vec![(Cpu, 20)], true, vec![]),
            // Missing from the request: not checked, even against a
            // negative limit (quotav1 only looks at keys in both).
            (vec![(Memory, 1)], vec![(Cpu, -1), (Memory, 1)], true, vec![]),
            (
                vec![(Cpu, 5), (Memory, 5), (BatchCpu, 5)],
                vec![(Cpu, 4), (Memory, 6), (BatchCpu, 4)],
                false,
                vec![Cpu, BatchCpu],
            ),
            (vec![], vec![(Cpu, 0)], true, vec![]),
        ];
        for (req, limit, expected, exceeding) in cases {
            let (req, limit) = (v(&req), v(&limit));
            assert_eq!(req.less_than_or_equal(&limit), expected, "{req:?} <= {limit:?}");
            assert_eq!(req.fits_within(&limit), expected);
            assert_eq!(req.exceeding(&limit), exceeding.into_iter().collect());
        }
    }

    #[test]
    fn insufficient_node_fit_semantics() {
        let free = v(&[(Cpu, 1000), (Memory, 100), (Pods, 1)]);
        // Missing in free counts as zero available.
        assert_eq!(v(&[(BatchCpu, 1)]).insufficient(&free), ResourceSet::single(BatchCpu));
        // Zero requests always fit, even for a resource the node lacks.
        assert!(v(&[(BatchCpu, 0), (Cpu, 1000)]).fits_allocatable(&free));
        assert!(!v(&[(Cpu, 1001)]).fits_allocatable(&free));
        // A negative free amount (overcommitted node) rejects positive
        // requests only.
        let over = v(&[(Cpu, -5)]);
        assert!(v(&[(Cpu, 0)]).fits_allocatable(&over));
        assert!(!v(&[(Cpu, 1)]).fits_allocatable(&over));
    }

    #[test]
    fn mask_get_set_remove() {
        let mut a = v(&[(Cpu, 1), (Memory, 2), (BatchCpu, 3), (MidCpu, 4)]);
        let masked = a.mask(ResourceSet::CPU_MEMORY);
        assert_eq!(masked, v(&[(Cpu, 1), (Memory, 2)]));
        assert_eq!(a.mask(ResourceSet::BATCH), v(&[(BatchCpu, 3)]));
        assert_eq!(a.mask(ResourceSet::EMPTY), ResourceVector::EMPTY);
        assert_eq!(a.get(Pods), None);
        assert_eq!(a.value(Pods), 0);
        assert_eq!(a.remove(MidCpu), Some(4));
        assert_eq!(a.remove(MidCpu), None);
        assert!(!a.contains(MidCpu));
        assert_eq!(a.len(), 3);
        a.set(Pods, 0);
        assert!(a.contains(Pods));
        assert_eq!(a.get(Pods), Some(0));
    }

    #[test]
    fn zero_empty_negative() {
        assert!(ResourceVector::EMPTY.is_zero());
        assert!(ResourceVector::EMPTY.is_empty());
        let z = v(&[(Cpu, 0)]);
        assert!(z.is_zero());
        assert!(!z.is_empty());
        assert_ne!(z, ResourceVector::EMPTY, "present-with-zero differs from missing");
        let n = v(&[(Cpu, -1), (Memory, 1), (BatchMemory, -2)]);
        assert_eq!(n.negative(), [Cpu, BatchMemory].into_iter().collect());
        assert_eq!(n.clamp_non_negative(), v(&[(Cpu, 0), (Memory, 1), (BatchMemory, 0)]));
    }

    #[test]
    fn names_and_aliases() {
        for alias in names::BATCH_CPU_ALIASES {
            assert_eq!(ResourceName::parse(alias).unwrap(), BatchCpu);
        }
        for alias in names::BATCH_MEMORY_ALIASES {
            assert_eq!(ResourceName::parse(alias).unwrap(), BatchMemory);
        }
        assert_eq!(ResourceName::parse("ephemeral-storage").unwrap(), EphemeralStorage);
        assert_eq!(BatchCpu.as_str(), "kubernetes.io/batch-cpu");
        assert_eq!(BatchCpu.short_name(), "batch-cpu");
        let gpu = ResourceName::parse("test.example/names-gpu").unwrap();
        assert_eq!(ResourceName::lookup("test.example/names-gpu"), Some(gpu));
        assert_eq!(gpu.as_str(), "test.example/names-gpu");
        assert_eq!(format!("{gpu:?}"), "Extended(\"test.example/names-gpu\")");
        assert_eq!(ResourceName::lookup("test.example/never-seen"), None);
    }

    #[test]
    fn order_is_by_slot_then_extended_name() {
        // Intern in reverse alphabetical order; iteration must not care.
        let z = ResourceName::parse("test.example/order-z").unwrap();
        let a = ResourceName::parse("test.example/order-a").unwrap();
        assert!(Cpu < Memory && Memory < BatchCpu && BatchCpu < a && a < z);
        let vec = v(&[(z, 1), (Memory, 2), (a, 3), (Cpu, 4)]);
        let order: Vec<_> = vec.iter().map(|(n, _)| n).collect();
        assert_eq!(order, vec![Cpu, Memory, a, z]);
        assert_eq!(vec.names().iter().collect::<Vec<_>>(), order);
    }

    #[test]
    fn from_resource_list_units_and_aliases() {
        let got = ResourceVector::from_resource_list(&list(&[
            ("cpu", "1500m"),
            ("memory", "2Gi"),
            ("pods", "110"),
            ("ephemeral-storage", "0.5"),
            ("kubernetes.io/batch-cpu", "3000"),
            ("resource.katalyst.kubewharf.io/reclaimed_memory", "1Ki"),
            ("kubernetes.io/mid-cpu", "2k"),
        ]))
        .unwrap();
        assert_eq!(
            got,
            v(&[
                (Cpu, 1500),
                (Memory, 2 << 30),
                (Pods, 110),
                // value() rounds up.
                (EphemeralStorage, 1),
                (BatchCpu, 3000),
                (BatchMemory, 1024),
                (MidCpu, 2000),
            ])
        );
    }

    #[test]
    fn canonical_alias_wins_over_others() {
        let got = ResourceVector::from_resource_list(&list(&[
            ("koordinator.sh/batch-cpu", "1000"),
            ("kubernetes.io/batch-cpu", "2000"),
            ("resource.katalyst.kubewharf.io/reclaimed_millicpu", "3k"),
            ("katalyst.kubewharf.io/reclaimed_memory", "7"),
            ("koordinator.sh/batch-memory", "5"),
        ]))
        .unwrap();
        assert_eq!(got, v(&[(BatchCpu, 2000), (BatchMemory, 5)]));
    }

    #[test]
    fn malformed_quantity_names_resource_and_value() {
        let err = ResourceVector::from_resource_list(&list(&[("memory", "12x")])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("\"memory\""), "{msg}");
        assert!(msg.contains("12x"), "{msg}");
    }

    #[test]
    fn negative_and_saturated_amounts_are_refused() {
        // (resource, quantity, what the error must say)
        let cases = [
            ("cpu", "-4", "negative"),
            ("memory", "-1Ki", "negative"),
            ("example.com/dev", "-1", "negative"),
            ("memory", "99999999999999999999Ei", "too large"),
            ("memory", "8Ei", "too large"),
            ("cpu", "9223372036854775807", "too large"),
            ("cpu", "4611686018427388", "too large"),
        ];
        for (resource, quantity, says) in cases {
            let err = ResourceVector::from_object_list(&list(&[(resource, quantity)]))
                .expect_err(quantity);
            let msg = err.to_string();
            assert!(msg.contains(says), "{resource}={quantity}: {msg}");
            assert!(msg.contains(resource) && msg.contains(quantity), "{msg}");
        }
        // The bound itself and zero are fine.
        let ok = list(&[("memory", "4Ei"), ("cpu", "0")]);
        assert_eq!(
            ResourceVector::from_object_list(&ok).unwrap(),
            v(&[(Memory, MAX_LIST_AMOUNT), (Cpu, 0)])
        );
        // Other lists (quotas) may say "no limit" with a saturating amount,
        // but never a negative one.
        let quota = list(&[("cpu", "1844674407370955161")]);
        assert_eq!(ResourceVector::from_resource_list(&quota).unwrap(), v(&[(Cpu, i64::MAX)]));
        assert!(ResourceVector::from_resource_list(&list(&[("cpu", "-1")])).is_err());
    }

    #[test]
    fn display_and_resource_list() {
        let vec = v(&[(Cpu, 1500), (Memory, 2 << 30), (BatchCpu, 3000)]);
        assert_eq!(vec.to_string(), "cpu=1500m memory=2Gi batch-cpu=3000");
        assert_eq!(ResourceVector::EMPTY.to_string(), "(empty)");
        let rl = vec.to_resource_list();
        assert_eq!(rl["cpu"].0, "1500m");
        assert_eq!(rl["memory"].0, "2Gi");
        assert_eq!(ResourceVector::from_resource_list(&rl).unwrap(), vec);
    }
}
