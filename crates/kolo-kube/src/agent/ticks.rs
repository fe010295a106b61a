//! The agent's loop on a real node: a collection tick every interval, a
//! QoS round after each, and, between ticks, the fast probe that re-plans
//! at once when LS CPU surges.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kolo_agent::agent::{Agent, NodeStateCache};
use kolo_agent::history::ActionHistory;
use kolo_agent::pods::PodSource;
use kolo_agent::qos::{Probe, QosLoop, RoundPlan};
use kolo_api::crd::{NodeMetricSpec, NodeSLOSpec};
use kolo_core::clock::Timestamp;
use tokio::sync::watch;

use super::driver::{PlanSink, round_step};
use super::hook_view::HookViews;

/// How often the fast path reads node CPU between rounds.
pub const FAST_PROBE: Duration = Duration::from_millis(50);
/// How soon the fast path looks again after a surge re-planned.
pub const FAST_PROBE_FOLLOW_UP: Duration = Duration::from_millis(10);

/// The QoS side of the loop: the node's [`QosLoop`], where its plans go,
/// and the cluster's inputs (NodeSLO, NodeMetric spec) when there is a
/// cluster.
pub struct QosDriver {
    /// The round object.
    pub qos: QosLoop,
    sink: Box<dyn PlanSink + Send>,
    slo: Option<watch::Receiver<Option<NodeSLOSpec>>>,
    metric: Option<watch::Receiver<Option<NodeMetricSpec>>>,
    report_interval: Option<watch::Sender<Duration>>,
    applied_generation: u64,
    /// The last round's node state, refreshed rather than rebuilt.
    state: NodeStateCache,
    /// Where each round's node is published for the runtime hooks.
    hooks: Option<Arc<HookViews>>,
    /// Where the rounds' changes are recorded (served as `/actions`).
    history: Option<Arc<Mutex<ActionHistory>>>,
}

impl QosDriver {
    /// A driver handing `qos`'s plans to `sink`.
    pub fn new(qos: QosLoop, sink: Box<dyn PlanSink + Send>) -> QosDriver {
        let applied_generation = qos.collect().policy_generation;
        QosDriver {
            qos,
            sink,
            slo: None,
            metric: None,
            report_interval: None,
            applied_generation,
            state: NodeStateCache::default(),
            hooks: None,
            history: None,
        }
    }

    /// Records what each round changes in `history`.
    pub fn record_history(&mut self, history: Arc<Mutex<ActionHistory>>) {
        self.history = Some(history);
    }

    /// Publishes each round's node, pods and NodeSLO to `views` (read by
    /// the runtime hook server).
    pub fn publish_hooks(&mut self, views: Arc<HookViews>) {
        self.hooks = Some(views);
    }

    /// Follows the node's NodeSLO from `rx` (kept while it holds none).
    pub fn follow_node_slo(&mut self, rx: watch::Receiver<Option<NodeSLOSpec>>) {
        self.slo = Some(rx);
    }

    /// Follows the node's NodeMetric spec from `rx`, telling the report
    /// interval it sets to `report_interval`.
    pub fn follow_node_metric(
        &mut self,
        rx: watch::Receiver<Option<NodeMetricSpec>>,
        report_interval: watch::Sender<Duration>,
    ) {
        self.metric = Some(rx);
        self.report_interval = Some(report_interval);
    }

    /// Takes the inputs that changed since the last round.
    fn follow_inputs(&mut self) {
        if let Some(rx) = self.slo.as_mut().filter(|rx| rx.has_changed().unwrap_or(false)) {
            self.qos.set_node_slo(rx.borrow_and_update().clone());
        }
        if let Some(rx) = self.metric.as_mut().filter(|rx| rx.has_changed().unwrap_or(false)) {
            self.qos.set_node_metric_spec(rx.borrow_and_update().clone());
        }
    }

    /// One round on `agent`'s node at `now`: the plan goes to the sink and
    /// the collectors follow the settings it carries.
    pub fn round<S: PodSource>(
        &mut self,
        agent: &mut Agent<S>,
        now: Timestamp,
        probe: Probe,
    ) -> RoundPlan {
        self.follow_inputs();
        let state = agent.refresh_node_state(&mut self.state, now);
        let history = self.history.as_deref();
        let round = round_step(&mut self.qos, state, now, probe, self.sink.as_mut(), history);
        if let Some(views) = &self.hooks {
            views.publish(state, self.qos.node_slo(), agent.pod_generation());
        }
        agent.set_collect(&round.collect);
        if round.collect.policy_generation != self.applied_generation {
            self.applied_generation = round.collect.policy_generation;
            let spec = self.qos.node_metric_spec().cloned().unwrap_or_default();
            agent.set_metric_spec(spec, self.qos.collect_policy().clone());
            tracing::info!(
                report_interval_seconds = round.collect.report_interval.as_secs(),
                windows = ?self.qos.collect_policy().durations.iter().map(|d| &d.label).collect::<Vec<_>>(),
                "following the NodeMetric spec"
            );
            if let Some(tx) = &self.report_interval {
                tx.send_replace(round.collect.report_interval);
            }
        }
        round
    }
}

/// Ticks `agent` every `interval` until `rounds` ticks ran (or forever),
/// logging each tick's problems once per distinct message; with `qos`, a
/// round after each tick and the fast path between ticks.
pub fn run_ticks<S: PodSource>(
    agent: &Mutex<Agent<S>>,
    interval: Duration,
    rounds: Option<u64>,
    mut qos: Option<&mut QosDriver>,
) {
    let start = Instant::now();
    let mut last_errors: Vec<String> = Vec::new();
    let mut n = 0u64;
    loop {
        let now = Timestamp::now();
        let report = lock(agent).tick(now);
        if report.errors != last_errors {
            for e in &report.errors {
                tracing::warn!(error = %e, "collection problem");
            }
            last_errors = report.errors;
        }
        if let Some(qos) = qos.as_deref_mut() {
            qos.round(&mut lock(agent), now, Probe::Slow);
        }
        n += 1;
        if rounds.is_some_and(|r| n >= r) {
            return;
        }
        // The next multiple of the interval: no drift, no catch-up storm
        // after a slow round.
        let next = interval
            .mul_f64((start.elapsed().as_secs_f64() / interval.as_secs_f64()).floor() + 1.0);
        match qos.as_deref_mut().filter(|_| lock(agent).has_be_pods()) {
            Some(qos) => probe_until(agent, qos, start, next),
            // Without a BE pod there is nothing to throttle: just sleep.
            None => std::thread::sleep(next.saturating_sub(start.elapsed())),
        }
    }
}

/// The fast path until `next` (from `start`): probe node and BE CPU every
/// [`FAST_PROBE`] and, when the agent sees an LS surge near the
/// suppression threshold ([`Agent::fast_probe`]), run a fast round at once
/// and look again [`FAST_PROBE_FOLLOW_UP`] later: a surge that began late
/// in the last interval showed only part of its size.
fn probe_until<S: PodSource>(
    agent: &Mutex<Agent<S>>,
    qos: &mut QosDriver,
    start: Instant,
    next: Duration,
) {
    let mut pause = FAST_PROBE;
    loop {
        let left = next.saturating_sub(start.elapsed());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(pause));
        let now = Timestamp::now();
        let mut agent = lock(agent);
        pause = FAST_PROBE;
        if agent.fast_probe(now, qos.qos.surge_thresholds()) {
            tracing::debug!("node CPU jumped: re-planning now");
            qos.round(&mut agent, now, Probe::Fast);
            pause = FAST_PROBE_FOLLOW_UP;
        }
    }
}

/// The agent, even if a thread panicked holding it (its state is still
/// the last tick's).
pub fn lock<S>(agent: &Mutex<Agent<S>>) -> std::sync::MutexGuard<'_, Agent<S>> {
    agent.lock().unwrap_or_else(|p| p.into_inner())
}
