//! One QoS round on a real node, as a step over two seams: where the
//! [`NodeState`] comes from (the agent's collectors, or a test's script)
//! and where the plan goes ([`PlanSink`]: cgroup files and an evictor, a
//! dry run's printout, or a test's record). [`round_step`] is the whole of
//! what the node does with a [`RoundPlan`]; the decisions are all
//! [`QosLoop::round`]'s.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use kolo_agent::cgroup::{CgroupVersion, Cgroups};
use kolo_agent::evict::Evictor;
use kolo_agent::history::{ActionHistory, EvictionOutcome};
use kolo_agent::qos::{
    NodeState, Plan, PlanReport, PlannedEviction, PodState, Probe, QosLoop, RoundPlan,
};
use kolo_core::clock::Timestamp;

/// Where a round's plan goes.
pub trait PlanSink {
    /// Makes the round's cgroup writes (all of them: the executor skips
    /// values already set).
    fn write(&mut self, round: &RoundPlan, node: &NodeState, now: Timestamp);
    /// Carries out one eviction; `true` when the pod is gone or going
    /// (the loop then starts its cool-down).
    fn evict(&mut self, pod: &PodState, eviction: &PlannedEviction) -> bool;
}

/// Runs one round of `qos` on `node` at `now` and hands the plan to
/// `sink`: the writes, then each eviction the rate limit let through (its
/// outcome reported back to the loop). The evictions held back are logged.
/// What changed goes to `history` when given.
pub fn round_step(
    qos: &mut QosLoop,
    node: &mut NodeState,
    now: Timestamp,
    probe: Probe,
    sink: &mut dyn PlanSink,
    history: Option<&Mutex<ActionHistory>>,
) -> RoundPlan {
    let round = qos.round(node, now, probe);
    sink.write(&round, node, now);
    let mut outcomes = BTreeMap::new();
    for e in &round.plan.evictions {
        let Some(pod) = node.pods.iter().find(|p| p.pod.id.uid == e.uid) else { continue };
        let done = sink.evict(pod, e);
        qos.eviction_done(e, now, done);
        let outcome = if done { EvictionOutcome::Done } else { EvictionOutcome::Failed };
        outcomes.insert(e.uid.clone(), outcome);
    }
    for e in &round.held_back {
        tracing::warn!(pod = %e.pod, strategy = e.strategy, "eviction held back by the rate limit");
    }
    if let Some(history) = history {
        let mut history = history.lock().unwrap_or_else(|p| p.into_inner());
        history.record(now, node, &round, &outcomes);
    }
    round
}

/// The sink of a node: writes go to its cgroups, evictions to `evictor`
/// (the Eviction API in a cluster, killing the processes standalone).
pub struct CgroupSink {
    cgroups: Arc<Cgroups>,
    evictor: Box<dyn Evictor + Send>,
}

impl CgroupSink {
    /// A sink over `cgroups` evicting with `evictor`.
    pub fn new(cgroups: Arc<Cgroups>, evictor: Box<dyn Evictor + Send>) -> CgroupSink {
        CgroupSink { cgroups, evictor }
    }
}

impl PlanSink for CgroupSink {
    fn write(&mut self, round: &RoundPlan, _node: &NodeState, _now: Timestamp) {
        if round.plan.writes.is_empty() {
            return;
        }
        let writes: Vec<_> = round.plan.writes.iter().map(|w| w.write.clone()).collect();
        let applied = self.cgroups.executor().apply(&writes);
        for w in applied.changed() {
            tracing::info!(path = %w.path.display(), old = %w.old, new = %w.new, "cgroup written");
        }
        for e in &applied.errors {
            tracing::warn!(error = %e, "cgroup write failed");
        }
    }

    fn evict(&mut self, pod: &PodState, eviction: &PlannedEviction) -> bool {
        match self.evictor.evict(pod, &eviction.reason) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, strategy = eviction.strategy, "eviction failed");
                false
            }
        }
    }
}

/// `--dry-run`: prints the plan whenever it changes; nothing is written
/// or evicted (so no cool-down starts).
pub struct DryRunSink {
    version: CgroupVersion,
    last: Vec<String>,
    /// The plan `last` was printed from: a round that plans the same
    /// writes, evictions and held-back evictions prints the same lines, so
    /// it is compared as data and only a changed plan is formatted.
    last_plan: Option<(Plan, Vec<PlannedEviction>)>,
    out: Box<dyn Write + Send>,
}

impl DryRunSink {
    /// Prints plans for a cgroup `version` to `out`.
    pub fn new(version: CgroupVersion, out: Box<dyn Write + Send>) -> DryRunSink {
        DryRunSink { version, last: Vec::new(), last_plan: None, out }
    }
}

impl PlanSink for DryRunSink {
    fn write(&mut self, round: &RoundPlan, node: &NodeState, now: Timestamp) {
        let same = |(plan, held): &(Plan, Vec<PlannedEviction>)| {
            *plan == round.plan && *held == round.held_back
        };
        if self.last_plan.as_ref().is_some_and(same) {
            return;
        }
        self.last_plan = Some((round.plan.clone(), round.held_back.clone()));
        let lines = PlanReport::new(round, node, self.version).lines();
        if lines != self.last {
            let _ = writeln!(self.out, "# plan at {now} (dry run: nothing written)");
            for l in &lines {
                let _ = writeln!(self.out, "{l}");
            }
            let _ = self.out.flush();
        }
        self.last = lines;
    }

    fn evict(&mut self, _pod: &PodState, _eviction: &PlannedEviction) -> bool {
        false
    }
}
