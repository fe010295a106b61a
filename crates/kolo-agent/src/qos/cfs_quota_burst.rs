//! `cfsQuotaBurst`: raises the CFS quota of LS containers the kernel keeps
//! throttling, while the node's shared CPU pool has room, and takes it back
//! when the pool fills up (spec §5.5, the `cfsQuotaBurstOnly` / `auto` part
//! of CPU burst; the static `cpu.cfs_burst_us` part is [`super::cpu_burst`]).
//!
//! **Share pool** (the CPUs not held exclusively by LSR / LSE pods):
//! total = capacity − Σ CPU requests of LSR / LSE pods; usage = node usage −
//! Σ usage of LSR / LSE / BE pods; ratio = usage / total (1 when total ≤ 0).
//! With threshold t = `sharePoolThresholdPercent` (default 50) / 100:
//! ratio ≥ t → *overload*, ≥ 0.9 t → *cooling*, else *idle*; no node usage
//! → *unknown*.
//!
//! **Per container** of a pod that is not LSR, LSE or BE, with a CPU limit
//! and its CFS state known ([`NodeState::cfs`]):
//! base = max(limit milli × 100, 1000) µs (what the kubelet writes); ceil =
//! base × `cfsQuotaBurstPercent` / 100 when that is above 100 (default
//! 300), else base. The operation is *reset* when the pod's policy is
//! neither `cfsQuotaBurstOnly` nor `auto`; otherwise *scale up* when the
//! container was throttled in the last interval, else *remain*. The pool
//! state then adjusts it: overload turns scale-up and remain into *scale
//! down*; cooling or unknown turns scale-up into remain. Target: up =
//! current × 1.2, down = current × 0.8, reset = base, remain = current,
//! clamped to [base, ceil]; written only if it differs. The pod's own quota
//! (when limited) moves by the sum of its containers' changes; the executor
//! writes the pod first when growing and the containers first when
//! shrinking, so a child never exceeds its parent.
//!
//! Differences from the reference:
//! * the pool uses the last node and pod usage the agent collected, not a
//!   5 s average (the agent's round is 1 s; the other strategies use the
//!   same values);
//! * the token-bucket limiter of `cfsQuotaBurstPeriodSeconds` is not
//!   implemented; its default (−1) turns it off in the reference too, and
//!   a configured period is reported as ignored in the write reasons;
//! * a container whose current quota is unlimited (−1) is left alone: the
//!   reference would scale from −1 and clamp to base, i.e. *impose* a
//!   limit the kubelet did not set.

use kolo_api::QoSClass;
use kolo_api::crd::NodeSLOSpec;

use super::cpu_burst::pod_config;
use super::{Figures, NodeState, Plan, PodState, Strategy};
use crate::cgroup::resource::{CFS_BASE_PERIOD_US, CFS_MAX_QUOTA_US};
use crate::cgroup::{CgroupWrite, Resource};

/// The strategy's name.
pub const NAME: &str = "cfsQuotaBurst";
/// Default `cfsQuotaBurstPercent`.
pub const DEFAULT_CFS_QUOTA_BURST_PERCENT: i64 = 300;
/// Default `sharePoolThresholdPercent`.
pub const DEFAULT_SHARE_POOL_THRESHOLD_PERCENT: i64 = 50;
/// Smallest quota, µs (the kubelet's minimum).
pub const MIN_QUOTA_US: i64 = 1000;

/// The `cfsQuotaBurst` strategy (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct CfsQuotaBurst;

/// The share pool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolState {
    /// Below 90 % of the threshold: containers may scale up.
    Idle,
    /// Between 90 % and 100 % of the threshold: hold.
    Cooling,
    /// At or above the threshold: scale down.
    Overload,
    /// No node usage yet: hold.
    Unknown,
}

/// What a container's quota does this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// × 1.2.
    ScaleUp,
    /// × 0.8.
    ScaleDown,
    /// Back to the base quota.
    Reset,
    /// Unchanged.
    Remain,
}

/// The share pool's usage ratio (see the module docs); `None` without node
/// usage.
pub fn pool_ratio(node: &NodeState) -> Option<f64> {
    if node.usage.cpu <= 0 || node.capacity.cpu <= 0 {
        return None;
    }
    // Declared LSR / LSE only: an unlabelled Guaranteed pod runs in the pool.
    let exclusive = |p: &&PodState| matches!(p.pod.declared_qos(), QoSClass::LSR | QoSClass::LSE);
    let total = node.capacity.cpu
        - node.pods.iter().filter(exclusive).map(|p| p.pod.requests.cpu()).sum::<i64>();
    let outside = node
        .pods
        .iter()
        .filter(|p| exclusive(p) || p.is_be())
        .filter_map(|p| p.usage.map(|u| u.cpu))
        .sum::<i64>();
    let usage = node.usage.cpu - outside;
    Some(if total <= 0 { 1.0 } else { usage as f64 / total as f64 })
}

/// The share pool's state at `ratio` ([`pool_ratio`]) for a threshold.
pub fn pool_state(ratio: Option<f64>, threshold_percent: i64) -> PoolState {
    let Some(ratio) = ratio else { return PoolState::Unknown };
    let threshold = threshold_percent as f64 / 100.0;
    if ratio >= threshold {
        PoolState::Overload
    } else if ratio >= 0.9 * threshold {
        PoolState::Cooling
    } else {
        PoolState::Idle
    }
}

/// The operation after the pool's adjustment.
pub fn operation(enabled: bool, throttled: Option<f64>, pool: PoolState) -> Operation {
    let own = match (enabled, throttled) {
        (false, _) => Operation::Reset,
        (true, Some(ratio)) if ratio > 0.0 => Operation::ScaleUp,
        (true, _) => Operation::Remain,
    };
    match (own, pool) {
        (Operation::ScaleUp | Operation::Remain, PoolState::Overload) => Operation::ScaleDown,
        (Operation::ScaleUp, PoolState::Cooling | PoolState::Unknown) => Operation::Remain,
        (op, _) => op,
    }
}

/// The new quota of a container at `current` µs (see the module docs).
pub fn target_quota(current: i64, base: i64, ceil: i64, op: Operation) -> i64 {
    let target = match op {
        Operation::ScaleUp => (current as f64 * 1.2) as i64,
        Operation::ScaleDown => (current as f64 * 0.8) as i64,
        Operation::Reset => base,
        Operation::Remain => current,
    };
    target.clamp(base, ceil.max(base))
}

/// True when the pod's policy scales quotas.
pub fn quota_burst_enabled(policy: Option<&str>) -> bool {
    matches!(policy, Some("cfsQuotaBurstOnly") | Some("auto"))
}

/// The pods whose containers this strategy looks at (by their declared
/// class: an unlabelled Guaranteed pod is one, as LS).
fn candidate(pod: &PodState) -> bool {
    scales_quota(pod) && !pod.pod.terminated
}

/// Whether the strategy may scale the quotas of `pod`'s containers by its
/// class: not for a declared LSR / LSE pod, nor a BE pod (the agent reads
/// the CFS state of exactly these pods).
pub fn scales_quota(pod: &PodState) -> bool {
    !matches!(pod.pod.declared_qos(), QoSClass::LSR | QoSClass::LSE | QoSClass::BE)
}

/// Whether the agent should collect [`NodeState::cfs`]: some pod's policy
/// scales quotas, or a quota the strategy raised is still above its base
/// (so turning the policy off resets it).
pub fn needs_cfs_state(node: &NodeState, slo: &NodeSLOSpec) -> bool {
    node.pods.iter().filter(|p| candidate(p)).any(|pod| {
        quota_burst_enabled(pod_config(slo, pod).policy.as_deref())
            || pod.containers.iter().any(|c| {
                let base = base_quota(c.limits.cpu());
                let state = c.dir.as_ref().and_then(|d| node.cfs.get(d));
                state.is_some_and(|s| base > 0 && s.quota_us > base)
            })
    })
}

/// The kubelet's quota for a CPU limit (0 without one).
fn base_quota(limit_milli: i64) -> i64 {
    if limit_milli <= 0 {
        return 0;
    }
    (limit_milli.saturating_mul(CFS_BASE_PERIOD_US) / 1000).clamp(MIN_QUOTA_US, CFS_MAX_QUOTA_US)
}

impl Strategy for CfsQuotaBurst {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, node: &NodeState, slo: &NodeSLOSpec, plan: &mut Plan) {
        if node.cfs.is_empty() {
            return;
        }
        // The ratio is the node's; only the threshold may differ per pod
        // (annotation), so it is computed once.
        let ratio = pool_ratio(node);
        for pod in node.pods.iter().filter(|p| candidate(p)) {
            let cfg = pod_config(slo, pod);
            let policy = cfg.policy.as_deref();
            let enabled = quota_burst_enabled(policy);
            let percent = cfg.cfs_quota_burst_percent.unwrap_or(DEFAULT_CFS_QUOTA_BURST_PERCENT);
            let threshold =
                cfg.share_pool_threshold_percent.unwrap_or(DEFAULT_SHARE_POOL_THRESHOLD_PERCENT);
            let pool = pool_state(ratio, threshold);
            let key = pod.pod.id.key();
            let mut pod_delta = 0i64;
            for c in &pod.containers {
                let base = base_quota(c.limits.cpu());
                let Some(dir) = &c.dir else { continue };
                let Some(state) = node.cfs.get(dir) else { continue };
                if base <= 0 || state.quota_us <= 0 {
                    continue;
                }
                let ceil = if percent > 100 { base.saturating_mul(percent) / 100 } else { base };
                let op = operation(enabled, state.throttled_ratio, pool);
                let target = target_quota(state.quota_us, base, ceil, op);
                if target == state.quota_us {
                    continue;
                }
                pod_delta += target - state.quota_us;
                plan.write(
                    NAME,
                    CgroupWrite::int(dir, Resource::CpuCfsQuota, target),
                    format!(
                        "{:?} container {key}/{}: cpu.cfs_quota_us {} → {target} ({op:?}: throttled {}, share pool {pool:?} at {:.0} % of threshold {threshold} %; base {base}, ceil {ceil}; policy {})",
                        pod.pod.declared_qos(),
                        c.name,
                        state.quota_us,
                        state
                            .throttled_ratio
                            .map_or("unknown".to_string(), |r| format!("{:.0} %", r * 100.0)),
                        ratio.unwrap_or(0.0) * 100.0,
                        policy.unwrap_or("none"),
                    ),
                )
                .figures = Figures::Throttle {
                    throttled_ratio: state.throttled_ratio,
                    base_quota_us: base,
                };
            }
            let pod_quota = node.cfs.get(&pod.dir).map_or(-1, |s| s.quota_us);
            if pod_delta != 0 && pod_quota > 0 {
                let target = (pod_quota + pod_delta).max(MIN_QUOTA_US);
                plan.write(
                    NAME,
                    CgroupWrite::int(&pod.dir, Resource::CpuCfsQuota, target),
                    format!(
                        "{:?} pod {key}: cpu.cfs_quota_us {pod_quota} → {target} (its containers moved by {pod_delta:+})",
                        pod.pod.declared_qos()
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::CPUBurstStrategy;
    use kolo_core::resources::ResourceName::Cpu;

    use super::*;
    use crate::cgroup::Value;
    use crate::qos::CfsState;
    use crate::qos::testing_a::*;
    use kolo_core::CpuMem;

    fn slo(policy: Option<&str>) -> NodeSLOSpec {
        NodeSLOSpec {
            cpu_burst_strategy: Some(CPUBurstStrategy {
                policy: policy.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// An 8-core node using `usage` milli-cores, with an LS pod `web`
    /// (container `a`: limit 2 cores, quota `quota`, throttled `throttled`)
    /// and an LSR pod holding 2 cores.
    fn node_with(usage: i64, quota: i64, throttled: Option<f64>) -> NodeState {
        let mut n = node();
        n.usage = CpuMem::new(usage, 0);
        let web = pod(
            "web",
            QoSClass::LS,
            vec![container("a", res(&[(Cpu, 1000)]), res(&[(Cpu, 2000)]))],
        );
        let mut lsr = pod(
            "db",
            QoSClass::LSR,
            vec![container("c", res(&[(Cpu, 2000)]), res(&[(Cpu, 2000)]))],
        );
        lsr.usage = Some(CpuMem::new(1000, 0));
        n.cfs.insert(
            web.containers[0].dir.clone().unwrap(),
            CfsState { quota_us: quota, throttled_ratio: throttled },
        );
        n.cfs.insert(web.dir.clone(), CfsState { quota_us: quota, throttled_ratio: None });
        n.pods = vec![web, lsr];
        n
    }

    const A: &str = "kubepods/burstable/podweb/a";
    const POD: &str = "kubepods/burstable/podweb";

    #[test]
    fn pool_states() {
        // Pool total = 8000 − 2000 (LSR request) = 6000; usage = node − 1000 (LSR usage).
        // (node usage, state, ratio)
        for (usage, state, ratio) in [
            (2000, PoolState::Idle, 1000.0 / 6000.0),
            (3700, PoolState::Cooling, 2700.0 / 6000.0), // 45 % = 0.9 × 50 %
            (4000, PoolState::Overload, 0.5),
            (0, PoolState::Unknown, 0.0),
        ] {
            let n = node_with(usage, 200_000, None);
            let r = pool_ratio(&n);
            assert_eq!(pool_state(r, 50), state, "usage {usage}");
            assert!((r.unwrap_or(0.0) - ratio).abs() < 1e-9, "usage {usage}: {r:?}");
        }
    }

    #[test]
    fn operations_table() {
        use Operation::*;
        use PoolState::*;
        // (enabled, throttled, pool, op)
        for (enabled, throttled, pool, op) in [
            (false, Some(0.5), Idle, Reset),
            (false, None, Overload, Reset),
            (true, Some(0.5), Idle, ScaleUp),
            (true, Some(0.0), Idle, Remain),
            (true, None, Idle, Remain),
            (true, Some(0.5), Overload, ScaleDown),
            (true, Some(0.0), Overload, ScaleDown),
            (true, Some(0.5), Cooling, Remain),
            (true, Some(0.5), Unknown, Remain),
        ] {
            assert_eq!(operation(enabled, throttled, pool), op, "{enabled} {throttled:?} {pool:?}");
        }
    }

    #[test]
    fn targets_clamp_to_base_and_ceil() {
        use Operation::*;
        // base 200000, ceil 600000 (300 %).
        for (current, op, target) in [
            (200_000, ScaleUp, 240_000),
            (550_000, ScaleUp, 600_000),
            (240_000, ScaleDown, 200_000), // 192000 clamped to base
            (600_000, ScaleDown, 480_000),
            (480_000, Reset, 200_000),
            (480_000, Remain, 480_000),
            (900_000, Remain, 600_000), // above the ceil (config lowered): back to it
        ] {
            assert_eq!(target_quota(current, 200_000, 600_000, op), target, "{current} {op:?}");
        }
    }

    #[test]
    fn throttled_container_and_its_pod_scale_up_on_an_idle_pool() {
        let n = node_with(2000, 200_000, Some(0.3));
        let plan = run(&CfsQuotaBurst, &n, &slo(Some("auto")));
        assert_eq!(written(&plan, A, Resource::CpuCfsQuota), Some(Value::Int(240_000)));
        assert_eq!(written(&plan, POD, Resource::CpuCfsQuota), Some(Value::Int(240_000)));
        assert!(
            plan.writes[0].reason.contains("ScaleUp: throttled 30 %"),
            "{}",
            plan.writes[0].reason
        );
    }

    #[test]
    fn overload_scales_down_and_policy_off_resets() {
        let n = node_with(5000, 400_000, Some(0.3));
        let plan = run(&CfsQuotaBurst, &n, &slo(Some("cfsQuotaBurstOnly")));
        assert_eq!(written(&plan, A, Resource::CpuCfsQuota), Some(Value::Int(320_000)));
        assert_eq!(written(&plan, POD, Resource::CpuCfsQuota), Some(Value::Int(320_000)));
        // Policy off (none, or only the static burst): back to the base.
        for policy in [None, Some("none"), Some("cpuBurstOnly")] {
            let plan = run(&CfsQuotaBurst, &node_with(2000, 400_000, Some(0.3)), &slo(policy));
            assert_eq!(
                written(&plan, A, Resource::CpuCfsQuota),
                Some(Value::Int(200_000)),
                "{policy:?}"
            );
        }
    }

    #[test]
    fn nothing_to_do_without_state_or_at_base() {
        // At base and not throttled: nothing.
        let plan = run(&CfsQuotaBurst, &node_with(2000, 200_000, Some(0.0)), &slo(Some("auto")));
        assert!(plan.writes.is_empty());
        // Unlimited container: left alone.
        let plan = run(&CfsQuotaBurst, &node_with(2000, -1, Some(0.5)), &slo(Some("auto")));
        assert!(plan.writes.is_empty());
        // No CFS state collected: nothing.
        let mut n = node_with(2000, 200_000, Some(0.5));
        n.cfs.clear();
        assert!(run(&CfsQuotaBurst, &n, &slo(Some("auto"))).writes.is_empty());
    }

    #[test]
    fn never_lsr_lse_be() {
        let mut n = node_with(2000, 200_000, Some(0.5));
        for p in &mut n.pods {
            p.pod.qos = QoSClass::BE;
        }
        assert!(run(&CfsQuotaBurst, &n, &slo(Some("auto"))).writes.is_empty());
    }

    /// The declared class decides (docs/compatibility.md, "Two QoS
    /// resolutions"): a Guaranteed pod without label or annotation (class
    /// LSR by default) is an LS pod here: its request and usage stay in the
    /// share pool, and its throttled container's quota scales up.
    #[test]
    fn an_unlabelled_guaranteed_pod_is_in_the_share_pool_and_scales() {
        use kolo_api::qos::QoSSource::{KatalystAnnotation, KoordinatorLabel, KubernetesDefault};
        const DB: &str = "kubepods/poddb/c";
        // (where db's LSR came from, pool ratio, db's container quota)
        let table = [
            (KoordinatorLabel, (2000.0 - 1000.0) / 6000.0, None),
            (KatalystAnnotation, (2000.0 - 1000.0) / 6000.0, None),
            (KubernetesDefault, 2000.0 / 8000.0, Some(Value::Int(240_000))),
        ];
        for (source, ratio, db_quota) in table {
            let mut n = node_with(2000, 200_000, Some(0.3));
            n.pods[1].pod.qos_source = source;
            let state = |throttled| CfsState { quota_us: 200_000, throttled_ratio: throttled };
            n.cfs.insert(dir(DB), state(Some(0.3)));
            n.cfs.insert(n.pods[1].dir.clone(), state(None));
            assert_eq!(scales_quota(&n.pods[1]), db_quota.is_some(), "{source:?}");
            let r = pool_ratio(&n).expect("node usage");
            assert!((r - ratio).abs() < 1e-9, "{source:?}: {r}");
            let plan = run(&CfsQuotaBurst, &n, &slo(Some("auto")));
            assert_eq!(written(&plan, DB, Resource::CpuCfsQuota), db_quota, "{source:?}");
            assert_eq!(written(&plan, A, Resource::CpuCfsQuota), Some(Value::Int(240_000)));
        }
    }

    #[test]
    fn collection_is_needed_while_enabled_or_scaled() {
        let n = node_with(2000, 200_000, None);
        assert!(needs_cfs_state(&n, &slo(Some("auto"))));
        assert!(!needs_cfs_state(&n, &slo(None)), "off and at base");
        let scaled = node_with(2000, 240_000, None);
        assert!(needs_cfs_state(&scaled, &slo(None)), "off but still scaled: reset it");
    }
}
