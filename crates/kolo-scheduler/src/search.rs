//! Finding a node for a pod, in steps:
//!
//! 1. [`prepare`]: PreFilter and PreScore, once; what remains is the list
//!    of Filter and Score plugins that run for the pod ([`Search`]).
//! 2. The Filter + Score pass, fused over batches of nodes in parallel
//!    ([`Search::evaluate`]): over every node, reusing the equivalence
//!    cache's results for the nodes that did not change
//!    ([`Search::every_node`]), or in rounds, in rotated order, until enough
//!    feasible nodes are found ([`Search::in_rounds`]).
//! 3. Normalization and weighted totals, when a Score plugin normalizes
//!    ([`Search::normalize`]).
//! 4. Selection of the best node, ties broken by a hash of pod and node
//!    ([`Search::select`]), and the per-node explanation asked for.
//!
//! A pod no node can take gets a [`Failure`]: kube-scheduler's summary, and
//! what may wake it ([`WakeOn`]: the nodes each plugin that gives queueing
//! hints rejected it on, the registered events of the others).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::cache::Cache;
use crate::equivalence::{CacheEntry, Freshness, NodeResults};
use crate::explain::{FailureSummary, failure_summary};
use crate::framework::{
    CycleContext, CycleState, EventKinds, Facts, Filter, NodeId, NodeInfo, NodeVerdict, PodInfo,
    PostFilterCluster, PostFilterOutcome, PreFilterOutcome, PreScoreOutcome, Rejected, Score,
    ScoreSink, Verdict,
};
use crate::profile::Profile;
use crate::report::{CycleReport, ExplainLevel, NodeReport, Outcome};
use crate::scheduler::Stats;
use crate::wake::{PluginKey, WakeOn};

/// Below this many nodes every node is evaluated (kube-scheduler's
/// `minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage never goes below this.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes to look for before scoring, as kube-scheduler's
/// `numFeasibleNodesToFind`: all of them below 100 nodes or at 100%;
/// otherwise the percentage (adaptive when 0: 50% − 1% per 125 nodes, at
/// least 5%) of the nodes, at least 100.
pub fn num_feasible_nodes_to_find(nodes: usize, percentage: i32) -> usize {
    if nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return nodes;
    }
    let percentage = if percentage <= 0 {
        (50usize.saturating_sub(nodes / 125)).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    } else {
        percentage as usize
    };
    (nodes * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Why no node can take a pod and what may wake it: made from the
/// verdicts of a pass (and cached with them).
#[derive(Debug)]
pub(crate) struct Failure {
    /// The message and the rejections it counts.
    pub summary: FailureSummary,
    /// What may make the pod schedulable.
    pub wake_on: Arc<WakeOn>,
}

/// A cycle that found no node: why, and what the PostFilter plugins
/// decided (a nominated node and its victims).
pub(crate) struct NoNode {
    pub failure: Arc<Failure>,
    pub post_filter: PostFilterOutcome,
}

/// What PostFilter plugins may look at besides the verdicts: the cache's
/// pods, and whether the pod's earlier nomination still waits for its
/// victims.
#[derive(Clone, Copy)]
pub(crate) struct PostFilterInput<'a> {
    pub cache: &'a Cache,
    pub awaiting_victims: Option<&'a str>,
}

/// Buffers reused from cycle to cycle (allocating them per pod costs more
/// than the scoring itself at 5,000 nodes).
#[derive(Default)]
pub(crate) struct Scratch {
    pub results: NodeResults,
    pub feasible: Vec<usize>,
}

/// A Score plugin that runs for the pod.
struct Scorer<'a> {
    plugin: &'a dyn Score,
    weight: i64,
    /// Its index in the profile.
    index: usize,
}

/// The best node of a chunk: (total, tie-break hash, position). Larger
/// wins; the position settles even equal hashes, so the choice never
/// depends on how nodes were split into chunks.
type Best = Option<(i64, u64, usize)>;

/// One cycle's search: the pod, the Filter and Score plugins that run for
/// it, and the nodes.
pub(crate) struct Search<'a> {
    pub ctx: &'a CycleContext,
    pub state: &'a CycleState,
    pub pod: &'a PodInfo,
    pub profile: &'a Profile,
    pub profile_index: usize,
    pub nodes: &'a [NodeInfo],
    /// Whether node reports carry the plugins' facts.
    pub facts: bool,
    filters: Vec<(&'a dyn Filter, u16)>,
    scorers: Vec<Scorer<'a>>,
    /// Scores per node in the buffers (at least 1).
    columns: usize,
    /// No Score plugin normalizes: totals are summed during the pass.
    pub sum_in_pass: bool,
    tie_seed: u64,
    /// For the PostFilter plugins (none: they are not run).
    pub post_filter_input: Option<PostFilterInput<'a>>,
}

/// The plugins that run for a pod after PreFilter and PreScore.
pub(crate) struct Running<'a> {
    filters: Vec<(&'a dyn Filter, u16)>,
    scorers: Vec<Scorer<'a>>,
}

/// PreFilter, then PreScore: the Filter and Score plugins that run for the
/// pod, or why it fits nowhere (a PreFilter rejection; no nodes at all).
pub(crate) fn prepare<'a>(
    profile: &'a Profile,
    ctx: &CycleContext,
    state: &mut CycleState,
    pod: &PodInfo,
    node_count: usize,
) -> Result<Running<'a>, NoNode> {
    let mut skip_filter = vec![false; profile.plugins.len()];
    for p in &profile.pre_filter {
        match p.plugin.pre_filter(ctx, state, pod) {
            PreFilterOutcome::Proceed => {}
            PreFilterOutcome::Skip => skip_filter[p.index] = true,
            PreFilterOutcome::Reject(rejection) => {
                let name = profile.plugin_name(p.index);
                let summary = FailureSummary::everywhere(node_count, name, &rejection);
                let wake_on = WakeOn::any(profile.registered[p.index]);
                return Err(failed(summary, wake_on));
            }
        }
    }
    let mut skip_score = vec![false; profile.plugins.len()];
    for p in &profile.pre_score {
        if p.plugin.pre_score(ctx, state, pod) == PreScoreOutcome::Skip {
            skip_score[p.index] = true;
        }
    }
    if node_count == 0 {
        let summary = failure_summary(0, [], |_| "");
        return Err(failed(summary, WakeOn::any(EventKinds::NODE_ADD)));
    }
    let filters = profile
        .filter
        .iter()
        .filter(|f| !skip_filter[f.index])
        .map(|f| (&*f.plugin, f.index as u16))
        .collect();
    // Skipped plugins score nothing.
    let scorers = profile
        .score
        .iter()
        .filter(|(s, _)| !skip_score[s.index])
        .map(|(s, weight)| Scorer { plugin: &*s.plugin, weight: *weight, index: s.index })
        .collect();
    Ok(Running { filters, scorers })
}

fn failed(summary: FailureSummary, wake_on: WakeOn) -> NoNode {
    NoNode {
        failure: Arc::new(Failure { summary, wake_on: Arc::new(wake_on) }),
        post_filter: PostFilterOutcome::Unchanged,
    }
}

impl<'a> Search<'a> {
    /// The search for `pod` with the plugins [`prepare`] left running.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &'a CycleContext,
        state: &'a CycleState,
        pod: &'a PodInfo,
        profile: &'a Profile,
        profile_index: usize,
        nodes: &'a [NodeInfo],
        running: Running<'a>,
        facts: bool,
    ) -> Search<'a> {
        let Running { filters, scorers } = running;
        Search {
            ctx,
            state,
            pod,
            profile,
            profile_index,
            nodes,
            facts,
            columns: scorers.len().max(1),
            sum_in_pass: !scorers.iter().any(|s| s.plugin.normalizes()),
            filters,
            scorers,
            tie_seed: pod.tie_hash(),
            post_filter_input: None,
        }
    }

    /// Every node, no normalization, nothing to report per node: each
    /// chunk also finds its own best node. With the equivalence cache
    /// (`cached`), only the nodes that changed since an alike pod's cycle
    /// are evaluated again; without, the results go to `scratch`.
    pub fn every_node(
        &self,
        cache: &Cache,
        cached: Option<&mut CacheEntry>,
        scratch: &mut NodeResults,
        stats: &mut Stats,
        report: &mut CycleReport,
    ) -> Result<NodeId, NoNode> {
        let (results, freshness, failure) = match cached {
            Some(e) => (&mut e.results, Some(&mut e.freshness), Some(&mut e.failure)),
            None => (scratch, None, None),
        };
        let (feasible, best, recomputed) = self.evaluate_changed(cache, results, freshness, stats);
        report.evaluated_nodes = self.nodes.len();
        report.feasible_nodes = feasible;
        if let Some((_, _, best)) = best {
            report.outcome = self.scheduled(results, best);
            return Ok(self.nodes[best].id());
        }
        // No feasible node: explain why, from the cached summary when no
        // verdict changed since it was made. A summary describes the
        // verdicts it was made from: it is forgotten as soon as any of
        // them is computed again, whatever this cycle's outcome.
        let failure = match failure {
            Some(slot) => {
                if recomputed {
                    *slot = None;
                }
                slot.get_or_insert_with(|| Arc::new(self.failure(&results.verdicts))).clone()
            }
            None => Arc::new(self.failure(&results.verdicts)),
        };
        Err(NoNode { failure, post_filter: self.post_filter(&results.verdicts) })
    }

    /// Evaluates the nodes whose results are stale (all of them without
    /// `freshness`, or when too many changed); returns the number of
    /// feasible nodes, the best one, and whether any node was evaluated.
    fn evaluate_changed(
        &self,
        cache: &Cache,
        results: &mut NodeResults,
        freshness: Option<&mut Freshness>,
        stats: &mut Stats,
    ) -> (usize, Best, bool) {
        let n = self.nodes.len();
        results.resize(n, self.columns);
        // Node updates leave other nodes' results good when the plugins
        // say so; the node set changing never does, nor does a change of
        // the facts a plugin reads across nodes.
        let epoch =
            if self.profile.local_node_updates { cache.node_set_epoch() } else { cache.epoch() };
        let epoch = epoch.wrapping_add(self.profile.cross_node_epoch());
        let now = self.ctx.now;
        let stale = freshness.as_ref().and_then(|f| f.stale(epoch, cache.generations(), now));
        let renewed = |i: usize| valid_until(self.profile, &self.nodes[i], now);
        // Re-evaluating a node alone costs more than in a parallel pass;
        // past a point, evaluate everything.
        match (stale, freshness) {
            (Some(stale), Some(freshness)) if stale.len() <= (n / 8).max(64) => {
                stats.node_evaluations += stale.len() as u64;
                stats.node_results_reused += (n - stale.len()) as u64;
                for &i in &stale {
                    self.evaluate(i, i + 1, results, true);
                }
                freshness.renew(&stale, cache.generations(), renewed);
                let (feasible, best) =
                    best_of(cache.name_hashes(), &results.verdicts, &results.totals, self.tie_seed);
                (feasible, best, !stale.is_empty())
            }
            (_, freshness) => {
                stats.node_evaluations += n as u64;
                let (feasible, best) = self.evaluate(0, n, results, true);
                if let Some(freshness) = freshness {
                    freshness.renew_all(epoch, cache.generations(), renewed);
                }
                (feasible, best, true)
            }
        }
    }

    /// Evaluates nodes in rounds, in the rotated order `next_start`,
    /// `next_start + 1`, ... until `want` feasible nodes are found (all of
    /// them from 0 when `want` is every node), then normalizes, selects and
    /// explains as `explain` asks. Moves `next_start` past the nodes looked
    /// at.
    pub fn in_rounds(
        &self,
        scratch: &mut Scratch,
        want: usize,
        next_start: &mut usize,
        explain: ExplainLevel,
        stats: &mut Stats,
        report: &mut CycleReport,
    ) -> Result<NodeId, NoNode> {
        let n = self.nodes.len();
        // Buffers keep their contents between cycles: every slot a cycle
        // reads is written by that cycle's pass first.
        scratch.results.resize(n, self.columns);
        scratch.feasible.clear();
        let start = if want >= n { 0 } else { *next_start % n };
        let processed = self.find_feasible(scratch, start, want, stats);
        if want < n {
            *next_start = (start + processed) % n;
        }
        report.evaluated_nodes = processed;
        report.feasible_nodes = scratch.feasible.len();
        let in_order = |k: usize| (start + k) % n;
        if !self.sum_in_pass && !scratch.feasible.is_empty() {
            self.normalize(scratch);
        }
        let Some(best) = self.select(scratch) else {
            if explain == ExplainLevel::All {
                report.nodes =
                    (0..processed).map(|k| self.node_report(scratch, in_order(k))).collect();
            }
            let failure = Arc::new(self.failure(&scratch.results.verdicts));
            let post_filter = self.post_filter(&scratch.results.verdicts);
            return Err(NoNode { failure, post_filter });
        };
        report.nodes = match explain {
            ExplainLevel::None => Vec::new(),
            ExplainLevel::All => {
                (0..processed).map(|k| self.node_report(scratch, in_order(k))).collect()
            }
            ExplainLevel::Top(k) => {
                let mut top = scratch.feasible.clone();
                let totals = &scratch.results.totals;
                top.sort_by(|&a, &b| {
                    totals[b].cmp(&totals[a]).then_with(|| self.tie(b).cmp(&self.tie(a)))
                });
                top.truncate(k);
                top.into_iter().map(|pos| self.node_report(scratch, pos)).collect()
            }
        };
        report.outcome = self.scheduled(&scratch.results, best);
        Ok(self.nodes[best].id())
    }

    /// The rounds of [`in_rounds`](Self::in_rounds): each one parallel pass
    /// over at most two contiguous ranges. Records the feasible positions
    /// and returns how many nodes count as looked at: up to the `want`-th
    /// feasible one (a round may have evaluated more; their results are not
    /// used).
    fn find_feasible(
        &self,
        scratch: &mut Scratch,
        start: usize,
        want: usize,
        stats: &mut Stats,
    ) -> usize {
        let n = self.nodes.len();
        let round = if want >= n { n } else { want.max(512) };
        let mut evaluated = 0;
        while evaluated < n && scratch.feasible.len() < want {
            let len = round.min(n - evaluated);
            let from = (start + evaluated) % n;
            let first = len.min(n - from);
            for (a, b) in [(from, from + first), (0, len - first)] {
                if a < b {
                    self.evaluate(a, b, &mut scratch.results, self.sum_in_pass);
                }
            }
            for k in evaluated..evaluated + len {
                let pos = (start + k) % n;
                if scratch.results.verdicts[pos].is_none() {
                    scratch.feasible.push(pos);
                    if scratch.feasible.len() == want {
                        break;
                    }
                }
            }
            evaluated += len;
            stats.node_evaluations += len as u64;
        }
        match scratch.feasible.last() {
            Some(&last) if scratch.feasible.len() == want => (last + n - start) % n + 1,
            _ => evaluated,
        }
    }

    /// Normalizes the scores of the feasible nodes, then weights and sums
    /// them.
    fn normalize(&self, scratch: &mut Scratch) {
        let Scratch { results, feasible } = scratch;
        let columns = self.columns;
        let mut column = Vec::with_capacity(feasible.len());
        let feasible_nodes: Vec<&NodeInfo> = feasible.iter().map(|&pos| &self.nodes[pos]).collect();
        for (c, scorer) in self.scorers.iter().enumerate() {
            if !scorer.plugin.normalizes() {
                continue;
            }
            column.clear();
            column.extend(feasible.iter().map(|&pos| results.scores[pos * columns + c]));
            scorer.plugin.normalize(self.ctx, self.state, self.pod, &feasible_nodes, &mut column);
            for (&pos, &v) in feasible.iter().zip(&column) {
                results.scores[pos * columns + c] = v;
            }
        }
        for &pos in feasible.iter() {
            results.totals[pos] = weighted_total(&results.scores[pos * columns..], &self.scorers);
        }
    }

    /// The best feasible node, if any: the highest total, then tie-break
    /// hash, then position.
    fn select(&self, scratch: &Scratch) -> Option<usize> {
        let totals = &scratch.results.totals;
        scratch.feasible.iter().copied().max_by_key(|&pos| (totals[pos], self.tie(pos), pos))
    }

    fn tie(&self, pos: usize) -> u64 {
        mix(self.tie_seed ^ self.nodes[pos].name_hash())
    }

    fn scheduled(&self, results: &NodeResults, pos: usize) -> Outcome {
        Outcome::Scheduled {
            node: self.nodes[pos].name().to_string(),
            total: results.totals[pos],
            scores: self.plugin_scores(&results.scores[pos * self.columns..]),
        }
    }

    /// Filters and scores the nodes at positions `from..to` in parallel
    /// chunks. Returns the number of feasible nodes and, when
    /// `sum_in_pass`, the best one.
    fn evaluate(
        &self,
        from: usize,
        to: usize,
        results: &mut NodeResults,
        sum_in_pass: bool,
    ) -> (usize, Best) {
        let columns = self.columns;
        let nodes = &self.nodes[from..to];
        let verdicts = &mut results.verdicts[from..to];
        let scores = &mut results.scores[from * columns..to * columns];
        let totals = &mut results.totals[from..to];
        let threads = rayon::current_num_threads().max(1);
        let chunk = nodes.len().div_ceil(threads * 2).max(64);
        let work = |(index, (((verdicts, scores), totals), nodes)): ChunkWork<'_>| {
            self.evaluate_chunk(nodes, verdicts, scores, totals, sum_in_pass, from + index * chunk)
        };
        if nodes.len() <= chunk {
            work((0, (((verdicts, scores), totals), nodes)))
        } else {
            verdicts
                .par_chunks_mut(chunk)
                .zip(scores.par_chunks_mut(chunk * columns))
                .zip(totals.par_chunks_mut(chunk))
                .zip(nodes.par_chunks(chunk))
                .enumerate()
                .map(work)
                .reduce(|| (0, None), |a, b| (a.0 + b.0, a.1.max(b.1)))
        }
    }

    /// One chunk of [`evaluate`](Self::evaluate); `offset` is the position
    /// of its first node.
    fn evaluate_chunk(
        &self,
        nodes: &[NodeInfo],
        verdicts: &mut [NodeVerdict],
        scores: &mut [i64],
        totals: &mut [i64],
        sum_in_pass: bool,
        offset: usize,
    ) -> (usize, Best) {
        let (ctx, state, pod) = (self.ctx, self.state, self.pod);
        verdicts.iter_mut().for_each(|v| *v = None);
        for (filter, plugin) in &self.filters {
            filter.filter_nodes(ctx, state, pod, nodes, *plugin, verdicts);
        }
        for (c, scorer) in self.scorers.iter().enumerate() {
            let mut sink = ScoreSink::new(&mut scores[c..], self.columns);
            scorer.plugin.score_nodes(ctx, state, pod, nodes, verdicts, &mut sink);
        }
        let mut feasible = 0;
        let mut best: Best = None;
        for (i, verdict) in verdicts.iter().enumerate() {
            if verdict.is_none() {
                feasible += 1;
                if sum_in_pass {
                    let total = weighted_total(&scores[i * self.columns..], &self.scorers);
                    totals[i] = total;
                    let candidate = (total, mix(self.tie_seed ^ nodes[i].name_hash()), offset + i);
                    if best.is_none_or(|b| candidate > b) {
                        best = Some(candidate);
                    }
                }
            }
        }
        (feasible, best)
    }

    /// Why no node can take the pod, from every node's verdict: the
    /// summary, and what may wake the pod — per plugin that gives queueing
    /// hints the nodes it rejected the pod on, else the events it
    /// registered.
    fn failure(&self, verdicts: &[NodeVerdict]) -> Failure {
        let profile = self.profile;
        let rejections = verdicts.iter().flatten().map(|r| (r.plugin, &r.rejection));
        let summary =
            failure_summary(verdicts.len(), rejections, |p| profile.plugin_name(p.into()));
        let mut wake_on = WakeOn::default();
        for (node, verdict) in self.nodes.iter().zip(verdicts) {
            if let Some(r) = verdict {
                let p = usize::from(r.plugin);
                let key = PluginKey { profile: self.profile_index as u16, plugin: r.plugin };
                let hinted = profile.hints[p].is_some();
                wake_on.add(key, profile.registered[p], hinted, node.id());
            }
        }
        Failure { summary, wake_on: Arc::new(wake_on) }
    }

    /// The PostFilter plugins, in order, until one does something.
    fn post_filter(&self, verdicts: &[NodeVerdict]) -> PostFilterOutcome {
        let Some(input) = self.post_filter_input else { return PostFilterOutcome::Unchanged };
        if self.profile.post_filter.is_empty() {
            return PostFilterOutcome::Unchanged;
        }
        let rejected: Vec<(&NodeInfo, &Rejected)> = self
            .nodes
            .iter()
            .zip(verdicts)
            .filter_map(|(node, v)| v.as_deref().map(|r| (node, r)))
            .collect();
        let cluster = SearchCluster::new(self, input);
        for p in &self.profile.post_filter {
            match p.plugin.post_filter(self.ctx, self.state, self.pod, &rejected, &cluster) {
                PostFilterOutcome::Unchanged => {}
                decided => return decided,
            }
        }
        PostFilterOutcome::Unchanged
    }

    /// A node's per-plugin scores, by plugin name.
    fn plugin_scores(&self, row: &[i64]) -> BTreeMap<&'static str, i64> {
        let name = |s: &Scorer<'_>| self.profile.plugin_name(s.index);
        self.scorers.iter().enumerate().map(|(c, s)| (name(s), row[c])).collect()
    }

    /// What the cycle knows about the node at `pos`.
    fn node_report(&self, scratch: &Scratch, pos: usize) -> NodeReport {
        let results = &scratch.results;
        let verdict = results.verdicts[pos].as_ref();
        let feasible = verdict.is_none();
        NodeReport {
            node: self.nodes[pos].name().to_string(),
            feasible,
            reasons: verdict.map(|r| r.rejection.to_string()).into_iter().collect(),
            rejected_by: verdict.map(|r| self.profile.plugin_name(r.plugin.into())),
            code: verdict.map(|r| r.rejection.code),
            scores: if feasible {
                self.plugin_scores(&results.scores[pos * self.columns..])
            } else {
                BTreeMap::new()
            },
            total: feasible.then(|| results.totals[pos]),
            facts: if self.facts { self.node_facts(&self.nodes[pos]) } else { BTreeMap::new() },
        }
    }

    /// Every plugin's facts about `node` for the pod.
    pub fn node_facts(&self, node: &NodeInfo) -> BTreeMap<&'static str, Facts> {
        node_facts(self.profile, self.ctx, self.state, self.pod, node)
    }
}

/// [`PostFilterCluster`] for one search: the cache's pods by node (grouped
/// on first use: a plugin that returns early costs no scan of the pods),
/// and the search's Filter plugins run on copies of nodes.
struct SearchCluster<'s, 'a> {
    search: &'s Search<'a>,
    cache: &'a Cache,
    pods: OnceLock<HashMap<NodeId, Vec<Arc<PodInfo>>>>,
    awaiting_victims: Option<&'a str>,
}

impl<'s, 'a> SearchCluster<'s, 'a> {
    fn new(search: &'s Search<'a>, input: PostFilterInput<'a>) -> Self {
        let awaiting_victims = input.awaiting_victims;
        SearchCluster { search, cache: input.cache, pods: OnceLock::new(), awaiting_victims }
    }

    fn pods_by_node(&self) -> &HashMap<NodeId, Vec<Arc<PodInfo>>> {
        self.pods.get_or_init(|| {
            let mut pods: HashMap<NodeId, Vec<Arc<PodInfo>>> = HashMap::new();
            for cached in self.cache.pods() {
                if let Some(node) = cached.node {
                    pods.entry(node).or_default().push(cached.info.clone());
                }
            }
            // Cache iteration order is a hash map's: sort so plugins see
            // the same order on every run.
            pods.values_mut().for_each(|v| v.sort_by(|a, b| a.key().cmp(b.key())));
            pods
        })
    }
}

impl PostFilterCluster for SearchCluster<'_, '_> {
    fn pods_on(&self, node: &NodeInfo) -> &[Arc<PodInfo>] {
        self.pods_by_node().get(&node.id()).map_or(&[], Vec::as_slice)
    }

    fn fits_without(&self, node: &NodeInfo, removed: &[&PodInfo]) -> Verdict {
        let mut copy = node.clone();
        for pod in removed {
            copy.remove_pod(pod);
        }
        let Search { ctx, state, pod, .. } = *self.search;
        for (filter, _) in &self.search.filters {
            filter.filter_without(ctx, state, pod, &copy, removed)?;
        }
        Ok(())
    }

    fn awaiting_victims_on(&self) -> Option<&str> {
        self.awaiting_victims
    }

    fn may_evict(&self, victim: &PodInfo) -> bool {
        let guards = &self.search.profile.preemption_guards;
        guards.iter().all(|g| g.may_evict(self.search.pod, victim))
    }
}

/// Every plugin's facts about `node` for `pod`.
pub(crate) fn node_facts(
    profile: &Profile,
    ctx: &CycleContext,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> BTreeMap<&'static str, Facts> {
    profile
        .facts
        .iter()
        .filter_map(|p| {
            Some((profile.plugin_name(p.index), p.plugin.node_facts(ctx, state, pod, node)?))
        })
        .collect()
}

/// One chunk's share of the buffers: (chunk index, (((verdicts, scores),
/// totals), nodes)), as rayon's zips hand it over.
type ChunkWork<'a> =
    (usize, (((&'a mut [NodeVerdict], &'a mut [i64]), &'a mut [i64]), &'a [NodeInfo]));

/// When the cached results for `node` go stale by time: the earliest of
/// the profile's Filter and Score plugins' `valid_until`.
fn valid_until(
    profile: &Profile,
    node: &NodeInfo,
    now: kolo_core::clock::Timestamp,
) -> Option<kolo_core::clock::Timestamp> {
    profile.filter_and_score.iter().filter_map(|p| p.valid_until(node, now)).min()
}

/// The number of feasible nodes and the best one, by the same order as
/// [`Search::evaluate`]: (total, tie-break hash, position).
fn best_of(
    name_hashes: &[u64],
    verdicts: &[NodeVerdict],
    totals: &[i64],
    tie_seed: u64,
) -> (usize, Best) {
    let mut feasible = 0;
    let mut top = i64::MIN;
    for (verdict, &total) in verdicts.iter().zip(totals) {
        if verdict.is_none() {
            feasible += 1;
            top = top.max(total);
        }
    }
    // The hash is computed only for the nodes tied at the top.
    let best = (0..name_hashes.len())
        .filter(|&i| verdicts[i].is_none() && totals[i] == top)
        .map(|i| (top, mix(tie_seed ^ name_hashes[i]), i))
        .max();
    (feasible, best)
}

/// Σ weight × score over a node's columns (clamped to 0..=100 first, as
/// kube-scheduler refuses scores outside it).
fn weighted_total(row: &[i64], scorers: &[Scorer<'_>]) -> i64 {
    scorers.iter().enumerate().map(|(c, s)| row[c].clamp(0, 100) * s.weight).sum()
}

/// SplitMix64's finalizer: spreads a hash over all bits.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
