//! The agent's QoS round as one object: [`QosLoop::round`] takes the node
//! as the strategies see it, the time and the kind of round, and returns a
//! [`RoundPlan`] — data, never acted on here.
//!
//! Everything a round decides beyond the strategies lives here too, so that
//! every driver (the real node's loop in `kolo-kube`, the simulator's node
//! model in `kolo-sim`) gets the same decisions from the same history:
//!
//! * a [`Probe::Fast`] round (the fast path between collection rounds)
//!   only tightens: its pod samples are up to a round old, so it may cut the
//!   BE quota or cpuset when node CPU jumps, but giving CPU back and
//!   evicting wait for a [`Probe::Slow`] round with fresh pod samples;
//! * evictions are rate-limited ([`RateLimit`], 3 a minute by default): the
//!   ones held back are in the plan, to be logged, not carried out;
//! * the cool-downs start when the driver reports that an eviction
//!   succeeded ([`QosLoop::eviction_done`]): a failed Eviction API call
//!   starts none;
//! * the collector settings the strategies need ([`CollectSettings`]):
//!   CFS state for `cfsQuotaBurst`, the BE usage window of a windowed
//!   `cpuEvict`, and the NodeMetric spec's report interval and aggregation
//!   windows.
//!
//! The inputs that change rarely, the NodeSLO spec and the NodeMetric spec,
//! are set by the driver when they change ([`QosLoop::set_node_slo`],
//! [`QosLoop::set_node_metric_spec`]).

use std::sync::Arc;
use std::time::Duration;

use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_core::clock::Timestamp;

use super::{
    EvictionHistory, NodeState, Plan, PlannedEviction, Strategy, cfs_quota_burst, cpu_evict,
    cpu_suppress, memory_evict, plan_all, tightens,
};
use crate::evict::RateLimit;
use crate::nodemetric::CollectPolicy;

/// The rise of non-BE CPU, as a share of the node's capacity, at which the
/// fast path re-plans at once ([`crate::fast_probe::SurgeRule::jump`]).
pub const FAST_PROBE_JUMP: f64 = 0.1;

/// Which kind of round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Probe {
    /// A collection round, with fresh pod samples.
    Slow,
    /// The fast path between rounds, after an LS surge: only tightens.
    Fast,
}

/// What the collectors must gather for the strategies, and how the
/// NodeMetric is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectSettings {
    /// Read the CFS state of LS containers with CPU limits
    /// ([`NodeState::cfs`], for `cfsQuotaBurst`).
    pub cfs_state: bool,
    /// Average the BE pods' CPU over this window
    /// ([`NodeState::be_usage_window`], `cpuEvictTimeWindowSeconds`).
    pub be_usage_window: Option<Duration>,
    /// How often the NodeMetric status is written: the NodeMetric spec's
    /// `reportIntervalSeconds` (at least 30 s), or the driver's value until
    /// a spec is seen.
    pub report_interval: Duration,
    /// Bumped whenever the NodeMetric spec changes: a driver whose
    /// collectors follow an older generation reloads
    /// [`QosLoop::collect_policy`] (aggregation window and durations).
    pub policy_generation: u64,
}

/// The thresholds of the fast path (see [`crate::fast_probe::SurgeRule`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurgeThresholds {
    /// The suppression threshold as a share of the node's CPU.
    pub hot: f64,
    /// The rise of non-BE CPU, as a share of the capacity, that re-plans.
    pub jump: f64,
}

/// What one round wants done.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundPlan {
    /// The kind of round.
    pub probe: Probe,
    /// The cgroup writes and the evictions to carry out now (the rate
    /// limit let them through; report each outcome with
    /// [`QosLoop::eviction_done`]).
    pub plan: Plan,
    /// Evictions the strategies wanted that the rate limit held back.
    pub held_back: Vec<PlannedEviction>,
    /// The collector settings in force after this round.
    pub collect: CollectSettings,
}

/// One node's QoS loop: the strategies, their inputs, and the bookkeeping
/// between rounds.
#[derive(Clone)]
pub struct QosLoop {
    strategies: Arc<[Box<dyn Strategy>]>,
    /// Whether `cfsQuotaBurst` is among them (only then is CFS state
    /// worth collecting, or working out whether it is).
    runs_cfs_quota_burst: bool,
    slo: NodeSLOSpec,
    metric_spec: Option<NodeMetricSpec>,
    policy: CollectPolicy,
    report_interval_until_spec: Duration,
    rate: RateLimit,
    history: EvictionHistory,
    collect: CollectSettings,
}

impl std::fmt::Debug for QosLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.strategies.iter().map(|s| s.name()).collect();
        f.debug_struct("QosLoop")
            .field("strategies", &names)
            .field("metric_spec", &self.metric_spec)
            .field("history", &self.history)
            .field("collect", &self.collect)
            .finish_non_exhaustive()
    }
}

impl QosLoop {
    /// A loop running `strategies` (shared: a simulator's nodes share one
    /// list) with the default NodeSLO, no NodeMetric spec yet (reports
    /// every `report_interval_until_spec`) and the default rate limit.
    pub fn new(strategies: Arc<[Box<dyn Strategy>]>, report_interval_until_spec: Duration) -> Self {
        let runs_cfs_quota_burst = strategies.iter().any(|s| s.name() == cfs_quota_burst::NAME);
        QosLoop {
            strategies,
            runs_cfs_quota_burst,
            slo: NodeSLOSpec::default(),
            metric_spec: None,
            policy: CollectPolicy::default(),
            report_interval_until_spec,
            rate: RateLimit::default(),
            history: EvictionHistory::default(),
            // CFS state is read until the first round says otherwise, so
            // quotas a previous agent raised are seen and reset.
            collect: CollectSettings {
                cfs_state: runs_cfs_quota_burst,
                be_usage_window: None,
                report_interval: report_interval_until_spec,
                policy_generation: 0,
            },
        }
    }

    /// Replaces the eviction rate limit.
    pub fn with_rate_limit(mut self, rate: RateLimit) -> Self {
        self.rate = rate;
        self
    }

    /// Starts the loop at `now`: CPU eviction waits its cool-down from
    /// here. (Without it, the first round starts it.)
    pub fn start(&mut self, now: Timestamp) {
        self.history.started.get_or_insert(now);
    }

    /// Replaces the eviction bookkeeping (`kolo agent plan` takes it from
    /// its state file).
    pub fn restore_history(&mut self, history: EvictionHistory) {
        self.history = history;
    }

    /// When the strategies last evicted, and when the loop started.
    pub fn history(&self) -> EvictionHistory {
        self.history
    }

    /// Sets the node's NodeSLO spec (`None`: deleted or not seen; every
    /// default).
    pub fn set_node_slo(&mut self, slo: Option<NodeSLOSpec>) {
        self.slo = slo.unwrap_or_default();
    }

    /// The NodeSLO spec in force.
    pub fn node_slo(&self) -> &NodeSLOSpec {
        &self.slo
    }

    /// Sets the node's NodeMetric spec, as the manager wrote it (`None`:
    /// none seen, or deleted: the defaults, reporting every
    /// `report_interval_until_spec`). A spec without a
    /// `metricCollectPolicy` counts as none: it is the empty object the
    /// agent creates itself when the manager has not (yet). A spec equal
    /// to the one in force changes nothing.
    pub fn set_node_metric_spec(&mut self, spec: Option<NodeMetricSpec>) {
        let spec = spec.filter(|s| s.metric_collect_policy.is_some());
        if spec == self.metric_spec {
            return;
        }
        self.policy = spec.as_ref().map(CollectPolicy::from_spec).unwrap_or_default();
        self.collect.report_interval = match &spec {
            Some(_) => self.policy.report_interval,
            None => self.report_interval_until_spec,
        };
        self.collect.policy_generation += 1;
        self.metric_spec = spec;
    }

    /// The NodeMetric spec in force (`None`: none seen).
    pub fn node_metric_spec(&self) -> Option<&NodeMetricSpec> {
        self.metric_spec.as_ref()
    }

    /// The collect policy of the NodeMetric spec in force (aggregation
    /// window and durations, memory policy).
    pub fn collect_policy(&self) -> &CollectPolicy {
        &self.policy
    }

    /// The collector settings in force.
    pub fn collect(&self) -> CollectSettings {
        self.collect
    }

    /// The fast path's thresholds: hot is the suppression threshold (65 %
    /// by default), whether suppression is on or not — below it there is
    /// no LS pressure to answer.
    pub fn surge_thresholds(&self) -> SurgeThresholds {
        SurgeThresholds {
            hot: cpu_suppress::threshold_percent(&self.slo) as f64 / 100.0,
            jump: FAST_PROBE_JUMP,
        }
    }

    /// One round on `node` at `now`. `now` and the loop's eviction
    /// bookkeeping replace `node.now` and `node.evictions` (what the
    /// strategies' cool-downs read).
    pub fn round(&mut self, node: &mut NodeState, now: Timestamp, probe: Probe) -> RoundPlan {
        self.start(now);
        node.now = now;
        node.evictions = self.history;
        let mut plan = plan_all(&self.strategies, node, &self.slo);
        let mut held_back = Vec::new();
        match probe {
            Probe::Fast => {
                plan.evictions.clear();
                plan.writes.retain(|w| w.write.dir == node.be_dir && tightens(&w.write, &node.be));
            }
            Probe::Slow => {
                self.collect.cfs_state =
                    self.runs_cfs_quota_burst && cfs_quota_burst::needs_cfs_state(node, &self.slo);
                let threshold = self.slo.resource_used_threshold_with_be.as_ref();
                self.collect.be_usage_window = cpu_evict::usage_window(
                    threshold.and_then(|t| t.cpu_evict_time_window_seconds),
                );
                if !plan.evictions.is_empty() {
                    let wanted = std::mem::take(&mut plan.evictions);
                    let (allowed, held): (Vec<_>, Vec<_>) =
                        wanted.into_iter().partition(|_| self.rate.allow(now));
                    plan.evictions = allowed;
                    held_back = held;
                }
            }
        }
        RoundPlan { probe, plan, held_back, collect: self.collect }
    }

    /// Records how an eviction of the last round ended: a success starts
    /// its strategy's cool-down (memory eviction's own, CPU eviction's for
    /// any other), a failure starts none.
    pub fn eviction_done(&mut self, eviction: &PlannedEviction, now: Timestamp, succeeded: bool) {
        if !succeeded {
            return;
        }
        if eviction.strategy == memory_evict::NAME {
            self.history.last_memory = Some(now);
        } else {
            self.history.last_cpu = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use kolo_api::crd::node_slo::ResourceThresholdStrategy;
    use kolo_api::crd::{AggregatePolicy, NodeMetricCollectPolicy};

    use super::*;
    use crate::cgroup::Resource;
    use crate::qos::testing_b::{be_pod, enabled, ls_pod, node, slo, ts};
    use crate::qos::{BeGroupState, default_strategies};

    const GIB: i64 = 1 << 30;

    fn qos_loop(slo: NodeSLOSpec) -> QosLoop {
        let mut q = QosLoop::new(default_strategies().into(), Duration::from_secs(60));
        q.set_node_slo(Some(slo));
        q
    }

    /// 100 GiB, 90 % used, memory eviction at 70 % (down to 68 %): 22 GiB
    /// to release, from five BE pods of 5 GiB each.
    fn memory_pressure() -> (NodeState, NodeSLOSpec) {
        let mut n = node(16_000, 100 * GIB);
        n.usage = kolo_core::CpuMem::new(4_000, 90 * GIB);
        n.pods = (0..5).map(|i| be_pod(&format!("be{i}"), 100, 5 * GIB)).collect();
        n.pods.push(ls_pod("ls", 1_000, 60 * GIB));
        (n, slo(enabled()))
    }

    fn evicted(plan: &RoundPlan) -> Vec<&str> {
        plan.plan.evictions.iter().map(|e| e.pod.as_str()).collect()
    }

    #[test]
    fn a_slow_round_evicts_within_the_rate_limit_and_holds_the_rest_back() {
        let (mut n, slo) = memory_pressure();
        let mut q = qos_loop(slo);
        let plan = q.round(&mut n, ts(1000), Probe::Slow);
        // Three a round (the strategies' own cap); equal pods go in reverse
        // name order (eviction_order's tie-break).
        assert_eq!(evicted(&plan), ["default/be4", "default/be3", "default/be2"]);
        assert!(plan.held_back.is_empty());
        for e in &plan.plan.evictions {
            q.eviction_done(e, ts(1000), true);
        }
        n.pods.drain(2..5);
        // Past memoryEvict's cool-down the strategies want the other two,
        // but three went within the minute: held back.
        let again = q.round(&mut n, ts(1010), Probe::Slow);
        assert!(again.plan.evictions.is_empty(), "{again:?}");
        let held: Vec<_> = again.held_back.iter().map(|e| e.pod.as_str()).collect();
        assert_eq!(held, ["default/be1", "default/be0"]);
        // A minute after the first ones the limit lets them through.
        let later = q.round(&mut n, ts(1060), Probe::Slow);
        assert_eq!(evicted(&later), ["default/be1", "default/be0"]);
    }

    #[test]
    fn only_a_successful_eviction_starts_the_cool_down() {
        let (mut n, slo) = memory_pressure();
        let mut q = qos_loop(slo).with_rate_limit(RateLimit::new(100, Duration::from_secs(60)));
        let first = q.round(&mut n, ts(1000), Probe::Slow);
        for e in &first.plan.evictions {
            q.eviction_done(e, ts(1000), false);
        }
        assert_eq!(q.history().last_memory, None);
        // Failed: the next round (1 s later, within memoryEvict's 4 s
        // cool-down) asks again.
        let second = q.round(&mut n, ts(1001), Probe::Slow);
        assert_eq!(evicted(&second), evicted(&first));
        q.eviction_done(&second.plan.evictions[0], ts(1001), true);
        assert_eq!(q.history().last_memory, Some(ts(1001)));
        assert_eq!(q.history().last_cpu, None, "memory eviction has its own cool-down");
        assert_eq!(n.evictions.last_memory, None, "the state of the round before");
        let third = q.round(&mut n, ts(1002), Probe::Slow);
        assert!(third.plan.evictions.is_empty(), "cooling down: {third:?}");
        assert_eq!(n.evictions.last_memory, Some(ts(1001)), "the loop's history went in");
        assert_eq!(q.round(&mut n, ts(1005), Probe::Slow).plan.evictions.len(), 3);
    }

    #[test]
    fn a_fast_round_only_tightens_and_never_evicts() {
        let (mut n, _) = memory_pressure();
        // 16 cores, LS 12 cores, suppression at 65 % by quota: BE gets
        // nothing; from an unlimited quota that tightens.
        n.usage.cpu = 13_000;
        n.pods[5].usage = Some(kolo_core::CpuMem::new(12_000, 60 * GIB));
        n.be = BeGroupState { cpuset: None, cfs_quota_us: Some(-1) };
        let t =
            ResourceThresholdStrategy { cpu_suppress_policy: Some("cfsQuota".into()), ..enabled() };
        let mut q = qos_loop(slo(t));
        let fast = q.round(&mut n.clone(), ts(1000), Probe::Fast);
        assert!(fast.plan.evictions.is_empty() && fast.held_back.is_empty());
        let slow = q.round(&mut n.clone(), ts(1000), Probe::Slow);
        assert!(!slow.plan.evictions.is_empty(), "the slow round evicts");
        assert!(slow.plan.writes.len() > fast.plan.writes.len(), "{slow:?}");
        assert!(!fast.plan.writes.is_empty());
        for w in &fast.plan.writes {
            assert_eq!(w.write.dir, n.be_dir, "{w:?}");
            assert!(tightens(&w.write, &n.be), "{w:?}");
        }
        // Once the quota is tight, a fast round giving CPU back is dropped.
        n.be.cfs_quota_us = Some(10_000);
        n.pods[5].usage = Some(kolo_core::CpuMem::new(1_000, 60 * GIB));
        n.usage.cpu = 2_000;
        let fast = q.round(&mut n.clone(), ts(1001), Probe::Fast);
        let be_dir = n.be_dir.clone();
        let quota = |p: &RoundPlan| {
            let to_quota =
                |w: &&super::super::PlannedWrite| w.write.resource == Resource::CpuCfsQuota;
            p.plan.writes.iter().filter(to_quota).any(|w| w.write.dir == be_dir)
        };
        assert!(!quota(&fast), "{fast:?}");
        assert!(quota(&q.round(&mut n, ts(1001), Probe::Slow)));
    }

    #[test]
    fn collect_settings_follow_the_slo_and_the_metric_spec() {
        let mut q = qos_loop(NodeSLOSpec::default());
        let (mut n, _) = memory_pressure();
        let before = q.collect();
        assert!(before.cfs_state, "on until a round says otherwise");
        assert_eq!(before.report_interval, Duration::from_secs(60), "the driver's until a spec");
        // A windowed cpuEvict asks for the BE usage window (a slow round).
        let windowed =
            ResourceThresholdStrategy { cpu_evict_time_window_seconds: Some(90), ..enabled() };
        q.set_node_slo(Some(slo(windowed)));
        assert_eq!(q.round(&mut n, ts(1000), Probe::Fast).collect.be_usage_window, None);
        let slow = q.round(&mut n, ts(1001), Probe::Slow).collect;
        assert_eq!(slow.be_usage_window, Some(Duration::from_secs(90)));
        assert!(!slow.cfs_state, "no LS pod with a CPU limit");
        // The manager's NodeMetric spec: report interval (at least 30 s) and
        // aggregation windows; an equal spec changes nothing.
        let spec = |report: i64, durations: &[&str]| NodeMetricSpec {
            metric_collect_policy: Some(NodeMetricCollectPolicy {
                report_interval_seconds: Some(report),
                node_aggregate_policy: Some(AggregatePolicy {
                    durations: Some(durations.iter().map(ToString::to_string).collect()),
                }),
                ..Default::default()
            }),
        };
        let cases = [
            (Some(spec(45, &["1m0s"])), 45, vec![60], 1),
            (Some(spec(45, &["1m0s"])), 45, vec![60], 1),
            (Some(spec(5, &["2m0s", "10m0s"])), 30, vec![120, 600], 2),
            (None, 60, vec![300, 600, 1800], 3),
            (Some(NodeMetricSpec::default()), 60, vec![300, 600, 1800], 3),
        ];
        for (spec, report, windows, generation) in cases {
            q.set_node_metric_spec(spec.clone());
            let c = q.round(&mut n, ts(1002), Probe::Slow).collect;
            assert_eq!(c.report_interval, Duration::from_secs(report), "{spec:?}");
            assert_eq!(c.policy_generation, generation, "{spec:?}");
            let got: Vec<u64> =
                q.collect_policy().durations.iter().map(|d| d.duration.as_secs()).collect();
            assert_eq!(got, windows, "{spec:?}");
        }
    }

    #[test]
    fn cfs_state_is_only_collected_for_cfs_quota_burst() {
        // An LS pod whose CFS quota a previous agent raised: cfsQuotaBurst
        // needs the state to reset it.
        let (mut n, _) = memory_pressure();
        let cpu = |m| kolo_core::resources::ResourceVector::cpu_memory(m, 0);
        let mut ls = crate::qos::testing_a::container("main", cpu(1_000), cpu(2_000));
        ls.dir = Some(crate::cgroup::CgroupDir::parse("kubepods/burstable/poduid-ls/c1").unwrap());
        n.pods[5].containers.push(ls.clone());
        n.cfs.insert(
            ls.dir.clone().unwrap(),
            crate::qos::CfsState { quota_us: 400_000, throttled_ratio: None },
        );
        let mut all = qos_loop(NodeSLOSpec::default());
        assert!(all.round(&mut n, ts(1000), Probe::Slow).collect.cfs_state);
        let without: Arc<[Box<dyn Strategy>]> = default_strategies()
            .into_iter()
            .filter(|s| s.name() != cfs_quota_burst::NAME)
            .collect();
        let mut some = QosLoop::new(without, Duration::from_secs(60));
        assert!(!some.collect().cfs_state);
        assert!(!some.round(&mut n, ts(1000), Probe::Slow).collect.cfs_state);
    }

    #[test]
    fn the_fast_path_is_hot_at_the_suppress_threshold() {
        let cases = [(None, 0.65), (Some(50), 0.5), (Some(80), 0.8)];
        for (percent, hot) in cases {
            let t = ResourceThresholdStrategy {
                cpu_suppress_threshold_percent: percent,
                ..Default::default()
            };
            let q = qos_loop(slo(t));
            assert_eq!(q.surge_thresholds(), SurgeThresholds { hot, jump: FAST_PROBE_JUMP });
        }
    }
}
