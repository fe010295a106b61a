//! What the eviction strategies share (Koordinator spec §5.1): the enable
//! switch, cool-downs, the `koordinator.sh/eviction-policy` annotation,
//! candidate filtering and the walk that evicts pods until enough is
//! released.
//!
//! Only BE pods are ever candidates. A round evicts at most
//! [`MAX_EVICTIONS_PER_ROUND`] pods; the cool-down then gives the node time
//! to settle before the next round measures again.

use std::time::Duration;

use kolo_api::crd::NodeSLOSpec;
use kolo_api::crd::node_slo::ResourceThresholdStrategy;
use kolo_api::names::annotation::EVICTION_POLICY;
use kolo_core::clock::Timestamp;

use super::{NodeState, PodState};

/// Most pods one strategy evicts in one round (the reference has no cap;
/// kolo caps so a bad metric sample cannot empty the node at once).
pub const MAX_EVICTIONS_PER_ROUND: usize = 3;

/// The node's `resourceUsedThresholdWithBE`, if it is switched on
/// (`enable: true`; unset means off).
pub fn enabled_thresholds(slo: &NodeSLOSpec) -> Option<&ResourceThresholdStrategy> {
    slo.resource_used_threshold_with_be.as_ref().filter(|t| t.enable == Some(true))
}

/// Whether `cool` has passed since `last` (always true without a `last`;
/// a `last` in the future counts as "just now").
pub fn cooled_down(now: Timestamp, last: Option<Timestamp>, cool: Duration) -> bool {
    let Some(last) = last else { return true };
    let elapsed_ms = now.as_millisecond().saturating_sub(last.as_millisecond());
    let cool_ms = i64::try_from(cool.as_millis()).unwrap_or(i64::MAX);
    elapsed_ms >= cool_ms
}

/// Whether the pod's `koordinator.sh/eviction-policy` annotation lets a
/// strategy known by any of `names` evict it: absent → yes; a JSON array of
/// strings → yes iff it holds one of `names`; anything else → no.
pub fn eviction_allowed(pod: &PodState, names: &[&str]) -> bool {
    let Some(raw) = pod.annotations.get(EVICTION_POLICY) else { return true };
    match serde_json::from_str::<Vec<String>>(raw) {
        Ok(allowed) => allowed.iter().any(|a| names.contains(&a.as_str())),
        Err(_) => false,
    }
}

/// The pods a strategy known by `names` may evict: BE, not terminated, and
/// allowed by their eviction-policy annotation. Pods already being deleted
/// are included (they count as released, see [`pick`]).
pub fn candidates<'a>(node: &'a NodeState, names: &[&str]) -> Vec<&'a PodState> {
    node.pods
        .iter()
        .filter(|p| p.is_be() && !p.pod.terminated && eviction_allowed(p, names))
        .collect()
}

/// One pod [`pick`] chose and what evicting it releases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pick<'a> {
    /// The pod.
    pub pod: &'a PodState,
    /// What it releases (the strategy's unit).
    pub released: i64,
}

/// Walks `sorted` and picks pods to evict until `need` is released or
/// [`MAX_EVICTIONS_PER_ROUND`] pods are picked. Pods already being deleted
/// count as released without an eviction (like the reference's "already
/// evicted" pods); pods whose release is ≤ 0 are skipped (evicting them
/// would not help). Returns the picks and the total released (including
/// deleting pods).
pub fn pick<'a>(
    sorted: &[&'a PodState],
    need: i64,
    release: impl Fn(&PodState) -> i64,
) -> (Vec<Pick<'a>>, i64) {
    let mut picks = Vec::new();
    let mut released: i64 = 0;
    for &pod in sorted {
        if released >= need || picks.len() >= MAX_EVICTIONS_PER_ROUND {
            break;
        }
        let amount = release(pod);
        if amount <= 0 {
            continue;
        }
        released = released.saturating_add(amount);
        if !pod.pod.deleting {
            picks.push(Pick { pod, released: amount });
        }
    }
    (picks, released)
}

/// Clamps a percentage to 0..=100.
pub fn percent(value: i64) -> i64 {
    value.clamp(0, 100)
}

/// `amount × pct / 100` without overflow (saturating to `i64`).
pub fn percent_of(amount: i64, pct: i64) -> i64 {
    let v = i128::from(amount) * i128::from(pct) / 100;
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::testing_b::{be_pod, ls_pod, node, ts};

    #[test]
    fn enable_switch() {
        let mut slo = NodeSLOSpec::default();
        assert!(enabled_thresholds(&slo).is_none());
        slo.resource_used_threshold_with_be = Some(ResourceThresholdStrategy::default());
        assert!(enabled_thresholds(&slo).is_none());
        slo.resource_used_threshold_with_be =
            Some(ResourceThresholdStrategy { enable: Some(false), ..Default::default() });
        assert!(enabled_thresholds(&slo).is_none());
        slo.resource_used_threshold_with_be =
            Some(ResourceThresholdStrategy { enable: Some(true), ..Default::default() });
        assert!(enabled_thresholds(&slo).is_some());
    }

    #[test]
    fn cool_downs() {
        let cool = Duration::from_secs(20);
        let table = [
            (None, true),
            (Some(ts(100)), true),   // 20 s passed
            (Some(ts(101)), false),  // 19 s
            (Some(ts(120)), false),  // just now
            (Some(ts(1000)), false), // future
        ];
        for (last, want) in table {
            assert_eq!(cooled_down(ts(120), last, cool), want, "{last:?}");
        }
    }

    #[test]
    fn eviction_policy_annotation() {
        let names = ["memoryEvict", "BEMemoryEvict"];
        let table = [
            (None, true),
            (Some(r#"["BEMemoryEvict"]"#), true),
            (Some(r#"["memoryEvict","cpuEvict"]"#), true),
            (Some(r#"["cpuEvict"]"#), false),
            (Some("[]"), false),
            (Some("not json"), false),
            (Some(r#"{"a":1}"#), false),
        ];
        for (annotation, want) in table {
            let mut pod = be_pod("p", 0, 0);
            if let Some(a) = annotation {
                pod.annotations.insert(EVICTION_POLICY.to_string(), a.to_string());
            }
            assert_eq!(eviction_allowed(&pod, &names), want, "{annotation:?}");
        }
    }

    #[test]
    fn candidates_are_be_only() {
        let mut n = node(16_000, 64 << 30);
        let mut terminated = be_pod("done", 0, 0);
        terminated.pod.terminated = true;
        let mut refused = be_pod("refused", 0, 0);
        refused.annotations.insert(EVICTION_POLICY.to_string(), "[]".to_string());
        n.pods = vec![ls_pod("ls", 0, 0), be_pod("be", 0, 0), terminated, refused];
        for qos in [kolo_api::QoSClass::LSR, kolo_api::QoSClass::LSE, kolo_api::QoSClass::System] {
            let mut p = ls_pod("other", 0, 0);
            p.pod.qos = qos;
            n.pods.push(p);
        }
        let names: Vec<_> =
            candidates(&n, &["memoryEvict"]).iter().map(|p| p.pod.id.name.clone()).collect();
        assert_eq!(names, ["be"]);
    }

    #[test]
    fn pick_stops_at_need_and_cap() {
        let pods: Vec<PodState> = (0..5).map(|i| be_pod(&format!("p{i}"), 0, 10)).collect();
        let sorted: Vec<&PodState> = pods.iter().collect();
        let mem = |p: &PodState| p.usage.map_or(0, |u| u.memory);
        // need 25 → 3 pods (10 + 10 + 10).
        let (picks, released) = pick(&sorted, 25, mem);
        assert_eq!((picks.len(), released), (3, 30));
        // need 15 → 2 pods.
        assert_eq!(pick(&sorted, 15, mem).0.len(), 2);
        // need 0 → none.
        assert_eq!(pick(&sorted, 0, mem).0.len(), 0);
        // need 1000 → capped at 3.
        assert_eq!(pick(&sorted, 1000, mem).0.len(), MAX_EVICTIONS_PER_ROUND);
    }

    #[test]
    fn pick_counts_deleting_and_skips_empty() {
        let mut deleting = be_pod("deleting", 0, 10);
        deleting.pod.deleting = true;
        let empty = be_pod("empty", 0, 0);
        let a = be_pod("a", 0, 10);
        let sorted = vec![&deleting, &empty, &a];
        let (picks, released) = pick(&sorted, 15, |p| p.usage.map_or(0, |u| u.memory));
        assert_eq!(picks.iter().map(|p| p.pod.pod.id.name.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(released, 20);
    }

    #[test]
    fn percent_math() {
        assert_eq!(percent(150), 100);
        assert_eq!(percent(-5), 0);
        assert_eq!(percent_of(16_000, 65), 10_400);
        assert_eq!(percent_of(i64::MAX, 100), i64::MAX);
        assert_eq!(percent_of(i64::MAX, 200), i64::MAX);
    }
}
