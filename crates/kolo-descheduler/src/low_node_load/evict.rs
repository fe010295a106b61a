//! One eviction pass (spec §9.3), node or prod: for each source in order,
//! its candidates (filters, node fit), their order, and the eviction loop
//! with its stop conditions.

use std::collections::BTreeMap;
use std::collections::HashMap;

use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_scheduler::framework::PodInfo;

use super::NAME;
use super::anomaly::Detectors;
use super::classify::over;
use super::filter::PodFilter;
use super::fit::{Misfit, PodFit, add_within, check_within};
use super::report::{CandidateReport, CandidateVerdict};
use super::round::NodeState;
use super::score::{cmp_candidates, excess, pod_score};
use super::thresholds::percent_of;
use crate::evictor::{EvictionRequest, Evictor};
use crate::pod_sort::PodSortKey;

/// What a pass reads besides the nodes.
#[derive(Debug)]
pub struct PassEnv<'r> {
    /// The threshold resources, sorted by name.
    pub resources: &'r [ResourceName],
    /// The pool's weights.
    pub weights: &'r BTreeMap<ResourceName, i64>,
    /// The effective high percentages (node, prod) per resource, for the
    /// reason text.
    pub high_percents: &'r [(f64, f64)],
    /// Check node fit.
    pub node_fit: bool,
    /// Never call the evictor.
    pub dry_run: bool,
    /// The prod pass.
    pub prod: bool,
}

/// The mutable parts of a pass.
pub struct PassIo<'x, 'a> {
    /// The pool's nodes.
    pub states: &'x mut [NodeState<'a>],
    /// Requests of the pods on each node (filled on first use).
    pub requested: &'x mut [Option<ResourceVector>],
    /// Where evictions go.
    pub evictor: &'x mut dyn Evictor,
    /// The plugin's pod filter.
    pub filter: &'x PodFilter,
    /// The pass's detectors (a source that drops under its thresholds is
    /// reset).
    pub detectors: &'x mut Detectors,
    /// The candidates, appended.
    pub report: &'x mut Vec<CandidateReport>,
}

struct Candidate<'a> {
    pod: &'a PodInfo,
    metric: Option<ResourceVector>,
    key: PodSortKey,
    score: Option<i64>,
    target: Option<usize>,
}

impl NodeState<'_> {
    fn used(&self, prod: bool) -> &ResourceVector {
        if prod { &self.prod_usage } else { &self.usage }
    }

    fn high(&self, prod: bool) -> &ResourceVector {
        if prod { &self.thresholds.prod_high } else { &self.thresholds.high }
    }
}

/// Runs the pass over `sources` (in order) towards `targets`, drawing on
/// `totals` (the targets' summed headroom, per threshold resource).
pub fn run(
    env: &PassEnv<'_>,
    io: &mut PassIo<'_, '_>,
    sources: &[usize],
    targets: &[usize],
    totals: &mut ResourceVector,
) {
    if targets.is_empty() {
        return;
    }
    for &src in sources {
        let candidates = candidates(env, io, src, targets);
        evict(env, io, src, candidates, totals);
    }
}

fn candidates<'a>(
    env: &PassEnv<'_>,
    io: &mut PassIo<'_, 'a>,
    src: usize,
    targets: &[usize],
) -> Vec<Candidate<'a>> {
    let source = &io.states[src];
    let (pods, report) = match &source.measured {
        Some(m) => (if env.prod { m.prod_pods.clone() } else { m.pods.clone() }, m.report),
        None => return Vec::new(),
    };
    let node = source.view.name().to_owned();
    let metrics: HashMap<&str, ResourceVector> =
        report.pods.iter().map(|p| (&*p.key, p.usage.to_vector().clamp_non_negative())).collect();
    let mut out = Vec::new();
    for pod in pods {
        let refuse = |verdict| CandidateReport {
            pod: pod.key().to_owned(),
            node: node.clone(),
            prod: env.prod,
            usage_score: -1,
            target: None,
            verdict,
        };
        if let Err(why) = io.evictor.filter(pod).and_then(|()| io.filter.check(pod)) {
            io.report.push(refuse(CandidateVerdict::Filtered(why)));
            continue;
        }
        let metric = metrics.get(pod.key()).copied();
        let mut target = None;
        if env.node_fit {
            let Some(m) = metric else {
                io.report.push(refuse(CandidateVerdict::NoMetric));
                continue;
            };
            match fit_any(env, io, pod, &m, targets) {
                Ok(t) => target = Some(t),
                Err(why) => {
                    io.report.push(refuse(CandidateVerdict::NoFit(why)));
                    continue;
                }
            }
        }
        out.push(Candidate { pod, metric, key: PodSortKey::of(pod), score: None, target });
    }
    let source = &io.states[src];
    let over = excess(source.used(env.prod), source.high(env.prod), env.resources);
    for c in &mut out {
        c.score = pod_score(c.metric.as_ref(), &over, env.weights);
    }
    out.sort_by(|a, b| {
        cmp_candidates((&a.key, a.score), (&b.key, b.score))
            .then_with(|| a.pod.key().cmp(b.pod.key()))
    });
    out
}

/// The first target that takes the pod; its usage stays added there
/// (Koordinator's "fill": only refused attempts are rolled back).
fn fit_any(
    env: &PassEnv<'_>,
    io: &mut PassIo<'_, '_>,
    pod: &PodInfo,
    metric: &ResourceVector,
    targets: &[usize],
) -> Result<usize, String> {
    let fit = PodFit::of(pod);
    let mut misses: BTreeMap<Misfit, usize> = BTreeMap::new();
    for &t in targets {
        // The usage check first: it is the cheap one, and once the fill
        // has taken a target to its threshold, most pods fail it there.
        let state = &io.states[t];
        let result =
            check_within(state.used(env.prod), metric, state.high(env.prod), env.resources)
                .and_then(|()| {
                    let requested =
                        *io.requested[t].get_or_insert_with(|| requested_on(&io.states[t]));
                    fit.predicates(io.states[t].view, &requested)
                })
                .and_then(|()| {
                    let state = &mut io.states[t];
                    let high = *state.high(env.prod);
                    let used = if env.prod { &mut state.prod_usage } else { &mut state.usage };
                    add_within(used, metric, &high, env.resources)
                });
        match result {
            Ok(()) => return Ok(t),
            Err(m) => *misses.entry(m).or_default() += 1,
        }
    }
    let parts: Vec<String> = misses.iter().map(|(m, n)| format!("{n} {}", m.as_str())).collect();
    Err(format!("fits none of {} targets: {}", targets.len(), parts.join(", ")))
}

fn requested_on(state: &NodeState<'_>) -> ResourceVector {
    let pods = state.measured.as_ref().map(|m| m.pods.as_slice()).unwrap_or_default();
    let mut sum =
        pods.iter().fold(ResourceVector::EMPTY, |acc, p| acc.saturating_add(p.view().requests()));
    sum.set(ResourceName::Pods, pods.len() as i64);
    sum
}

fn evict(
    env: &PassEnv<'_>,
    io: &mut PassIo<'_, '_>,
    src: usize,
    candidates: Vec<Candidate<'_>>,
    totals: &mut ResourceVector,
) {
    let node = io.states[src].view.name().to_owned();
    let mut stopped: Option<String> = None;
    for c in candidates {
        let mut entry = CandidateReport {
            pod: c.pod.key().to_owned(),
            node: node.clone(),
            prod: env.prod,
            usage_score: c.score.unwrap_or(-1),
            target: c.target.map(|t| io.states[t].view.name().to_owned()),
            verdict: CandidateVerdict::NotReached(String::new()),
        };
        if stopped.is_none() {
            stopped = stop_condition(env, io, src, totals);
        }
        if let Some(why) = &stopped {
            entry.verdict = CandidateVerdict::NotReached(why.clone());
            io.report.push(entry);
            continue;
        }
        let reason = reason_text(env, &io.states[src]);
        if !env.dry_run {
            let request = EvictionRequest {
                pod: c.pod.view().pod_ref(),
                node: node.clone(),
                plugin: NAME,
                reason: reason.clone(),
            };
            if let Err(why) = io.evictor.evict(c.pod, request) {
                entry.verdict = CandidateVerdict::Refused(why);
                io.report.push(entry);
                continue;
            }
        }
        if let Some(m) = &c.metric {
            let state = &mut io.states[src];
            for &r in env.resources {
                let amount = if r == ResourceName::Pods { 1 } else { m.value(r) };
                totals.set(r, totals.value(r).saturating_sub(amount));
                state.usage.set(r, state.usage.value(r).saturating_sub(amount));
                if env.prod {
                    state.prod_usage.set(r, state.prod_usage.value(r).saturating_sub(amount));
                }
            }
        }
        entry.verdict = CandidateVerdict::Evicted(reason);
        io.report.push(entry);
    }
}

/// Why the loop stops before the next pod: the source is no longer over
/// its high thresholds (its detector is reset), or some target headroom is
/// used up.
fn stop_condition(
    env: &PassEnv<'_>,
    io: &mut PassIo<'_, '_>,
    src: usize,
    totals: &ResourceVector,
) -> Option<String> {
    let state = &io.states[src];
    if !over(state.used(env.prod), state.high(env.prod), env.resources) {
        io.detectors.reset(state.view.name());
        let kind = if env.prod { "prod usage" } else { "usage" };
        return Some(format!("node {kind} is no longer over its high thresholds"));
    }
    env.resources
        .iter()
        .find(|&&r| totals.value(r) <= 0)
        .map(|r| format!("no {r} headroom left on the target nodes"))
}

/// `node is overutilized, node cpu usage(80.00%)>threshold(50.00%), …`
/// (`prod` for the prod pass), over the resources above their high
/// thresholds, sorted by name.
pub fn reason_text(env: &PassEnv<'_>, state: &NodeState<'_>) -> String {
    let kind = if env.prod { "prod" } else { "node" };
    let used = state.used(env.prod);
    let high = state.high(env.prod);
    let parts: Vec<String> = env
        .resources
        .iter()
        .zip(env.high_percents)
        .filter(|(r, _)| used.value(**r) > high.value(**r))
        .map(|(&r, &(node_pct, prod_pct))| {
            let pct = percent_of(used.value(r), state.alloc.value(r));
            let threshold = if env.prod { prod_pct } else { node_pct };
            format!("{kind} {r} usage({pct:.2}%)>threshold({threshold:.2}%)")
        })
        .collect();
    format!("node is overutilized, {}", parts.join(", "))
}
