//! One pool's round (spec §9.2): measure, threshold and classify the
//! pool's nodes, apply the stop conditions and the anomaly filter, then the
//! node and prod eviction passes.

use std::collections::HashSet;

use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::resources::{ResourceName, ResourceVector};
use kolo_scheduler::plugins::load_aware::estimator::estimate_node;

use super::LowNodeLoad;
use super::args::NodePool;
use super::classify::classify;
use super::evict::{PassEnv, PassIo, run};
use super::report::{NodeClass, NodeReport, PoolReport, ResourceUsage};
use super::score::node_score;
use super::thresholds::{Averages, NodeThresholds, PoolPercents, effective};
use super::usage::{Measured, measure};
use crate::cluster::Cluster;
use crate::evictor::Evictor;

/// One node of the pool during a round.
#[derive(Debug, Clone)]
pub struct NodeState<'a> {
    /// The node.
    pub view: &'a NodeView,
    /// Raw allocatable (annotation over `status.allocatable`).
    pub alloc: ResourceVector,
    /// Usage, prod usage, pods; `None` without a usable report.
    pub measured: Option<Measured<'a>>,
    /// Why `measured` is `None`.
    pub note: &'static str,
    /// Current usage (lowered by evictions, raised by the fill).
    pub usage: ResourceVector,
    /// Current prod usage.
    pub prod_usage: ResourceVector,
    /// Thresholds.
    pub thresholds: NodeThresholds,
    /// Class.
    pub class: NodeClass,
}

/// The nodes of each class, as indices in pool order.
#[derive(Debug, Default)]
struct Classes {
    low: Vec<usize>,
    both_low: Vec<usize>,
    prod_low: Vec<usize>,
    prod_high: Vec<usize>,
    sources: Vec<usize>,
}

impl LowNodeLoad {
    /// Runs pool `index`; nodes in `processed` are skipped and the pool's
    /// sources are added to it.
    pub(super) fn run_pool(
        &mut self,
        index: usize,
        cluster: &Cluster,
        evictor: &mut dyn Evictor,
        now: Timestamp,
        processed: &mut HashSet<String>,
    ) -> PoolReport {
        let pool = self.pools[index].clone();
        let percents = PoolPercents::complete(&pool);
        let mut states = self.measure_pool(&pool, &percents, cluster, processed, now);
        let averages = percents.deviation.then(|| {
            let measured: Vec<&NodeState> =
                states.iter().filter(|s| s.measured.is_some()).collect();
            Averages::of(
                &percents.resources,
                measured.iter().map(|s| (&s.alloc, &s.usage, &s.prod_usage)),
            )
        });
        let r = &percents.resources;
        let mut classes = Classes::default();
        for (i, s) in states.iter_mut().enumerate().filter(|(_, s)| s.measured.is_some()) {
            s.thresholds = NodeThresholds::of(&percents, &s.alloc, averages.as_ref());
            s.class =
                classify(!s.view.is_unschedulable(), &s.usage, &s.prod_usage, &s.thresholds, r);
            match s.class {
                NodeClass::Low => classes.low.push(i),
                NodeClass::BothLow => classes.both_low.push(i),
                NodeClass::ProdLow => classes.prod_low.push(i),
                NodeClass::ProdHigh => classes.prod_high.push(i),
                NodeClass::Source => classes.sources.push(i),
                NodeClass::Normal | NodeClass::NoMetric => {}
            }
        }
        let mut nodes: Vec<NodeReport> = states.iter().map(|s| node_report(s, r)).collect();
        let mut report = PoolReport {
            pool: pool.name.clone(),
            nodes: Vec::new(),
            candidates: Vec::new(),
            stopped: String::new(),
        };
        let order = self.decide(
            &pool,
            &percents,
            averages.as_ref(),
            &mut states,
            &classes,
            &mut nodes,
            &mut report,
            evictor,
            now,
        );
        if report.stopped.is_empty() {
            processed.extend(
                classes
                    .sources
                    .iter()
                    .chain(&classes.prod_high)
                    .map(|&i| states[i].view.name().to_owned()),
            );
        }
        // Sources first in processing order, then the rest by name.
        let mut taken = vec![false; nodes.len()];
        let mut ordered: Vec<NodeReport> = Vec::with_capacity(nodes.len());
        for &i in &order {
            if !taken[i] {
                taken[i] = true;
                ordered.push(nodes[i].clone());
            }
        }
        let mut rest: Vec<NodeReport> =
            nodes.into_iter().zip(taken).filter(|(_, t)| !t).map(|(n, _)| n).collect();
        rest.sort_by(|a, b| a.node.cmp(&b.node));
        ordered.extend(rest);
        report.nodes = ordered;
        report
    }

    fn measure_pool<'a>(
        &self,
        pool: &NodePool,
        percents: &PoolPercents,
        cluster: &'a Cluster,
        processed: &HashSet<String>,
        now: Timestamp,
    ) -> Vec<NodeState<'a>> {
        let expiration = self.args.node_metric_expiration_seconds;
        cluster
            .nodes()
            .iter()
            .filter(|n| !processed.contains(n.name()))
            .filter(|n| pool.selector.as_ref().is_none_or(|s| s.matches(n.labels())))
            .map(|view| {
                let alloc = estimate_node(view).allocatable;
                let (measured, note) =
                    match measure(cluster, view, &percents.resources, expiration, now) {
                        Ok(m) => (Some(m), ""),
                        Err(note) => (None, note),
                    };
                let usage = measured.as_ref().map(|m| m.usage).unwrap_or_default();
                let prod_usage = measured.as_ref().map(|m| m.prod_usage).unwrap_or_default();
                NodeState {
                    view,
                    alloc,
                    measured,
                    note,
                    usage,
                    prod_usage,
                    thresholds: NodeThresholds::default(),
                    class: NodeClass::NoMetric,
                }
            })
            .collect()
    }

    /// Steps 6–10; returns the processed sources (node pass, then prod
    /// pass) in order.
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &mut self,
        pool: &NodePool,
        percents: &PoolPercents,
        averages: Option<&Averages>,
        states: &mut [NodeState<'_>],
        classes: &Classes,
        nodes: &mut [NodeReport],
        report: &mut PoolReport,
        evictor: &mut dyn Evictor,
        now: Timestamp,
    ) -> Vec<usize> {
        if classes.sources.is_empty() && classes.prod_high.is_empty() {
            report.stopped = "no source nodes".into();
            return Vec::new();
        }
        let cond = &pool.anomaly;
        let bypass = cond.consecutive_abnormalities == 1;
        let mut abnormal = |list: &[usize], prod: bool, this: &mut LowNodeLoad| -> Vec<usize> {
            let detectors = if prod { &mut this.prod_detectors } else { &mut this.detectors };
            let out: Vec<usize> = list
                .iter()
                .copied()
                .filter(|&i| bypass || detectors.mark_abnormal(states[i].view.name(), cond, now))
                .collect();
            for &i in list {
                nodes[i].abnormal = Some(out.contains(&i));
            }
            out
        };
        let mut sources = abnormal(&classes.sources, false, self);
        let mut prod_sources = abnormal(&classes.prod_high, true, self);
        if sources.is_empty() && prod_sources.is_empty() {
            report.stopped = "no abnormal nodes".into();
            return Vec::new();
        }
        let lows = classes.low.len() + classes.both_low.len() + classes.prod_low.len();
        if lows == 0 {
            report.stopped = "no low nodes".into();
            return Vec::new();
        }
        for &i in classes.low.iter().chain(&classes.both_low).chain(&classes.prod_low) {
            self.detectors.reset(states[i].view.name());
            self.prod_detectors.reset(states[i].view.name());
        }
        let number = usize::try_from(self.args.number_of_nodes).unwrap_or(0);
        if lows <= number {
            report.stopped = format!("low nodes {lows} <= numberOfNodes {number}");
            return Vec::new();
        }
        if lows == states.len() {
            report.stopped = "all nodes are low".into();
            return Vec::new();
        }
        let r = &percents.resources;
        let weights = &pool.weights;
        for (list, prod) in [(&mut sources, false), (&mut prod_sources, true)] {
            let score = |i: usize| {
                let s = &states[i];
                let used = if prod { &s.prod_usage } else { &s.usage };
                node_score(used, &s.alloc, &with_pods(r), weights)
            };
            let mut scored: Vec<(i64, usize)> = list.iter().map(|&i| (score(i), i)).collect();
            scored.sort_by(|a, b| {
                b.0.cmp(&a.0).then_with(|| states[a.1].view.name().cmp(states[b.1].view.name()))
            });
            for &(sc, i) in &scored {
                nodes[i].score = Some(sc);
            }
            *list = scored.into_iter().map(|(_, i)| i).collect();
        }
        self.passes(
            pool,
            percents,
            averages,
            states,
            classes,
            (&sources, &prod_sources),
            report,
            evictor,
        );
        for &i in &sources {
            self.detectors.mark_normal(states[i].view.name(), cond, now);
        }
        for &i in &prod_sources {
            self.prod_detectors.mark_normal(states[i].view.name(), cond, now);
        }
        sources.into_iter().chain(prod_sources).collect()
    }

    /// The node pass, then the prod pass with its share of the both-low
    /// headroom.
    #[allow(clippy::too_many_arguments)]
    fn passes(
        &mut self,
        pool: &NodePool,
        percents: &PoolPercents,
        averages: Option<&Averages>,
        states: &mut [NodeState<'_>],
        classes: &Classes,
        (sources, prod_sources): (&[usize], &[usize]),
        report: &mut PoolReport,
        evictor: &mut dyn Evictor,
    ) {
        let r = &percents.resources;
        let high_percents: Vec<(f64, f64)> = percents
            .percents
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let pct = |low, high, mean: Option<f64>| {
                    effective(low, high, mean).map_or(100.0, |(_, h)| h)
                };
                (
                    pct(p.low, p.high, averages.map(|a| a.node[i])),
                    pct(p.prod_low, p.prod_high, averages.map(|a| a.prod[i])),
                )
            })
            .collect();
        let headroom = |list: &[usize], states: &[NodeState<'_>], prod: bool| {
            let mut total = zero(r);
            for &i in list {
                let s = &states[i];
                let (high, used) = if prod {
                    (&s.thresholds.prod_high, &s.prod_usage)
                } else {
                    (&s.thresholds.high, &s.usage)
                };
                for &res in r {
                    total.set(
                        res,
                        total
                            .value(res)
                            .saturating_add(high.value(res).saturating_sub(used.value(res))),
                    );
                }
            }
            total
        };
        let only_low = headroom(&classes.low, states, false);
        let mut both_node = headroom(&classes.both_low, states, false);
        let prod_only = headroom(&classes.prod_low, states, true);
        let both_prod = headroom(&classes.both_low, states, true);
        let mut node_total = only_low.saturating_add(&both_node);
        let mut requested = vec![None; states.len()];
        let filter = self.filter.clone();
        let mut env = PassEnv {
            resources: r,
            weights: &pool.weights,
            high_percents: &high_percents,
            node_fit: self.args.node_fit,
            dry_run: self.args.dry_run,
            prod: false,
        };
        let targets: Vec<usize> = classes.low.iter().chain(&classes.both_low).copied().collect();
        let mut io = PassIo {
            states,
            requested: &mut requested,
            evictor,
            filter: &filter,
            detectors: &mut self.detectors,
            report: &mut report.candidates,
        };
        run(&env, &mut io, sources, &targets, &mut node_total);
        // What is left of the both-low headroom after the node pass.
        both_node = both_node.min(&node_total);
        let mut prod_total = prod_only.saturating_add(&both_prod.min(&both_node));
        env.prod = true;
        let prod_targets: Vec<usize> =
            classes.prod_low.iter().chain(&classes.both_low).copied().collect();
        io.detectors = &mut self.prod_detectors;
        run(&env, &mut io, prod_sources, &prod_targets, &mut prod_total);
    }
}

fn zero(resources: &[ResourceName]) -> ResourceVector {
    resources.iter().fold(ResourceVector::EMPTY, |v, &r| v.with(r, 0))
}

fn with_pods(resources: &[ResourceName]) -> Vec<ResourceName> {
    let mut out = resources.to_vec();
    if !out.contains(&ResourceName::Pods) {
        out.push(ResourceName::Pods);
    }
    out
}

fn node_report(s: &NodeState<'_>, resources: &[ResourceName]) -> NodeReport {
    let usage = if s.measured.is_none() {
        Vec::new()
    } else {
        resources
            .iter()
            .map(|&r| ResourceUsage {
                resource: r.as_str().to_owned(),
                used: s.usage.value(r),
                allocatable: s.alloc.value(r),
                low: s.thresholds.low.value(r),
                high: s.thresholds.high.value(r),
                prod_used: s.prod_usage.value(r),
                prod_low: s.thresholds.prod_low.value(r),
                prod_high: s.thresholds.prod_high.value(r),
            })
            .collect()
    };
    NodeReport {
        node: s.view.name().to_owned(),
        class: s.class,
        note: s.note.to_owned(),
        usage,
        abnormal: None,
        score: None,
    }
}
