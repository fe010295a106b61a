//! BE memory eviction (Koordinator spec §5.4, BEMemoryEvict): when node
//! memory usage reaches `memoryEvictThresholdPercent`, evict BE pods until
//! usage is back at the lower percent.
//!
//! * usage% = used × 100 / capacity (integer division); nothing below the
//!   threshold (default 70);
//! * lower = `memoryEvictLowerPercent` or threshold − 2 (must be below the
//!   threshold, else the strategy does nothing);
//! * release = capacity × (usage% − lower%) / 100 bytes;
//! * a pod releases exactly its last memory usage in bytes — the
//!   reference's priority-based MemoryEvict multiplies it by 1000 and so
//!   stops after one pod; kolo counts real bytes;
//! * cool-down 4 s after an eviction; at most
//!   [`MAX_EVICTIONS_PER_ROUND`](super::eviction_order::MAX_EVICTIONS_PER_ROUND)
//!   pods per round.

use std::cmp::Ordering;
use std::time::Duration;

use kolo_api::crd::NodeSLOSpec;

use super::eviction_order::{
    candidates, cooled_down, enabled_thresholds, percent, percent_of, pick,
};
use super::{Figures, NodeState, Plan, PodState, Strategy};

/// The strategy's name.
pub const NAME: &str = "memoryEvict";
/// Names the eviction-policy annotation may use for this strategy (kolo's
/// and the Koordinator feature's).
pub const POLICY_NAMES: &[&str] = &[NAME, "BEMemoryEvict"];
/// Time after an eviction before the next round.
pub const COOL_DOWN: Duration = Duration::from_secs(4);
/// Default `memoryEvictThresholdPercent`.
pub const DEFAULT_THRESHOLD_PERCENT: i64 = 70;

/// BE memory eviction.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryEvict;

/// What a pod releases when evicted: its last memory usage, bytes (0 when
/// unknown).
pub fn released_bytes(pod: &PodState) -> i64 {
    pod.usage.map_or(0, |u| u.memory.max(0))
}

/// The eviction order: lower `spec.priority` first (unset counts as 0, the
/// Kubernetes default), then larger memory usage, then name descending (the
/// reference's tie-break for pods without usage). A total order, unlike the
/// reference's pairwise rules.
pub fn order(a: &PodState, b: &PodState) -> Ordering {
    a.priority
        .unwrap_or(0)
        .cmp(&b.priority.unwrap_or(0))
        .then_with(|| released_bytes(b).cmp(&released_bytes(a)))
        .then_with(|| b.pod.id.name.cmp(&a.pod.id.name))
        .then_with(|| b.pod.id.namespace.cmp(&a.pod.id.namespace))
}

/// Bytes to release: `None` below the threshold or with an invalid
/// configuration, else capacity × (usage% − lower%) / 100, with usage%.
pub fn release_target(capacity: i64, used: i64, threshold: i64, lower: i64) -> Option<(i64, i64)> {
    if capacity <= 0 || lower >= threshold {
        return None;
    }
    let usage_pct = i128::from(used.max(0)) * 100 / i128::from(capacity);
    let usage_pct = i64::try_from(usage_pct).unwrap_or(i64::MAX);
    if usage_pct < threshold {
        return None;
    }
    Some((percent_of(capacity, usage_pct.saturating_sub(lower)), usage_pct))
}

impl Strategy for MemoryEvict {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let Some(t) = enabled_thresholds(slo) else { return };
        if !cooled_down(node.now, node.evictions.last_memory, COOL_DOWN) {
            return;
        }
        let threshold =
            percent(t.memory_evict_threshold_percent.unwrap_or(DEFAULT_THRESHOLD_PERCENT));
        let lower = percent(t.memory_evict_lower_percent.unwrap_or(threshold - 2));
        let capacity = node.capacity.memory;
        let used = node.usage.memory;
        let Some((need, usage_pct)) = release_target(capacity, used, threshold, lower) else {
            return;
        };
        let mut pods = candidates(node, POLICY_NAMES);
        pods.sort_by(|a, b| order(a, b));
        let (picks, released) = pick(&pods, need, released_bytes);
        for p in picks {
            plan.evict(
                NAME,
                p.pod,
                format!(
                    "node memory usage {usage_pct}% >= threshold {threshold}%: release {need} bytes \
                     to get to {lower}%; pod uses {} bytes (round total {released})",
                    p.released
                ),
                Figures::MemoryRelease {
                    usage_percent: usage_pct,
                    threshold_percent: threshold,
                    lower_percent: lower,
                    release_target_bytes: need,
                    pod_bytes: p.released,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::node_slo::ResourceThresholdStrategy;

    use super::*;
    use crate::qos::testing_b::{be_pod, enabled, ls_pod, node, slo, ts};

    const GIB: i64 = 1 << 30;

    fn run(node: &NodeState, t: ResourceThresholdStrategy) -> Vec<String> {
        let mut plan = Plan::default();
        MemoryEvict.plan(node, &slo(t), &mut plan);
        plan.evictions.iter().map(|e| e.pod.clone()).collect()
    }

    #[test]
    fn release_targets() {
        // (capacity, used, threshold, lower) → (bytes, usage%)
        let table = [
            // 64 GiB, 48 GiB used = 75% ≥ 70 → 64 GiB × (75 − 68) / 100.
            (64 * GIB, 48 * GIB, 70, 68, Some((4_810_363_371, 75))),
            // 69.99% → below.
            (100 * GIB, 70 * GIB - 1, 70, 68, None),
            // exactly 70% → 2%.
            (100 * GIB, 70 * GIB, 70, 68, Some((2 * GIB, 70))),
            // custom lower 50 at 80%.
            (100 * GIB, 80 * GIB, 70, 50, Some((30 * GIB, 80))),
            // lower ≥ threshold: invalid.
            (100 * GIB, 90 * GIB, 70, 70, None),
            // no capacity.
            (0, 10, 70, 68, None),
            // absurd usage does not overflow.
            (100, i64::MAX, 70, 68, Some((percent_of(100, i64::MAX - 68), i64::MAX))),
        ];
        for (cap, used, thr, lower, want) in table {
            assert_eq!(release_target(cap, used, thr, lower), want, "{cap} {used} {thr} {lower}");
        }
    }

    #[test]
    fn disabled_does_nothing() {
        let mut n = node(16_000, 64 * GIB);
        n.usage.memory = 60 * GIB;
        n.pods = vec![be_pod("be", 0, 10 * GIB)];
        assert!(run(&n, ResourceThresholdStrategy::default()).is_empty());
        assert!(
            run(&n, ResourceThresholdStrategy { enable: Some(false), ..Default::default() })
                .is_empty()
        );
        assert_eq!(run(&n, enabled()), ["default/be"]);
    }

    /// The reference counts pod memory × 1000 and so evicts one pod where
    /// three are needed; kolo counts bytes.
    #[test]
    fn releases_real_bytes_and_evicts_enough() {
        let mut n = node(16_000, 64 * GIB);
        n.usage.memory = 48 * GIB; // 75% → release 4_810_363_371 bytes
        n.pods = vec![
            ls_pod("ls", 0, 30 * GIB),
            be_pod("a", 0, 2 * GIB),
            be_pod("b", 0, 2 * GIB),
            be_pod("c", 0, 2 * GIB),
            be_pod("d", 0, 2 * GIB),
        ];
        let pods = candidates(&n, POLICY_NAMES);
        let (need, _) = release_target(64 * GIB, 48 * GIB, 70, 68).unwrap();
        let (picks, released) = pick(&pods, need, released_bytes);
        assert!(picks.iter().all(|p| p.released == 2 * GIB));
        assert_eq!(released, 6 * GIB); // 2 + 2 < 4.48 GiB, so a third pod
        // Names descending among equal usage and priority.
        assert_eq!(run(&n, enabled()), ["default/d", "default/c", "default/b"]);
    }

    #[test]
    fn sort_order() {
        let mut low = be_pod("low", 0, GIB);
        low.priority = Some(100);
        let mut high = be_pod("high", 0, 8 * GIB);
        high.priority = Some(5000);
        let big = be_pod("big", 0, 4 * GIB); // priority unset = 0
        let small = be_pod("small", 0, GIB);
        let mut none_a = be_pod("a", 0, 0);
        none_a.usage = None;
        let none_b = be_pod("b", 0, 0);
        let mut pods = [&high, &none_a, &small, &low, &none_b, &big];
        pods.sort_by(|a, b| order(a, b));
        let names: Vec<_> = pods.iter().map(|p| p.pod.id.name.as_str()).collect();
        assert_eq!(names, ["big", "small", "b", "a", "low", "high"]);
    }

    #[test]
    fn cool_down_and_cap() {
        let mut n = node(16_000, 100 * GIB);
        n.usage.memory = 95 * GIB; // release 27 GiB: more than 3 pods give
        n.pods = (0..6).map(|i| be_pod(&format!("p{i}"), 0, GIB)).collect();
        let table = [
            (None, 3),
            (Some(ts(990)), 3),
            (Some(ts(996)), 3),
            (Some(ts(997)), 0),
            (Some(ts(1000)), 0),
        ];
        for (last, want) in table {
            n.evictions.last_memory = last;
            assert_eq!(run(&n, enabled()).len(), want, "{last:?}");
        }
        // The CPU cool-down and the start do not hold memory eviction back.
        n.evictions.last_memory = None;
        n.evictions.started = Some(ts(999));
        n.evictions.last_cpu = Some(ts(999));
        assert_eq!(run(&n, enabled()).len(), 3);
    }

    #[test]
    fn respects_policy_annotation_and_thresholds() {
        let mut n = node(16_000, 100 * GIB);
        n.usage.memory = 75 * GIB;
        let mut refused = be_pod("refused", 0, 50 * GIB);
        refused.annotations.insert(
            kolo_api::names::annotation::EVICTION_POLICY.to_string(),
            r#"["cpuEvict"]"#.to_string(),
        );
        let mut allowed = be_pod("allowed", 0, GIB);
        allowed.annotations.insert(
            kolo_api::names::annotation::EVICTION_POLICY.to_string(),
            r#"["BEMemoryEvict"]"#.to_string(),
        );
        n.pods = vec![refused, allowed];
        assert_eq!(run(&n, enabled()), ["default/allowed"]);
        // Threshold 80: 75% is fine.
        let t = ResourceThresholdStrategy { memory_evict_threshold_percent: Some(80), ..enabled() };
        assert!(run(&n, t).is_empty());
        // Threshold 0: the default lower (−2) clamps to 0, not below the
        // threshold → invalid, nothing. Lower above threshold: nothing.
        let t = ResourceThresholdStrategy { memory_evict_threshold_percent: Some(0), ..enabled() };
        assert!(run(&n, t).is_empty());
        let t = ResourceThresholdStrategy {
            memory_evict_threshold_percent: Some(60),
            memory_evict_lower_percent: Some(90),
            ..enabled()
        };
        assert!(run(&n, t).is_empty());
    }
}
