//! BE CPU eviction by satisfaction (Koordinator spec §5.3, BECPUEvict):
//! when BE pods get much less CPU than they requested (their cgroup's real
//! limit is low because LS pods need the CPUs) and use what they get,
//! evict BE pods until the rest is satisfied again.
//!
//! Inputs, all milli-cores, from the `last` values in [`NodeState`]; with
//! `cpuEvictTimeWindowSeconds` set, BE usage must also be high enough on
//! average over that window ([`NodeState::be_usage_window`], samples
//! covering at least a third of it), so one busy second does not evict.
//! (The reference averages R and L over the window too and takes the
//! smaller release; kolo takes R and L as they are now — the release only
//! depends on them, and a quota suppression just cut is what BE has now.)
//!
//! * U = Σ BE pod usage; R = Σ BE pod `batch-cpu` requests;
//! * L (real limit) = |BE cpuset| × 1000 (the BE dir's cpuset, else all BE
//!   CPUs), capped by the BE dir's CFS quota × 1000 / 100000 when limited;
//!   with `cpuEvictPolicy: evictByAllocatable`, L = node allocatable
//!   `batch-cpu` (0 → 1, absent → −1);
//! * usage high enough: L ≤ 0 → no; L < 1000 → yes; else U ≥ L ×
//!   `cpuEvictBEUsageThresholdPercent` (default 90) / 100;
//! * satisfaction s = L / R; release = 0 if R ≤ 0 or s > lower%; else
//!   R × upper% − L (when positive), in `batch-cpu` request milli.
//!
//! The bounds `cpuEvictBESatisfactionLowerPercent` ∈ (0, 60] and
//! `cpuEvictBESatisfactionUpperPercent` ∈ (0, 100) with upper ≥ lower have
//! no defaults: unset or invalid, the strategy does nothing. Cool-down 20 s
//! after an eviction and after the agent's start; at most
//! [`MAX_EVICTIONS_PER_ROUND`](super::eviction_order::MAX_EVICTIONS_PER_ROUND)
//! pods per round.

use std::cmp::Ordering;
use std::time::Duration;

use kolo_api::crd::NodeSLOSpec;
use kolo_core::resources::ResourceName;

use super::eviction_order::{candidates, cooled_down, enabled_thresholds, pick};
use super::{Figures, NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::CFS_BASE_PERIOD_US;

/// The strategy's name.
pub const NAME: &str = "cpuEvict";
/// Names the eviction-policy annotation may use for this strategy (kolo's
/// and the Koordinator feature's).
pub const POLICY_NAMES: &[&str] = &[NAME, "BECPUEvict"];
/// Time after an eviction (and after the start) before the next round.
pub const COOL_DOWN: Duration = Duration::from_secs(20);
/// Default `cpuEvictBEUsageThresholdPercent`.
pub const DEFAULT_USAGE_THRESHOLD_PERCENT: i64 = 90;
/// `cpuEvictPolicy` value that takes L from node allocatable `batch-cpu`.
pub const POLICY_BY_ALLOCATABLE: &str = "evictByAllocatable";

/// BE CPU eviction by satisfaction.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuEvict;

/// The BE side's CPU, milli-cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeCpu {
    /// Σ BE pod usage (U).
    pub usage: i64,
    /// Σ BE pod `batch-cpu` requests (R).
    pub request: i64,
    /// Real limit (L).
    pub limit: i64,
}

/// A pod's `batch-cpu` request, milli (what evicting it releases).
pub fn batch_request(pod: &PodState) -> i64 {
    pod.pod.requests.value(ResourceName::BatchCpu).max(0)
}

fn cpu_used(pod: &PodState) -> i64 {
    pod.usage.map_or(0, |u| u.cpu.max(0))
}

/// The BE cgroup's real limit by cpuset and quota, milli.
pub fn real_limit(node: &NodeState) -> i64 {
    let cpus = node.be.cpuset.as_ref().filter(|c| !c.is_empty()).unwrap_or(&node.be_cpus).len();
    let mut limit = i64::try_from(cpus).unwrap_or(i64::MAX).saturating_mul(1000);
    if let Some(quota) = node.be.cfs_quota_us.filter(|q| *q > 0) {
        limit = limit.min(quota.saturating_mul(1000) / CFS_BASE_PERIOD_US);
    }
    limit
}

/// U, R and L for `node` (L per `policy`).
pub fn be_cpu(node: &NodeState, policy: Option<&str>) -> BeCpu {
    let be = node.pods.iter().filter(|p| p.is_be() && !p.pod.terminated);
    let (usage, request) = be.fold((0i64, 0i64), |(u, r), p| {
        (u.saturating_add(cpu_used(p)), r.saturating_add(batch_request(p)))
    });
    let limit = if policy == Some(POLICY_BY_ALLOCATABLE) {
        match node.allocatable.get(ResourceName::BatchCpu) {
            Some(0) => 1,
            Some(v) if v > 0 => v,
            _ => -1,
        }
    } else {
        real_limit(node)
    };
    BeCpu { usage, request, limit }
}

/// Whether BE pods use enough of their limit for eviction to make sense.
pub fn usage_high_enough(be: BeCpu, threshold_pct: i64) -> bool {
    if be.limit <= 0 {
        return false;
    }
    if be.limit < 1000 {
        return true;
    }
    i128::from(be.usage) * 100 >= i128::from(be.limit) * i128::from(threshold_pct)
}

/// `batch-cpu` request milli to release: 0 when R ≤ 0, or satisfaction
/// L/R is above `lower`%, else R × `upper`% − L (≥ 0).
pub fn release(request: i64, limit: i64, lower: i64, upper: i64) -> i64 {
    if request <= 0 {
        return 0;
    }
    let (r, l) = (i128::from(request), i128::from(limit));
    if l * 100 > i128::from(lower) * r {
        return 0;
    }
    let gap = r * i128::from(upper) / 100 - l;
    i64::try_from(gap.max(0)).unwrap_or(i64::MAX)
}

/// The eviction order: lower `spec.priority` first (unset counts as 0, the
/// Kubernetes default), then higher usage / `batch-cpu` request, then name.
/// A total order, unlike the reference's pairwise rules.
pub fn order(a: &PodState, b: &PodState) -> Ordering {
    let ratio = |p: &PodState| {
        let (used, req) = (cpu_used(p), batch_request(p));
        if req > 0 {
            used as f64 / req as f64
        } else if used > 0 {
            f64::INFINITY
        } else {
            0.0
        }
    };
    a.priority
        .unwrap_or(0)
        .cmp(&b.priority.unwrap_or(0))
        .then_with(|| ratio(b).total_cmp(&ratio(a)))
        .then_with(|| a.pod.id.key().cmp(&b.pod.id.key()))
}

/// Whether BE usage is high over `cpuEvictTimeWindowSeconds` too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sustained {
    /// No window configured (or one of a second or less): the last values
    /// decide alone, as in the reference.
    NoWindow,
    /// Configured, but the samples cover less than a third of it (the
    /// agent just started, or the pods are new): no eviction yet.
    Short,
    /// Configured, but the state has no average for this window.
    No,
    /// The window's average, milli-cores, to be checked like the last value.
    Yes(i64),
}

/// Classifies the window (see [`Sustained`]).
pub fn sustained(node: &NodeState, window_seconds: Option<i64>) -> Sustained {
    let Some(window) = usage_window(window_seconds) else { return Sustained::NoWindow };
    match node.be_usage_window {
        Some(w) if w.window == window => {
            if w.covered * 3 < window {
                Sustained::Short
            } else {
                Sustained::Yes(w.avg_milli)
            }
        }
        _ => Sustained::No,
    }
}

/// The window over which BE CPU is averaged for `cpuEvictTimeWindowSeconds`
/// (`None`: no window; one second or less is the last value anyway).
pub fn usage_window(window_seconds: Option<i64>) -> Option<Duration> {
    window_seconds.filter(|s| *s > 1).map(|s| Duration::from_secs(s.unsigned_abs()))
}

/// The satisfaction bounds if they are valid: lower ∈ (0, 60], upper ∈
/// (0, 100), upper ≥ lower.
pub fn bounds(lower: Option<i64>, upper: Option<i64>) -> Option<(i64, i64)> {
    let (lower, upper) = (lower?, upper?);
    (lower > 0 && lower <= 60 && upper > 0 && upper < 100 && upper >= lower)
        .then_some((lower, upper))
}

impl Strategy for CpuEvict {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        let Some(t) = enabled_thresholds(slo) else { return };
        let Some((lower, upper)) = bounds(
            t.cpu_evict_be_satisfaction_lower_percent,
            t.cpu_evict_be_satisfaction_upper_percent,
        ) else {
            return;
        };
        let last = node.evictions.last_cpu.max(node.evictions.started);
        if !cooled_down(node.now, last, COOL_DOWN) {
            return;
        }
        let be = be_cpu(node, t.cpu_evict_policy.as_deref());
        let usage_threshold =
            t.cpu_evict_be_usage_threshold_percent.unwrap_or(DEFAULT_USAGE_THRESHOLD_PERCENT);
        if !usage_high_enough(be, usage_threshold) {
            return;
        }
        let windowed_usage = match sustained(node, t.cpu_evict_time_window_seconds) {
            Sustained::NoWindow => None,
            Sustained::Short | Sustained::No => return,
            Sustained::Yes(avg) => {
                if !usage_high_enough(BeCpu { usage: avg, ..be }, usage_threshold) {
                    return;
                }
                Some(avg)
            }
        };
        let windowed = windowed_usage
            .map_or(String::new(), |avg| format!(", {avg}m on average over the window"));
        let need = release(be.request, be.limit, lower, upper);
        if need <= 0 {
            return;
        }
        let mut pods = candidates(node, POLICY_NAMES);
        pods.sort_by(|a, b| order(a, b));
        let (picks, released) = pick(&pods, need, batch_request);
        let satisfaction =
            i64::try_from(i128::from(be.limit) * 100 / i128::from(be.request.max(1)))
                .unwrap_or(i64::MAX);
        for p in picks {
            plan.evict(
                NAME,
                p.pod,
                format!(
                    "BE CPU satisfaction {satisfaction}% (limit {}m / request {}m, usage {}m{windowed}) <= {lower}%: \
                     release {need}m batch-cpu request to reach {upper}%; pod requests {}m (round total {released}m)",
                    be.limit, be.request, be.usage, p.released
                ),
                Figures::CpuRelease {
                    satisfaction_percent: satisfaction,
                    be_request_milli: be.request,
                    be_limit_milli: be.limit,
                    be_usage_milli: windowed_usage.unwrap_or(be.usage),
                    lower_percent: lower,
                    upper_percent: upper,
                    release_target_milli: need,
                    pod_milli: p.released,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::node_slo::ResourceThresholdStrategy;
    use kolo_core::cpuset::CpuSet;

    use super::*;
    use crate::qos::testing_b::{be_pod_req, enabled, ls_pod, node, slo, ts};

    fn configured() -> ResourceThresholdStrategy {
        ResourceThresholdStrategy {
            cpu_evict_be_satisfaction_lower_percent: Some(40),
            cpu_evict_be_satisfaction_upper_percent: Some(60),
            ..enabled()
        }
    }

    fn run(node: &NodeState, t: ResourceThresholdStrategy) -> Vec<String> {
        let mut plan = Plan::default();
        CpuEvict.plan(node, &slo(t), &mut plan);
        plan.evictions.iter().map(|e| e.pod.clone()).collect()
    }

    /// 16 CPUs, BE cpuset 4 CPUs → L = 4000; BE pods request 10 × 1000 → R
    /// = 10000; s = 40% ≤ 40% → release 10000 × 60% − 4000 = 2000.
    fn squeezed() -> NodeState {
        let mut n = node(16_000, 64 << 30);
        n.be.cpuset = Some(CpuSet::from_range(0, 3));
        n.pods = (0..10).map(|i| be_pod_req(&format!("be{i}"), 1000, 400)).collect();
        n.pods.push(ls_pod("ls", 10_000, 0));
        n
    }

    #[test]
    fn release_table() {
        // (R, L, lower, upper) → release
        let table = [
            (10_000, 4_000, 40, 60, 2_000),
            (10_000, 4_001, 40, 60, 0), // 40.01% > 40%
            (10_000, 1_000, 40, 60, 5_000),
            (0, 1_000, 40, 60, 0),
            (-5, 1_000, 40, 60, 0),
            (10_000, -1, 40, 60, 6_001),
            (i64::MAX, 0, 40, 60, i64::MAX / 100 * 60 + (i64::MAX % 100) * 60 / 100),
        ];
        for (r, l, lo, up, want) in table {
            assert_eq!(release(r, l, lo, up), want, "{r} {l}");
        }
    }

    #[test]
    fn bounds_table() {
        let table = [
            (None, None, None),
            (Some(40), None, None),
            (Some(40), Some(60), Some((40, 60))),
            (Some(60), Some(60), Some((60, 60))),
            (Some(61), Some(80), None),
            (Some(0), Some(60), None),
            (Some(40), Some(100), None),
            (Some(50), Some(40), None),
        ];
        for (lo, up, want) in table {
            assert_eq!(bounds(lo, up), want, "{lo:?} {up:?}");
        }
    }

    #[test]
    fn usage_high_enough_table() {
        let table = [
            (0, 0, false),
            (0, -1, false),
            (0, 999, true),
            (3_599, 4_000, false),
            (3_600, 4_000, true),
        ];
        for (usage, limit, want) in table {
            assert_eq!(
                usage_high_enough(BeCpu { usage, request: 1, limit }, 90),
                want,
                "{usage} {limit}"
            );
        }
    }

    #[test]
    fn real_limit_from_cpuset_and_quota() {
        let mut n = node(16_000, 0);
        assert_eq!(real_limit(&n), 16_000); // unknown cpuset: all BE CPUs
        n.be.cpuset = Some(CpuSet::from_range(0, 3));
        assert_eq!(real_limit(&n), 4_000);
        n.be.cfs_quota_us = Some(250_000);
        assert_eq!(real_limit(&n), 2_500);
        n.be.cfs_quota_us = Some(-1);
        assert_eq!(real_limit(&n), 4_000);
        let alloc = |v: Option<i64>| {
            let mut n = node(16_000, 0);
            if let Some(v) = v {
                n.allocatable.set(ResourceName::BatchCpu, v);
            }
            be_cpu(&n, Some(POLICY_BY_ALLOCATABLE)).limit
        };
        assert_eq!(
            (alloc(None), alloc(Some(0)), alloc(Some(-3)), alloc(Some(7_000))),
            (-1, 1, -1, 7_000)
        );
    }

    #[test]
    fn a_configured_window_needs_sustained_usage() {
        use crate::qos::BeUsageWindow;
        let window = |avg_milli, covered| BeUsageWindow {
            window: Duration::from_secs(60),
            avg_milli,
            covered: Duration::from_secs(covered),
        };
        let t =
            ResourceThresholdStrategy { cpu_evict_time_window_seconds: Some(60), ..configured() };
        // Last usage 4000m of a 4000m limit (90 % threshold: 3600m).
        // (window average, seconds covered, evicts)
        for (avg, covered, evicts) in [
            (3_800, 60, true),  // sustained
            (3_600, 20, true),  // exactly the threshold, a third of the window
            (3_000, 60, false), // one busy second in a quiet minute
            (3_800, 19, false), // too little history yet
        ] {
            let mut n = squeezed();
            n.be_usage_window = Some(window(avg, covered));
            assert_eq!(!run(&n, t.clone()).is_empty(), evicts, "avg {avg}m over {covered} s");
        }
        // Window configured but no average for it: no eviction.
        let mut n = squeezed();
        assert!(run(&n, t.clone()).is_empty());
        n.be_usage_window =
            Some(BeUsageWindow { window: Duration::from_secs(30), ..window(3_800, 60) });
        assert!(run(&n, t).is_empty(), "an average over another window does not count");
        // A window of 1 s is the last value: no average needed.
        let one =
            ResourceThresholdStrategy { cpu_evict_time_window_seconds: Some(1), ..configured() };
        assert_eq!(run(&squeezed(), one).len(), 2);
        // The reason names the average.
        let mut n = squeezed();
        n.be_usage_window = Some(window(3_800, 60));
        let mut plan = Plan::default();
        let t =
            ResourceThresholdStrategy { cpu_evict_time_window_seconds: Some(60), ..configured() };
        CpuEvict.plan(&n, &slo(t), &mut plan);
        assert!(
            plan.evictions[0].reason.contains("usage 4000m, 3800m on average over the window"),
            "{}",
            plan.evictions[0].reason
        );
    }

    #[test]
    fn evicts_be_until_satisfied() {
        let n = squeezed();
        assert_eq!(be_cpu(&n, None), BeCpu { usage: 4_000, request: 10_000, limit: 4_000 });
        // release 2000 = two pods of 1000; all have the same ratio → by name.
        assert_eq!(run(&n, configured()), ["default/be0", "default/be1"]);
    }

    #[test]
    fn needs_config_enable_usage_and_cool_down() {
        let n = squeezed();
        assert!(run(&n, enabled()).is_empty(), "bounds have no defaults");
        assert!(run(&n, ResourceThresholdStrategy { enable: None, ..configured() }).is_empty());
        let mut idle = squeezed();
        for p in &mut idle.pods {
            if let Some(u) = p.usage.as_mut() {
                u.cpu = 100;
            }
        }
        assert!(run(&idle, configured()).is_empty(), "BE pods do not use their limit");
        // Cool-down: 20 s after the last eviction and after the start.
        let table = [
            (Some(ts(0)), None, 2),
            (Some(ts(981)), None, 0),
            (Some(ts(980)), None, 2),
            (Some(ts(0)), Some(ts(990)), 0),
            (Some(ts(0)), Some(ts(980)), 2),
            (None, None, 2),
        ];
        for (started, last, want) in table {
            let mut n = squeezed();
            n.evictions.started = started;
            n.evictions.last_cpu = last;
            assert_eq!(run(&n, configured()).len(), want, "{started:?} {last:?}");
        }
    }

    #[test]
    fn sort_order_and_cap() {
        let mut n = squeezed();
        n.be.cpuset = Some(CpuSet::from_range(0, 1)); // L = 2000, s = 20% → release 4000
        for p in &mut n.pods {
            if let Some(u) = p.usage.as_mut() {
                u.cpu = 200;
            }
        }
        n.pods[5].usage.as_mut().unwrap().cpu = 900; // highest ratio
        n.pods[7].priority = Some(-1); // lowest priority
        n.pods[2].priority = Some(10);
        assert_eq!(run(&n, configured()), ["default/be7", "default/be5", "default/be0"]);
    }
}
