//! NUMA hints (spec §6.8): which sets of NUMA nodes can hold a pod, the
//! topology-manager admit of Restricted / SingleNUMANode, and how a request
//! is split across the chosen nodes (`tryBestToDistributeEvenly`).

use kolo_core::resources::{ResourceName, ResourceVector};

use super::allocation::NodeAllocation;
use super::annotations::{CpuBindPolicy, NumaNodeResources, NumaTopologyPolicy};
use super::args::ScoringStrategyType as ScoreKind;
use super::cpu_accumulator::filter_required;
use super::score::weighted_score;
use super::topology::NodeTopology;

/// Above this many NUMA nodes only single nodes and the whole machine are
/// hinted: every subset of 16 nodes is already 65,535 candidates.
pub const MAX_NODES_FOR_SUBSETS: usize = 16;

/// A set of NUMA nodes that can hold the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaHint {
    /// The NUMA node ids, ascending.
    pub nodes: Vec<u32>,
    /// Whether the topology manager prefers it (minimal width, or any
    /// fitting set under Restricted).
    pub preferred: bool,
    /// The NUMA scorer's score of placing the pod there.
    pub score: i64,
}

/// What is still free on each NUMA node: allocatable minus what pods took,
/// with cpu cut down (for a required bind policy) to the CPUs that policy
/// could actually use there.
pub fn numa_available(
    node: &NodeTopology,
    alloc: &NodeAllocation,
    required_policy: Option<CpuBindPolicy>,
) -> Vec<NumaNodeResources> {
    let available_cpus = node
        .usable_topology()
        .map(|t| (t, alloc.available_cpus(t, node.reserved_cpus(), &Default::default())));
    node.numa_allocatable()
        .iter()
        .map(|n| {
            let mut free = n.resources.sub_non_negative(&alloc.numa_allocated(n.node));
            if let (Some(policy), Some((t, cpus))) = (required_policy, &available_cpus) {
                let usable = filter_required(t, policy, &cpus.intersection(t.cpus_in_node(n.node)));
                let limit = usable.len() as i64 * 1000;
                if free.cpu() > limit {
                    free.set(ResourceName::Cpu, limit);
                }
            }
            NumaNodeResources { node: n.node, resources: free }
        })
        .collect()
}

/// Every set of NUMA nodes whose free resources together cover `request`
/// (only the resources the NUMA nodes track are compared), scored.
pub fn generate_hints(
    available: &[NumaNodeResources],
    allocatable: &[NumaNodeResources],
    request: &ResourceVector,
    policy: NumaTopologyPolicy,
    scorer: &NumaScorer<'_>,
) -> Vec<NumaHint> {
    let n = available.len();
    // Beyond 64 NUMA nodes (only a hostile annotation has that many) the
    // extra nodes are never hinted.
    let masks: Vec<u64> = if n <= MAX_NODES_FOR_SUBSETS {
        (1..(1u64 << n)).collect()
    } else {
        let n = n.min(64);
        (0..n).map(|i| 1u64 << i).chain(std::iter::once(u64::MAX >> (64 - n))).collect()
    };
    let tracked =
        available.iter().fold(ResourceVector::EMPTY, |acc, a| acc.saturating_add(&a.resources));
    let mut hints = Vec::new();
    for mask in masks {
        let picked = |list: &[NumaNodeResources]| {
            list.iter()
                .enumerate()
                .filter(|(i, _)| bit(mask, *i))
                .fold(ResourceVector::EMPTY, |acc, (_, a)| acc.saturating_add(&a.resources))
        };
        let free = picked(available);
        let fits = request
            .iter()
            .all(|(name, amount)| !tracked.contains(name) || amount <= free.value(name));
        if !fits {
            continue;
        }
        let used = picked(allocatable).saturating_sub(&free).saturating_add(request);
        hints.push(NumaHint {
            nodes: available
                .iter()
                .enumerate()
                .filter(|(i, _)| bit(mask, *i))
                .map(|(_, a)| a.node)
                .collect(),
            preferred: false,
            score: scorer.score(&used, &picked(allocatable)),
        });
    }
    let narrowest = hints.iter().map(|h| h.nodes.len()).min().unwrap_or(0);
    for h in &mut hints {
        h.preferred = h.nodes.len() == narrowest || policy == NumaTopologyPolicy::Restricted;
    }
    hints
}

/// The hint the pod is placed by: preferred first, then the narrowest, then
/// the best score, then the lowest node ids.
pub fn best_hint(hints: &[NumaHint]) -> Option<&NumaHint> {
    hints.iter().min_by(|a, b| {
        b.preferred
            .cmp(&a.preferred)
            .then(a.nodes.len().cmp(&b.nodes.len()))
            .then(b.score.cmp(&a.score))
            .then(a.nodes.cmp(&b.nodes))
    })
}

/// The NUMA topology policy rejects the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no NUMA hint satisfies the topology policy")]
pub struct NotAdmitted;

/// The topology manager's admit: the hint a pod under `policy` may be
/// placed by, or `None` when the policy rejects the node. BestEffort and
/// None admit anything (the hint, if any, is only a preference).
pub fn admit(
    policy: NumaTopologyPolicy,
    hints: &[NumaHint],
) -> Result<Option<&NumaHint>, NotAdmitted> {
    let best = best_hint(hints);
    match policy {
        NumaTopologyPolicy::None | NumaTopologyPolicy::BestEffort => Ok(best),
        NumaTopologyPolicy::Restricted => best.filter(|h| h.preferred).map(Some).ok_or(NotAdmitted),
        NumaTopologyPolicy::SingleNUMANode => hints
            .iter()
            .filter(|h| h.nodes.len() == 1)
            .min_by(|a, b| b.score.cmp(&a.score).then(a.nodes.cmp(&b.nodes)))
            .map(Some)
            .ok_or(NotAdmitted),
    }
}

/// How the cpu of a cpuset pod is split (whole CPUs, or whole cores for
/// required FullPCPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuSplit {
    /// Milli-cores, no rounding (pods without a cpuset).
    Milli,
    /// Whole CPUs.
    WholeCpus,
    /// Whole cores of this many CPUs.
    WholeCores(usize),
}

/// Splits `request` over `nodes` (spec §6.8 `tryBestToDistributeEvenly`):
/// per resource, visit the nodes from the least available up; each takes
/// `min(available, remaining / nodes left)`. Fails naming every resource
/// that could not be placed ("Insufficient NUMA cpu").
///
/// Koordinator's sort compares the wrong map entries (positions instead of
/// node ids), so its visiting order is effectively arbitrary; kolo sorts by
/// the node's actual availability, ties by node id.
pub fn distribute_evenly(
    request: &ResourceVector,
    available: &[NumaNodeResources],
    nodes: &[u32],
    cpu_split: CpuSplit,
) -> Result<Vec<NumaNodeResources>, Vec<String>> {
    let chosen: Vec<&NumaNodeResources> =
        available.iter().filter(|a| nodes.contains(&a.node)).collect();
    let tracked =
        chosen.iter().fold(ResourceVector::EMPTY, |acc, a| acc.saturating_add(&a.resources));
    let mut out: Vec<NumaNodeResources> = chosen
        .iter()
        .map(|a| NumaNodeResources { node: a.node, resources: ResourceVector::EMPTY })
        .collect();
    let mut missing = Vec::new();
    for (name, amount) in request.iter() {
        if !tracked.contains(name) {
            continue;
        }
        let mut order: Vec<usize> = (0..chosen.len()).collect();
        order.sort_by_key(|&i| (chosen[i].resources.value(name), chosen[i].node));
        let mut remaining = amount;
        for (visited, &i) in order.iter().enumerate() {
            let left = (order.len() - visited) as i64;
            let share = match (name, cpu_split) {
                (ResourceName::Cpu, CpuSplit::WholeCpus) => ceil_cpus(remaining) / left * 1000,
                (ResourceName::Cpu, CpuSplit::WholeCores(per_core)) => {
                    let per_core = per_core.max(1) as i64;
                    ceil_cpus(remaining) / per_core / left * per_core * 1000
                }
                _ => remaining / left,
            };
            let taken = share.min(chosen[i].resources.value(name)).max(0);
            if taken > 0 {
                out[i].resources.set(name, taken);
                remaining -= taken;
            }
        }
        if remaining > 0 {
            missing.push(format!("Insufficient NUMA {}", name.as_str()));
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    out.retain(|n| !n.resources.is_empty());
    Ok(out)
}

/// Whether `mask` selects position `i`.
fn bit(mask: u64, i: usize) -> bool {
    i < 64 && (mask >> i) & 1 == 1
}

/// Whole CPUs in `milli`, rounded up (Kubernetes' `Quantity::Value`).
fn ceil_cpus(milli: i64) -> i64 {
    milli.saturating_add(999).div_euclid(1000)
}

/// The NUMA scorer: the type of `numaScoringStrategy` with the weights of
/// `scoringStrategy` (§10.12).
#[derive(Debug, Clone)]
pub struct NumaScorer<'a> {
    /// LeastAllocated or MostAllocated.
    pub kind: ScoreKind,
    /// Resource weights.
    pub weights: &'a [(ResourceName, i64)],
}

impl NumaScorer<'_> {
    fn score(&self, used: &ResourceVector, capacity: &ResourceVector) -> i64 {
        weighted_score(self.kind, self.weights, used, capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;

    fn numa(node: u32, cpu: i64, mem: i64) -> NumaNodeResources {
        NumaNodeResources { node, resources: ResourceVector::cpu_memory(cpu, mem) }
    }

    const WEIGHTS: &[(ResourceName, i64)] = &[(ResourceName::Cpu, 1), (ResourceName::Memory, 1)];

    #[test]
    fn hints_and_admit() {
        let allocatable = [numa(0, 8000, 16 * GI), numa(1, 8000, 16 * GI)];
        let available = [numa(0, 2000, 16 * GI), numa(1, 8000, 16 * GI)];
        let scorer = NumaScorer { kind: ScoreKind::LeastAllocated, weights: WEIGHTS };
        let small = ResourceVector::cpu_memory(4000, GI);
        let hints = generate_hints(
            &available,
            &allocatable,
            &small,
            NumaTopologyPolicy::SingleNUMANode,
            &scorer,
        );
        assert_eq!(
            hints.iter().map(|h| (h.nodes.clone(), h.preferred)).collect::<Vec<_>>(),
            vec![(vec![1], true), (vec![0, 1], false)]
        );
        assert_eq!(
            admit(NumaTopologyPolicy::SingleNUMANode, &hints).unwrap().unwrap().nodes,
            vec![1]
        );

        let big = ResourceVector::cpu_memory(9000, GI);
        let hints = generate_hints(
            &available,
            &allocatable,
            &big,
            NumaTopologyPolicy::SingleNUMANode,
            &scorer,
        );
        assert_eq!(hints.len(), 1);
        assert!(admit(NumaTopologyPolicy::SingleNUMANode, &hints).is_err());
        assert_eq!(
            admit(
                NumaTopologyPolicy::Restricted,
                &generate_hints(
                    &available,
                    &allocatable,
                    &big,
                    NumaTopologyPolicy::Restricted,
                    &scorer
                )
            )
            .unwrap()
            .unwrap()
            .nodes,
            vec![0, 1]
        );
        let huge = ResourceVector::cpu_memory(11_000, GI);
        let none = generate_hints(
            &available,
            &allocatable,
            &huge,
            NumaTopologyPolicy::Restricted,
            &scorer,
        );
        assert!(none.is_empty() && admit(NumaTopologyPolicy::Restricted, &none).is_err());
        assert_eq!(admit(NumaTopologyPolicy::BestEffort, &none), Ok(None));
    }

    #[test]
    fn distribute_evenly_from_the_smallest() {
        let available = [numa(0, 2000, 16 * GI), numa(1, 8000, 16 * GI)];
        let req = ResourceVector::cpu_memory(6000, 8 * GI);
        let got = distribute_evenly(&req, &available, &[0, 1], CpuSplit::WholeCpus).unwrap();
        // cpu: node 0 (2 free) takes min(2, 6/2=3) = 2, node 1 the other 4.
        assert_eq!(got, vec![numa(0, 2000, 4 * GI), numa(1, 4000, 4 * GI)]);
        // Whole cores of 2: 6 CPUs = 3 cores; node 0 gets 3/2=1 core.
        let got = distribute_evenly(&req, &available, &[0, 1], CpuSplit::WholeCores(2)).unwrap();
        assert_eq!(got[0].resources.cpu(), 2000);
        let err = distribute_evenly(
            &ResourceVector::cpu_memory(11_000, GI),
            &available,
            &[0, 1],
            CpuSplit::Milli,
        )
        .unwrap_err();
        assert_eq!(err, vec!["Insufficient NUMA cpu".to_owned()]);
        let one = distribute_evenly(
            &ResourceVector::cpu_memory(1500, GI),
            &available,
            &[1],
            CpuSplit::Milli,
        )
        .unwrap();
        assert_eq!(one, vec![numa(1, 1500, GI)]);
    }
}
