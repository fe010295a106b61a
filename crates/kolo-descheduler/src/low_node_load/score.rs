//! Usage scores: how loaded a node is (sources are processed most loaded
//! first, step 9) and how well a pod's usage covers its node's excess over
//! the high thresholds (the candidate sort key of §9.3).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use kolo_core::resources::{ResourceName, ResourceVector};

use crate::pod_sort::PodSortKey;

/// A node's usage score, 0–1000: the weighted mean over `resources` of
/// `min(used, allocatable) × 1000 / allocatable` (0 where allocatable is
/// 0), integer arithmetic; resources without a weight weigh 0.
pub fn node_score(
    usage: &ResourceVector,
    alloc: &ResourceVector,
    resources: &[ResourceName],
    weights: &BTreeMap<ResourceName, i64>,
) -> i64 {
    let (mut sum, mut weight_sum) = (0i64, 0i64);
    for &r in resources {
        let w = weights.get(&r).copied().unwrap_or(0);
        let a = alloc.value(r);
        let s =
            if a <= 0 { 0 } else { (usage.value(r).clamp(0, a) as i128 * 1000 / a as i128) as i64 };
        sum = sum.saturating_add(s.saturating_mul(w));
        weight_sum = weight_sum.saturating_add(w);
    }
    if weight_sum == 0 { 0 } else { sum / weight_sum }
}

/// A pod's usage score against its node's excess, scaled by 1000: for
/// every resource over its high threshold (`excess_r = used_r − high_r >
/// 0`), `ratio = pod_r / excess_r`, scored `ratio` below 1 and `1/ratio +
/// 1` from 1 on (a pod that alone covers the excess ranks highest, the
/// closest fit first); the weighted mean of those. `None` for a pod
/// without a metric (it sorts after every pod with one).
pub fn pod_score(
    pod: Option<&ResourceVector>,
    excess: &[(ResourceName, i64)],
    weights: &BTreeMap<ResourceName, i64>,
) -> Option<i64> {
    let pod = pod?;
    let (mut sum, mut weight_sum) = (0f64, 0f64);
    for &(r, e) in excess {
        let w = weights.get(&r).copied().unwrap_or(0) as f64;
        let ratio = pod.value(r).max(0) as f64 / e as f64;
        let s = if ratio < 1.0 { ratio } else { 1.0 / ratio + 1.0 };
        sum += s * w;
        weight_sum += w;
    }
    Some(if weight_sum == 0.0 { 0 } else { (sum / weight_sum * 1000.0) as i64 })
}

/// The resources of `used` over `high`, with the excess.
pub fn excess(
    used: &ResourceVector,
    high: &ResourceVector,
    resources: &[ResourceName],
) -> Vec<(ResourceName, i64)> {
    resources
        .iter()
        .filter(|&&r| used.value(r) > high.value(r))
        .map(|&r| (r, used.value(r).saturating_sub(high.value(r))))
        .collect()
}

/// The candidate order (ascending = evicted first): the shared keys, then
/// the usage score descending (pods without one last), then newer first.
pub fn cmp_candidates(a: (&PodSortKey, Option<i64>), b: (&PodSortKey, Option<i64>)) -> Ordering {
    a.0.cmp_head(b.0).then_with(|| b.1.cmp(&a.1)).then_with(|| a.0.cmp_age(b.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceName::{Cpu, Memory, Pods};

    const GI: i64 = 1 << 30;

    fn weights(pairs: &[(ResourceName, i64)]) -> BTreeMap<ResourceName, i64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn node_score_is_a_weighted_mean_of_capped_usage() {
        let alloc = ResourceVector::cpu_memory(4000, 16 * GI).with(Pods, 110);
        // cpu 3000/4000 = 750, memory 20Gi capped at 16Gi = 1000, pods unweighted.
        let used = ResourceVector::cpu_memory(3000, 20 * GI).with(Pods, 55);
        let w = weights(&[(Cpu, 1), (Memory, 3)]);
        assert_eq!(node_score(&used, &alloc, &[Cpu, Memory, Pods], &w), (750 + 3000) / 4);
        assert_eq!(node_score(&used, &ResourceVector::EMPTY, &[Cpu, Memory], &w), 0);
    }

    #[test]
    fn pod_score_prefers_the_pod_that_just_covers_the_excess() {
        let ex = [(Cpu, 1000)];
        let w = weights(&[(Cpu, 1), (Memory, 1)]);
        let score = |cpu| pod_score(Some(&ResourceVector::cpu_memory(cpu, GI)), &ex, &w);
        assert_eq!(score(500), Some(500), "half the excess");
        assert_eq!(score(1000), Some(2000), "exactly: 1/1 + 1");
        assert_eq!(score(4000), Some(1250), "4x: 1/4 + 1");
        assert_eq!(score(0), Some(0));
        assert_eq!(pod_score(None, &ex, &w), None);
        // Two resources over: mean of 0.5 (cpu) and 1/2 + 1 (memory, 2x).
        let ex2 = [(Cpu, 1000), (Memory, GI)];
        let p = ResourceVector::cpu_memory(500, 2 * GI);
        assert_eq!(pod_score(Some(&p), &ex2, &w), Some(1000));
    }

    #[test]
    fn excess_lists_only_resources_over_high() {
        let used = ResourceVector::cpu_memory(3000, 2 * GI);
        let high = ResourceVector::cpu_memory(2000, 4 * GI);
        assert_eq!(excess(&used, &high, &[Cpu, Memory]), [(Cpu, 1000)]);
    }
}
