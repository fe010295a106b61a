//! How a cpuset is chosen (spec §6.7): [`allocate_cpuset`] (available
//! CPUs, required-policy pre-filter, per-NUMA split, verification) and
//! [`take_cpus`] (the topology-aware choice itself).
//!
//! The choice is a best fit over four candidate lists, each built from the
//! CPUs still free and ordered by the NUMA allocate strategy:
//!
//! * whole free cores per NUMA node, then per socket (FullPCPUs, or any
//!   policy on a machine with one thread per core);
//! * free CPUs per NUMA node, then per socket, "spread" so that one thread
//!   of every core comes before any sibling (SpreadByPCPUs);
//! * a fallback over every free CPU that fills partly used cores on the
//!   sockets the result already touches.
//!
//! Every sort is stable with a total tie-break, so the result is a pure
//! function of the inputs (Koordinator builds its lists from Go maps and
//! `sort.Slice`, which is neither).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::allocation::NodeAllocation;
use super::annotations::{
    CpuBindPolicy, CpuExclusivePolicy, NumaAllocateStrategy, NumaNodeResources,
};
use super::cpuset::CpuSet;
use super::topology::{CpuInfo, CpuTopology};

/// Why no cpuset could be chosen. The messages are Koordinator's, which
/// users and dashboards match on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocateError {
    /// Fewer usable CPUs than requested.
    #[error("not enough cpus available to satisfy request")]
    NotEnoughCpus,
    /// No ordering produced enough CPUs (unreachable when enough are free;
    /// kept as a guard).
    #[error("failed to allocate cpus")]
    FailedToAllocate,
    /// The chosen CPUs break the pod's required bind policy.
    #[error("cpuset {cpuset} does not satisfy the required cpu bind policy {policy}")]
    RequiredPolicyUnsatisfied {
        /// The required policy.
        policy: CpuBindPolicy,
        /// What was chosen.
        cpuset: String,
    },
}

/// What a pod asks of [`allocate_cpuset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSetRequest {
    /// How many CPUs.
    pub num_cpus: usize,
    /// FullPCPUs or SpreadByPCPUs.
    pub bind_policy: CpuBindPolicy,
    /// Whether `bind_policy` is required (pre-filter and verify) rather than
    /// preferred.
    pub required: bool,
    /// The pod's exclusive policy.
    pub exclusive_policy: CpuExclusivePolicy,
    /// Which NUMA node / socket to fill first.
    pub numa_strategy: NumaAllocateStrategy,
}

/// Chooses a cpuset on a node (spec §6.7 `allocateCPUSet`, steps 1–5).
///
/// * `reserved`: CPUs never handed out ([`NodeTopology::reserved_cpus`](super::topology::NodeTopology::reserved_cpus)).
/// * `preferred`: CPUs a matched reservation holds for this pod; they count
///   as available and are taken first.
/// * `numa_resources`: when NUMA resources were assigned (a NUMA policy
///   hint), each NUMA node contributes `min(its available CPUs, its cpu
///   share / 1000)` CPUs, and those must add up to the request.
pub fn allocate_cpuset(
    topology: &CpuTopology,
    allocation: &NodeAllocation,
    reserved: &CpuSet,
    preferred: &CpuSet,
    request: &CpuSetRequest,
    numa_resources: &[NumaNodeResources],
) -> Result<CpuSet, AllocateError> {
    let mut available = allocation.available_cpus(topology, reserved, preferred);
    if request.required {
        available = filter_required(topology, request.bind_policy, &available);
    }
    if available.len() < request.num_cpus {
        return Err(AllocateError::NotEnoughCpus);
    }

    let take = |available: &CpuSet, n: usize| {
        take_preferred_cpus(topology, available, preferred, allocation, n, request)
    };
    let result = if numa_resources.is_empty() {
        take(&available, request.num_cpus)?
    } else {
        let mut result = CpuSet::new();
        for numa in numa_resources {
            let in_node = available.intersection(topology.cpus_in_node(numa.node));
            let share = usize::try_from(numa.resources.cpu() / 1000).unwrap_or(0);
            let n = in_node.len().min(share);
            result.union_with(&take(&in_node, n)?);
        }
        if result.len() != request.num_cpus {
            return Err(AllocateError::NotEnoughCpus);
        }
        result
    };

    if request.required && !satisfies_required(topology, request.bind_policy, &result) {
        return Err(AllocateError::RequiredPolicyUnsatisfied {
            policy: request.bind_policy,
            cpuset: result.to_string(),
        });
    }
    Ok(result)
}

/// Whether [`allocate_cpuset`] would succeed for a **required** policy
/// without a NUMA split, by counting instead of choosing: Filter asks this
/// on every node, and choosing costs far more than counting.
///
/// Exact, because [`take_cpus`] never fails with enough CPUs and cannot
/// break a required policy on its pre-filtered input: SpreadByPCPUs input
/// has one CPU per core, and FullPCPUs input is whole cores with a request
/// that is a multiple of a core (Filter rejects others first), which every
/// step takes whole. The `filter_count_matches_allocation` test checks it.
pub fn can_allocate_required(
    topology: &CpuTopology,
    allocation: &NodeAllocation,
    reserved: &CpuSet,
    request: &CpuSetRequest,
) -> bool {
    let available = allocation.available_cpus(topology, reserved, &CpuSet::new());
    filter_required(topology, request.bind_policy, &available).len() >= request.num_cpus
}

/// The CPUs of `available` a required policy may use: FullPCPUs keeps only
/// cores that are entirely available; SpreadByPCPUs keeps the lowest
/// available CPU of each core.
pub fn filter_required(
    topology: &CpuTopology,
    policy: CpuBindPolicy,
    available: &CpuSet,
) -> CpuSet {
    let mut by_core: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for cpu in available.iter() {
        if let Some(info) = topology.info(cpu) {
            by_core.entry(info.core).or_default().push(cpu);
        }
    }
    match policy {
        CpuBindPolicy::FullPCPUs => by_core
            .values()
            .filter(|cpus| cpus.len() == topology.cpus_per_core())
            .flatten()
            .copied()
            .collect(),
        CpuBindPolicy::SpreadByPCPUs => by_core.values().map(|cpus| cpus[0]).collect(),
        _ => available.clone(),
    }
}

/// Step 5: whole cores for FullPCPUs, one CPU per core for SpreadByPCPUs.
fn satisfies_required(topology: &CpuTopology, policy: CpuBindPolicy, cpus: &CpuSet) -> bool {
    let cores = topology.count_cores(cpus);
    match policy {
        CpuBindPolicy::FullPCPUs => cores * topology.cpus_per_core() == cpus.len(),
        CpuBindPolicy::SpreadByPCPUs => cores == cpus.len(),
        _ => true,
    }
}

/// Takes from `preferred ∩ available` first, then [`take_cpus`] on the rest.
fn take_preferred_cpus(
    topology: &CpuTopology,
    available: &CpuSet,
    preferred: &CpuSet,
    allocation: &NodeAllocation,
    n: usize,
    request: &CpuSetRequest,
) -> Result<CpuSet, AllocateError> {
    let take = |from: &CpuSet, n: usize| {
        take_cpus(
            topology,
            from,
            allocation,
            n,
            request.bind_policy,
            request.exclusive_policy,
            request.numa_strategy,
        )
    };
    let preferred = available.intersection(preferred);
    if preferred.is_empty() {
        return take(available, n);
    }
    if n <= preferred.len() {
        return take(&preferred, n);
    }
    let rest = take(&available.difference(&preferred), n - preferred.len())?;
    Ok(preferred.union(&rest))
}

/// Chooses `n` CPUs out of `available` (spec §6.7 `takeCPUs`).
///
/// `allocation` supplies the exclusive policies of the pods already on the
/// node; `available` must already exclude allocated and reserved CPUs.
pub fn take_cpus(
    topology: &CpuTopology,
    available: &CpuSet,
    allocation: &NodeAllocation,
    n: usize,
    bind_policy: CpuBindPolicy,
    exclusive_policy: CpuExclusivePolicy,
    numa_strategy: NumaAllocateStrategy,
) -> Result<CpuSet, AllocateError> {
    let mut acc =
        Accumulator::new(topology, available, allocation, n, exclusive_policy, numa_strategy);
    if acc.satisfied() {
        return Ok(acc.result);
    }
    if acc.needed > acc.free.len() {
        return Err(AllocateError::NotEnoughCpus);
    }
    let per_core = topology.cpus_per_core();
    let per_node = topology.cpus_per_node();
    let per_socket = topology.cpus_per_socket();
    let full_pcpus = bind_policy == CpuBindPolicy::FullPCPUs;

    if full_pcpus || per_core == 1 {
        // 2a: one NUMA node of whole free cores.
        if acc.needed <= per_node {
            for filter_exclusive in [true, false] {
                if acc.take_first_fitting(acc.free_cores_in_node(filter_exclusive), false) {
                    return Ok(acc.result);
                }
            }
        }
        // 2b: one socket of whole free cores. Tried whenever the request
        // fits a socket, also after 2a failed: a request that fits no
        // single NUMA node still stays on one socket when it can (the spec
        // reads "else if", which would skip this and scatter such a request
        // across sockets in 2c).
        if acc.needed <= per_socket && acc.take_first_fitting(acc.free_cores_in_socket(), false) {
            return Ok(acc.result);
        }
        // 2c: whole sockets, largest first; too-large ones are kept for 2d.
        let mut sockets = acc.free_cores_in_socket();
        sockets.sort_by_key(|cpus| std::cmp::Reverse(cpus.len()));
        let mut too_large = Vec::new();
        for cpus in sockets {
            if acc.needed >= cpus.len() {
                acc.take(&cpus);
                if acc.satisfied() {
                    return Ok(acc.result);
                }
            } else {
                too_large.push(cpus);
            }
        }
        // 2d: whole cores from the smallest remaining sockets.
        if per_core > 0 && acc.needed >= per_core {
            too_large.sort_by_key(Vec::len);
            'sockets: for cpus in too_large {
                for core in cpus.chunks(per_core) {
                    acc.take(core);
                    if acc.satisfied() {
                        return Ok(acc.result);
                    }
                    if acc.needed < per_core {
                        break 'sockets;
                    }
                }
            }
        }
    }

    if !full_pcpus {
        // 3a / 3b: one NUMA node, then one socket, spread over cores.
        if acc.needed <= per_node {
            for filter_exclusive in [true, false] {
                if acc.take_first_fitting(acc.free_cpus_in_node(filter_exclusive), true) {
                    return Ok(acc.result);
                }
            }
        }
        if acc.needed <= per_socket {
            for filter_exclusive in [true, false] {
                if acc.take_first_fitting(acc.free_cpus_in_socket(filter_exclusive), true) {
                    return Ok(acc.result);
                }
            }
        }
    }

    // 4: one CPU at a time, near what was already taken.
    for filter_exclusive in [true, false] {
        let cpus = acc.spread(acc.free_cpus(filter_exclusive));
        for cpu in cpus {
            if acc.satisfied() {
                break;
            }
            acc.take(&[cpu]);
        }
        if acc.satisfied() {
            return Ok(acc.result);
        }
    }
    Err(AllocateError::FailedToAllocate)
}

/// The state of one [`take_cpus`] call.
struct Accumulator<'a> {
    topology: &'a CpuTopology,
    /// CPUs still free (with their topology), ascending by id.
    free: Vec<CpuInfo>,
    needed: usize,
    exclusive_policy: CpuExclusivePolicy,
    /// Cores holding CPUs of PCPULevel pods (this one included, as it takes).
    exclusive_cores: BTreeSet<u32>,
    /// NUMA nodes holding CPUs of NUMANodeLevel pods.
    exclusive_nodes: BTreeSet<u32>,
    most_allocated: bool,
    result: CpuSet,
}

/// Per-group candidate list with its sort keys.
struct Group {
    id: u32,
    score: usize,
    tie_score: usize,
    cpus: Vec<u32>,
}

impl<'a> Accumulator<'a> {
    fn new(
        topology: &'a CpuTopology,
        available: &CpuSet,
        allocation: &NodeAllocation,
        needed: usize,
        exclusive_policy: CpuExclusivePolicy,
        strategy: NumaAllocateStrategy,
    ) -> Accumulator<'a> {
        let mut exclusive_cores = BTreeSet::new();
        let mut exclusive_nodes = BTreeSet::new();
        for cpu in allocation.allocated_cpus().iter() {
            let Some(info) = topology.info(cpu) else { continue };
            if allocation.held_pcpu_exclusive(cpu) {
                exclusive_cores.insert(info.core);
            }
            if allocation.held_numa_exclusive(cpu) {
                exclusive_nodes.insert(info.node);
            }
        }
        Accumulator {
            topology,
            free: available.iter().filter_map(|c| topology.info(c).copied()).collect(),
            needed,
            exclusive_policy,
            exclusive_cores,
            exclusive_nodes,
            most_allocated: strategy == NumaAllocateStrategy::MostAllocated,
            result: CpuSet::new(),
        }
    }

    fn satisfied(&self) -> bool {
        self.needed == 0
    }

    fn take(&mut self, cpus: &[u32]) {
        for &cpu in cpus {
            let Ok(i) = self.free.binary_search_by_key(&cpu, |c| c.cpu) else { continue };
            let info = self.free.remove(i);
            self.result.insert(cpu);
            self.needed = self.needed.saturating_sub(1);
            match self.exclusive_policy {
                CpuExclusivePolicy::PCPULevel => {
                    self.exclusive_cores.insert(info.core);
                }
                CpuExclusivePolicy::NUMANodeLevel => {
                    self.exclusive_nodes.insert(info.node);
                }
                CpuExclusivePolicy::None => {}
            }
        }
    }

    /// Takes the first `needed` CPUs of the first list long enough
    /// (spread first if asked); whether it did.
    fn take_first_fitting(&mut self, lists: Vec<Vec<u32>>, spread: bool) -> bool {
        let Some(cpus) = lists.into_iter().find(|cpus| cpus.len() >= self.needed) else {
            return false;
        };
        let cpus = if spread { self.spread(cpus) } else { cpus };
        let n = self.needed;
        self.take(&cpus[..n]);
        true
    }

    /// The strategy order on free counts: MostAllocated fills the emptiest
    /// first (fewer free first), the others the fullest.
    fn by_strategy(&self, a: usize, b: usize) -> Ordering {
        if self.most_allocated { a.cmp(&b) } else { b.cmp(&a) }
    }

    fn excluded_pcpu(&self, info: &CpuInfo) -> bool {
        self.exclusive_policy == CpuExclusivePolicy::PCPULevel
            && self.exclusive_cores.contains(&info.core)
    }

    fn excluded_numa(&self, info: &CpuInfo) -> bool {
        self.exclusive_policy == CpuExclusivePolicy::NUMANodeLevel
            && self.exclusive_nodes.contains(&info.node)
    }

    /// Sorts groups by score (strategy), then tie score (strategy), then id.
    fn sort_groups(&self, groups: &mut [Group]) {
        groups.sort_by(|a, b| {
            self.by_strategy(a.score, b.score)
                .then_with(|| self.by_strategy(a.tie_score, b.tie_score))
                .then(a.id.cmp(&b.id))
        });
    }

    /// The free CPUs grouped by core, ascending core id, each core's CPUs
    /// ascending, skipping those `skip` rejects.
    fn cores(&self, skip: impl Fn(&CpuInfo) -> bool) -> BTreeMap<u32, (CpuInfo, Vec<u32>)> {
        let mut cores: BTreeMap<u32, (CpuInfo, Vec<u32>)> = BTreeMap::new();
        for info in self.free.iter().filter(|i| !skip(i)) {
            cores.entry(info.core).or_insert_with(|| (*info, Vec::new())).1.push(info.cpu);
        }
        cores
    }

    /// `freeCoresInNode(fullOnly, filterExclusive)`: per NUMA node, the CPUs
    /// of its fully free cores in core order. Node score: that count;
    /// tie-break: the socket's free CPUs (all of them, after the filter).
    fn free_cores_in_node(&self, filter_exclusive: bool) -> Vec<Vec<u32>> {
        let cores = self.cores(|i| filter_exclusive && self.excluded_numa(i));
        let mut socket_free: BTreeMap<u32, usize> = BTreeMap::new();
        for (info, cpus) in cores.values() {
            *socket_free.entry(info.socket).or_default() += cpus.len();
        }
        let full = self.topology.cpus_per_core();
        // Full cores all have the same count, so the core order (more free
        // CPUs first, then lower id) is plain id order.
        let mut nodes: BTreeMap<u32, (u32, Vec<u32>)> = BTreeMap::new();
        for (info, cpus) in cores.values().filter(|(_, cpus)| cpus.len() == full) {
            nodes.entry(info.node).or_insert((info.socket, Vec::new())).1.extend(cpus);
        }
        let mut groups: Vec<Group> = nodes
            .into_iter()
            .map(|(node, (socket, cpus))| Group {
                id: node,
                score: cpus.len(),
                tie_score: socket_free[&socket],
                cpus,
            })
            .collect();
        self.sort_groups(&mut groups);
        groups.into_iter().map(|g| g.cpus).collect()
    }

    /// `freeCoresInSocket(fullOnly)`: per socket, the CPUs of its fully free
    /// cores. No exclusion filter; score: the list length.
    fn free_cores_in_socket(&self) -> Vec<Vec<u32>> {
        let full = self.topology.cpus_per_core();
        let mut sockets: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (info, cpus) in self.cores(|_| false).values().filter(|(_, c)| c.len() == full) {
            sockets.entry(info.socket).or_default().extend(cpus);
        }
        let mut groups: Vec<Group> = sockets
            .into_iter()
            .map(|(socket, cpus)| Group { id: socket, score: cpus.len(), tie_score: 0, cpus })
            .collect();
        self.sort_groups(&mut groups);
        groups.into_iter().map(|g| g.cpus).collect()
    }

    /// Keeps the first CPU seen of each core.
    fn one_per_core(&self, cpus: Vec<u32>) -> Vec<u32> {
        let mut seen = BTreeSet::new();
        cpus.into_iter()
            .filter(|c| self.topology.info(*c).is_some_and(|i| seen.insert(i.core)))
            .collect()
    }

    /// `freeCPUsInNode(filterExclusive)`: per NUMA node, its free CPUs
    /// ascending, both exclusions applied and reduced to one CPU per core
    /// when filtering. Scores (node, then socket) count CPUs **before** the
    /// reduction.
    fn free_cpus_in_node(&self, filter_exclusive: bool) -> Vec<Vec<u32>> {
        let mut nodes: BTreeMap<u32, (u32, Vec<u32>)> = BTreeMap::new();
        let mut socket_free: BTreeMap<u32, usize> = BTreeMap::new();
        for info in &self.free {
            if filter_exclusive && (self.excluded_pcpu(info) || self.excluded_numa(info)) {
                continue;
            }
            nodes.entry(info.node).or_insert((info.socket, Vec::new())).1.push(info.cpu);
            *socket_free.entry(info.socket).or_default() += 1;
        }
        let mut groups: Vec<Group> = nodes
            .into_iter()
            .map(|(node, (socket, cpus))| Group {
                id: node,
                score: cpus.len(),
                tie_score: socket_free[&socket],
                cpus: if filter_exclusive { self.one_per_core(cpus) } else { cpus },
            })
            .collect();
        self.sort_groups(&mut groups);
        groups.into_iter().map(|g| g.cpus).collect()
    }

    /// `freeCPUsInSocket(filterExclusive)`: per socket, its free CPUs
    /// ascending, PCPULevel exclusion only, reduced to one per core when
    /// filtering. Score: the length **after** the reduction.
    fn free_cpus_in_socket(&self, filter_exclusive: bool) -> Vec<Vec<u32>> {
        let mut sockets: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for info in &self.free {
            if filter_exclusive && self.excluded_pcpu(info) {
                continue;
            }
            sockets.entry(info.socket).or_default().push(info.cpu);
        }
        let mut groups: Vec<Group> = sockets
            .into_iter()
            .map(|(socket, cpus)| {
                let cpus = if filter_exclusive { self.one_per_core(cpus) } else { cpus };
                Group { id: socket, score: cpus.len(), tie_score: 0, cpus }
            })
            .collect();
        self.sort_groups(&mut groups);
        groups.into_iter().map(|g| g.cpus).collect()
    }

    /// `freeCPUs(filterExclusive)`: every free CPU, by core, cores ordered
    /// by: CPUs of the result on the core's socket (more first), the
    /// socket's free count (strategy), the NUMA node's free count
    /// (strategy), the core's free count (fewer first, to fill partly used
    /// cores), socket id, core id.
    fn free_cpus(&self, filter_exclusive: bool) -> Vec<u32> {
        let cores =
            self.cores(|i| filter_exclusive && (self.excluded_pcpu(i) || self.excluded_numa(i)));
        let mut socket_free: BTreeMap<u32, usize> = BTreeMap::new();
        let mut node_free: BTreeMap<u32, usize> = BTreeMap::new();
        for (info, cpus) in cores.values() {
            *socket_free.entry(info.socket).or_default() += cpus.len();
            *node_free.entry(info.node).or_default() += cpus.len();
        }
        let colo: BTreeMap<u32, usize> = socket_free
            .keys()
            .map(|s| (*s, self.topology.cpus_in_socket(*s).intersection_len(&self.result)))
            .collect();
        let mut order: Vec<&(CpuInfo, Vec<u32>)> = cores.values().collect();
        order.sort_by(|(a, a_cpus), (b, b_cpus)| {
            colo[&b.socket]
                .cmp(&colo[&a.socket])
                .then_with(|| self.by_strategy(socket_free[&a.socket], socket_free[&b.socket]))
                .then_with(|| self.by_strategy(node_free[&a.node], node_free[&b.node]))
                .then(a_cpus.len().cmp(&b_cpus.len()))
                .then(a.socket.cmp(&b.socket))
                .then(a.core.cmp(&b.core))
        });
        order.into_iter().flat_map(|(_, cpus)| cpus.iter().copied()).collect()
    }

    /// Reorders `cpus` in rounds: each round takes, in list order, the first
    /// remaining CPU of every core that still has one. So one thread of
    /// every core comes before any sibling.
    fn spread(&self, cpus: Vec<u32>) -> Vec<u32> {
        if cpus.len() <= self.topology.cpus_per_core() {
            return cpus;
        }
        let mut out = Vec::with_capacity(cpus.len());
        let mut pending = cpus;
        while !pending.is_empty() {
            let mut seen = BTreeSet::new();
            let mut later = Vec::new();
            for cpu in pending {
                let core = self.topology.info(cpu).map_or(u32::MAX, |i| i.core);
                if seen.insert(core) {
                    out.push(cpu);
                } else {
                    later.push(cpu);
                }
            }
            pending = later;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CpuBindPolicy::{FullPCPUs, SpreadByPCPUs};
    use CpuExclusivePolicy as Excl;
    use NumaAllocateStrategy::{LeastAllocated, MostAllocated};
    use kolo_core::resources::{ResourceName, ResourceVector};

    fn set(text: &str) -> CpuSet {
        CpuSet::parse(text).unwrap()
    }

    /// 2 sockets × 2 NUMA nodes × 4 cores × 2 threads: node k = cpus
    /// 8k..8k+7, socket 0 = 0-15, core c = cpus 2c, 2c+1.
    fn big() -> CpuTopology {
        CpuTopology::synthetic(2, 2, 4, 2)
    }

    fn holding(pods: &[(&str, Excl)]) -> NodeAllocation {
        let mut a = NodeAllocation::new();
        for (i, (cpus, excl)) in pods.iter().enumerate() {
            a.add(&format!("pod-{i}"), set(cpus), *excl, Vec::new());
        }
        a
    }

    fn take(
        t: &CpuTopology,
        alloc: &NodeAllocation,
        n: usize,
        policy: CpuBindPolicy,
        excl: Excl,
        strategy: NumaAllocateStrategy,
    ) -> Result<String, AllocateError> {
        let available = alloc.available_cpus(t, &CpuSet::new(), &CpuSet::new());
        take_cpus(t, &available, alloc, n, policy, excl, strategy).map(|s| s.to_string())
    }

    #[test]
    fn spread_order_of_the_spec_example() {
        let t = big();
        let acc = Accumulator::new(
            &t,
            t.all_cpus(),
            &NodeAllocation::new(),
            32,
            Excl::None,
            LeastAllocated,
        );
        let spread = acc.spread((0..32).collect());
        let expected: Vec<u32> = (0..32).step_by(2).chain((1..32).step_by(2)).collect();
        assert_eq!(spread, expected);
        // Rounds follow the remaining list's order, not the first round's.
        assert_eq!(acc.spread(vec![0, 2, 3, 1]), vec![0, 2, 3, 1]);
        assert_eq!(acc.spread(vec![0, 1]), vec![0, 1], "one core's worth is left alone");
    }

    /// Hand-checked choices on the 32-CPU machine (case, held CPUs, n,
    /// policy, exclusive, strategy, expected).
    #[test]
    fn take_cpus_table() {
        let t = big();
        let none: &[(&str, Excl)] = &[];
        type Case<'a> = (
            &'a str,
            &'a [(&'a str, Excl)],
            usize,
            CpuBindPolicy,
            Excl,
            NumaAllocateStrategy,
            &'a str,
        );
        let cases: &[Case] = &[
            ("full cores, one node", none, 4, FullPCPUs, Excl::None, LeastAllocated, "0-3"),
            ("whole node", none, 8, FullPCPUs, Excl::None, LeastAllocated, "0-7"),
            // Node 0 has 4 free; nodes 1-3 have 8. Least: the most free, tie
            // broken by the socket with more free (socket 1: 16 > 12).
            (
                "least allocated node",
                &[("0-3", Excl::None)],
                4,
                FullPCPUs,
                Excl::None,
                LeastAllocated,
                "16-19",
            ),
            (
                "most allocated node",
                &[("0-3", Excl::None)],
                4,
                FullPCPUs,
                Excl::None,
                MostAllocated,
                "4-7",
            ),
            // 12 > a node's 8, <= a socket's 16.
            ("across a socket", none, 12, FullPCPUs, Excl::None, LeastAllocated, "0-11"),
            (
                "across a socket, least",
                &[("0-1", Excl::None)],
                12,
                FullPCPUs,
                Excl::None,
                LeastAllocated,
                "16-27",
            ),
            (
                "across a socket, most",
                &[("0-1", Excl::None)],
                12,
                FullPCPUs,
                Excl::None,
                MostAllocated,
                "2-13",
            ),
            // Fits no single node (each has 6 full-core CPUs) but one socket.
            (
                "node full, socket fits",
                &[("0-1,8-9,16-17,24-25", Excl::None)],
                8,
                FullPCPUs,
                Excl::None,
                LeastAllocated,
                "2-7,10-11",
            ),
            // 2c takes socket 0 whole (16), 2d two cores of socket 1.
            ("across sockets", none, 20, FullPCPUs, Excl::None, LeastAllocated, "0-19"),
            // Socket 0 has 14 full-core CPUs, socket 1 has 12: 2c takes
            // socket 0 (20 >= 14), 2d three cores of socket 1.
            (
                "across sockets, partly used",
                &[("0-1", Excl::None), ("16-19", Excl::None)],
                20,
                FullPCPUs,
                Excl::None,
                LeastAllocated,
                "2-15,20-25",
            ),
            ("spread in a node", none, 4, SpreadByPCPUs, Excl::None, LeastAllocated, "0,2,4,6"),
            // Filtered lists hold one CPU per core (4 per node): the unfiltered
            // pass spreads node 0 as 0,2,4,6,1,3,...
            (
                "spread, siblings needed",
                none,
                6,
                SpreadByPCPUs,
                Excl::None,
                LeastAllocated,
                "0-4,6",
            ),
            ("spread whole node", none, 8, SpreadByPCPUs, Excl::None, LeastAllocated, "0-7"),
            (
                "spread most allocated",
                &[("0-3", Excl::None)],
                2,
                SpreadByPCPUs,
                Excl::None,
                MostAllocated,
                "4,6",
            ),
            // 18 > a socket: straight to the fallback, spread over all free.
            (
                "spread across sockets",
                none,
                18,
                SpreadByPCPUs,
                Excl::None,
                LeastAllocated,
                "0-4,6,8,10,12,14,16,18,20,22,24,26,28,30",
            ),
        ];
        for (case, held, n, policy, excl, strategy, expected) in cases {
            let alloc = holding(held);
            assert_eq!(
                take(&t, &alloc, *n, *policy, *excl, *strategy).as_deref(),
                Ok(*expected),
                "{case}"
            );
        }
    }

    #[test]
    fn one_thread_per_core_uses_the_core_path_for_any_policy() {
        let t = CpuTopology::synthetic(2, 1, 4, 1);
        let empty = NodeAllocation::new();
        assert_eq!(take(&t, &empty, 3, SpreadByPCPUs, Excl::None, LeastAllocated).unwrap(), "0-2");
        let held = holding(&[("0", Excl::None)]);
        assert_eq!(take(&t, &held, 3, SpreadByPCPUs, Excl::None, LeastAllocated).unwrap(), "4-6");
        assert_eq!(take(&t, &held, 3, SpreadByPCPUs, Excl::None, MostAllocated).unwrap(), "1-3");
        // 2c takes socket 1 whole (the larger), 2d one core at a time from socket 0.
        assert_eq!(take(&t, &held, 6, FullPCPUs, Excl::None, MostAllocated).unwrap(), "1-2,4-7");
    }

    #[test]
    fn pcpu_level_exclusion_on_then_off() {
        // One node of 4 cores × 2 threads; a PCPULevel pod holds cpu 0.
        let t = CpuTopology::synthetic(1, 1, 4, 2);
        let held = holding(&[("0", Excl::PCPULevel)]);
        // Core 0 is avoided by a PCPULevel pod...
        assert_eq!(
            take(&t, &held, 3, SpreadByPCPUs, Excl::PCPULevel, LeastAllocated).unwrap(),
            "2,4,6"
        );
        // ...but not by a pod without exclusivity.
        assert_eq!(take(&t, &held, 3, SpreadByPCPUs, Excl::None, LeastAllocated).unwrap(), "1-2,4");
        // Five do not fit beside the exclusive core: the filter comes off.
        assert_eq!(
            take(&t, &held, 5, SpreadByPCPUs, Excl::PCPULevel, LeastAllocated).unwrap(),
            "1-4,6"
        );
        // Beyond a socket the fallback spreads: one CPU of every core
        // (0,2,4,6) before the siblings (1,3).
        let t1 = CpuTopology::synthetic(2, 1, 2, 2);
        assert_eq!(
            take(&t1, &NodeAllocation::new(), 6, SpreadByPCPUs, Excl::PCPULevel, LeastAllocated)
                .unwrap(),
            "0-4,6"
        );
    }

    #[test]
    fn numa_node_level_exclusion_on_then_off() {
        // 2 NUMA nodes × 2 cores × 2 threads: node 0 = 0-3, node 1 = 4-7.
        let t = CpuTopology::synthetic(1, 2, 2, 2);
        let held = holding(&[("0-1", Excl::NUMANodeLevel)]);
        assert_eq!(
            take(&t, &held, 2, FullPCPUs, Excl::NUMANodeLevel, MostAllocated).unwrap(),
            "4-5"
        );
        assert_eq!(take(&t, &held, 2, FullPCPUs, Excl::None, MostAllocated).unwrap(), "2-3");
        // Node 1 taken by someone else: the filter comes off.
        let full = holding(&[("0-1", Excl::NUMANodeLevel), ("4-7", Excl::None)]);
        assert_eq!(
            take(&t, &full, 2, FullPCPUs, Excl::NUMANodeLevel, MostAllocated).unwrap(),
            "2-3"
        );
        assert_eq!(
            take(&t, &held, 2, SpreadByPCPUs, Excl::NUMANodeLevel, MostAllocated).unwrap(),
            "4,6"
        );
    }

    #[test]
    fn not_enough() {
        let t = CpuTopology::synthetic(1, 1, 2, 2);
        let held = holding(&[("0", Excl::None)]);
        assert_eq!(
            take(&t, &held, 4, FullPCPUs, Excl::None, LeastAllocated),
            Err(AllocateError::NotEnoughCpus)
        );
        assert_eq!(take(&t, &held, 0, FullPCPUs, Excl::None, LeastAllocated).unwrap(), "");
        assert_eq!(
            AllocateError::NotEnoughCpus.to_string(),
            "not enough cpus available to satisfy request"
        );
    }

    fn request(n: usize, policy: CpuBindPolicy, required: bool) -> CpuSetRequest {
        CpuSetRequest {
            num_cpus: n,
            bind_policy: policy,
            required,
            exclusive_policy: Excl::None,
            numa_strategy: LeastAllocated,
        }
    }

    #[test]
    fn allocate_cpuset_required_policies() {
        let t = CpuTopology::synthetic(1, 1, 4, 2);
        let none = CpuSet::new();
        let held = holding(&[("0", Excl::None)]);
        let alloc = |n, policy, required| {
            allocate_cpuset(&t, &held, &none, &none, &request(n, policy, required), &[])
                .map(|s| s.to_string())
        };
        // Core 0 is partly used: required FullPCPUs keeps cores 1-3 only.
        assert_eq!(alloc(6, FullPCPUs, true).unwrap(), "2-7");
        assert_eq!(alloc(8, FullPCPUs, true), Err(AllocateError::NotEnoughCpus));
        // Preferred FullPCPUs may use the partly used core's sibling.
        assert_eq!(alloc(7, FullPCPUs, false).unwrap(), "1-7");
        // Required SpreadByPCPUs: lowest free CPU per core, one per core.
        let held2 = holding(&[("2", Excl::None)]);
        let spread = |n| {
            allocate_cpuset(&t, &held2, &none, &none, &request(n, SpreadByPCPUs, true), &[])
                .map(|s| s.to_string())
        };
        assert_eq!(spread(4).unwrap(), "0,3-4,6");
        assert_eq!(spread(5), Err(AllocateError::NotEnoughCpus));
    }

    #[test]
    fn reserved_cpus_are_never_allocated() {
        let t = big();
        let reserved = set("0-3,17");
        let empty = NodeAllocation::new();
        for n in 1..=27 {
            for policy in [FullPCPUs, SpreadByPCPUs] {
                for strategy in [LeastAllocated, MostAllocated] {
                    let mut r = request(n, policy, false);
                    r.numa_strategy = strategy;
                    let got =
                        allocate_cpuset(&t, &empty, &reserved, &CpuSet::new(), &r, &[]).unwrap();
                    assert_eq!(got.len(), n);
                    assert!(!got.intersects(&reserved), "{n} {policy} {strategy}: {got}");
                }
            }
        }
        let r = request(28, FullPCPUs, false);
        assert_eq!(
            allocate_cpuset(&t, &empty, &reserved, &CpuSet::new(), &r, &[]),
            Err(AllocateError::NotEnoughCpus)
        );
        // Most allocated packs next to the reservation.
        let mut r = request(4, FullPCPUs, true);
        r.numa_strategy = MostAllocated;
        assert_eq!(
            allocate_cpuset(&t, &empty, &reserved, &CpuSet::new(), &r, &[]).unwrap().to_string(),
            "4-7"
        );
    }

    #[test]
    fn per_numa_split_and_preferred() {
        let t = big();
        let empty = NodeAllocation::new();
        let none = CpuSet::new();
        let numa = |node, cpu| NumaNodeResources {
            node,
            resources: ResourceVector::EMPTY.with(ResourceName::Cpu, cpu),
        };
        let got = allocate_cpuset(
            &t,
            &empty,
            &none,
            &none,
            &request(4, FullPCPUs, true),
            &[numa(1, 2000), numa(2, 2000)],
        );
        assert_eq!(got.unwrap().to_string(), "8-9,16-17");
        let short = allocate_cpuset(
            &t,
            &empty,
            &none,
            &none,
            &request(4, FullPCPUs, true),
            &[numa(1, 2000)],
        );
        assert_eq!(short, Err(AllocateError::NotEnoughCpus));
        // A reservation's CPUs (held by the reservation) are taken first.
        let held = holding(&[("20-23", Excl::None)]);
        let preferred = set("20-23");
        let got = allocate_cpuset(&t, &held, &none, &preferred, &request(6, FullPCPUs, false), &[]);
        assert_eq!(got.unwrap().to_string(), "0-1,20-23");
        let got = allocate_cpuset(&t, &held, &none, &preferred, &request(2, FullPCPUs, false), &[]);
        assert_eq!(got.unwrap().to_string(), "20-21");
    }

    proptest::proptest! {
        #[test]
        fn filter_count_matches_allocation(
            held in proptest::collection::btree_set(0u32..32, 0..32),
            cores in 0usize..17,
            spread in proptest::bool::ANY,
            most in proptest::bool::ANY,
            excl in 0usize..3,
        ) {
            let t = big();
            let mut alloc = NodeAllocation::new();
            alloc.add("x", held.into_iter().collect(), Excl::PCPULevel, Vec::new());
            let policy = if spread { SpreadByPCPUs } else { FullPCPUs };
            let r = CpuSetRequest {
                num_cpus: if spread { cores } else { cores * 2 },
                bind_policy: policy,
                required: true,
                exclusive_policy: [Excl::None, Excl::PCPULevel, Excl::NUMANodeLevel][excl],
                numa_strategy: if most { MostAllocated } else { LeastAllocated },
            };
            let reserved = set("31");
            let chosen = allocate_cpuset(&t, &alloc, &reserved, &CpuSet::new(), &r, &[]);
            proptest::prop_assert_eq!(chosen.is_ok(), can_allocate_required(&t, &alloc, &reserved, &r), "{:?}", chosen);
        }
    }

    #[test]
    fn required_verification() {
        let t = CpuTopology::synthetic(1, 1, 2, 2);
        assert!(satisfies_required(&t, FullPCPUs, &set("0-3")));
        assert!(!satisfies_required(&t, FullPCPUs, &set("0-2")));
        assert!(satisfies_required(&t, SpreadByPCPUs, &set("0,2")));
        assert!(!satisfies_required(&t, SpreadByPCPUs, &set("0-1")));
        assert_eq!(filter_required(&t, FullPCPUs, &set("1-3")).to_string(), "2-3");
        assert_eq!(filter_required(&t, SpreadByPCPUs, &set("1-3")).to_string(), "1-2");
    }
}
