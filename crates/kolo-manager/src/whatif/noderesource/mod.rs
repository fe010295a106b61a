//! What-if batch / mid overcommit (`kolo noderesource`): what batch and mid
//! allocatable would the manager publish for each node of a snapshot, and
//! why.
//!
//! The snapshot's nodes, pods and NodeMetrics go through the manager's own
//! decision code ([`calculate_all`]) with the `colocation-config` of an
//! `slo-controller-config` ConfigMap (a given file, else the one in the
//! snapshot, else the defaults, which disable co-location). Each node's
//! result comes with every term of the formulas, its effective co-location
//! strategy and the NodeMetric spec the manager writes for it.

mod table;

use std::path::{Path, PathBuf};

use kolo_api::crd::NodeMetricSpec;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::snapshot::Snapshot;
use serde::Serialize;

pub use self::table::write_table;
use super::{FindConfigError, FoundConfig, NodeSelection, find_config};
use crate::config::colocation::ResolvedColocation;
use crate::config::{ColocationCfg, ColocationStrategy, ConfigKeyError, parse_key};
use crate::nodemetric::node_metric_spec;
use crate::noderesource::explain::{Units, explain};
use crate::noderesource::{
    BatchTerms, CpuMem, ExtendedResources, MidTerms, NodeResource, ResetReason, calculate_all,
    significant_change,
};

/// Why the evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum NoderesourceError {
    /// The ConfigMap could not be found.
    #[error(transparent)]
    FindConfig(#[from] FindConfigError),
    /// The ConfigMap's `colocation-config` key is malformed or invalid.
    #[error("ConfigMap {configmap} ({origin}): {error}")]
    Config {
        /// `namespace/name`.
        configmap: String,
        /// Where it came from.
        origin: String,
        /// The key, the JSON path and what is wrong.
        error: ConfigKeyError,
    },
}

/// The JSON report (documented in `docs/cli.md`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The evaluation time (RFC 3339).
    pub now: String,
    /// Where it came from: `--now`, `newest NodeMetric updateTime` or
    /// `system clock`.
    pub now_source: &'static str,
    /// The configuration used.
    pub config: ConfigInfo,
    /// One entry per node, in snapshot order.
    pub nodes: Vec<NodeReport>,
}

/// The configuration a run used.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigInfo {
    /// Where `colocation-config` came from.
    pub source: String,
    /// Whether co-location is enabled at the cluster level (after `--enable`).
    pub enabled: bool,
    /// Whether `--enable` forced it on.
    pub forced: bool,
}

/// Amounts of one tier; `null` when not published.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Tier {
    /// Milli-cores.
    pub cpu: Option<i64>,
    /// Bytes.
    pub memory: Option<i64>,
}

/// The batch and mid amounts of a node's status.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Tiers {
    /// `batch-cpu` / `batch-memory`.
    pub batch: Tier,
    /// `mid-cpu` / `mid-memory`.
    pub mid: Tier,
}

impl From<&ExtendedResources> for Tiers {
    fn from(r: &ExtendedResources) -> Tiers {
        Tiers {
            batch: Tier { cpu: r.batch_cpu, memory: r.batch_memory },
            mid: Tier { cpu: r.mid_cpu, memory: r.mid_memory },
        }
    }
}

/// Every term, by tier.
#[derive(Debug, Serialize)]
pub struct Terms {
    /// The batch terms; `null` when not computed.
    pub batch: Option<BatchTerms>,
    /// The mid terms; `null` when not computed.
    pub mid: Option<MidTerms>,
}

/// One node's result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// The node's name.
    pub node: String,
    /// `computed`, `disabled` or `degraded`.
    pub state: &'static str,
    /// Whether the resources are withdrawn because the metrics cannot be
    /// trusted (missing, stale, malformed) or the node has no capacity.
    pub degraded: bool,
    /// Why batch and mid are withdrawn, in words; `null` when computed.
    pub reason: Option<String>,
    /// The same, structured (`{"kind": "staleNodeMetric", ...}`).
    pub reset: Option<ResetReason>,
    /// Published batch amounts (`null` when withdrawn).
    pub batch: Option<CpuMem>,
    /// Published mid amounts (`null` when withdrawn).
    pub mid: Option<CpuMem>,
    /// What the node's status holds now.
    pub current: Tiers,
    /// Why the status would be rewritten right away (a resource appears,
    /// disappears or moves by more than `resourceDiffThreshold`); `null`
    /// when the change is within the threshold.
    pub change: Option<String>,
    /// The JSON merge patch of the node's `status` that publishes the result.
    pub patch: serde_json::Value,
    /// Every term of the formulas.
    pub terms: Terms,
    /// The node's effective co-location strategy: the cluster's, the first
    /// matching `nodeConfigs` entry, the `colocation-strategy` annotation
    /// and the `*-reclaim-ratio` labels, layered over the defaults.
    pub strategy: ColocationStrategy,
    /// The NodeMetric spec the manager writes for the node (its agent's
    /// collect policy): from the strategy when co-location is enabled for
    /// the node, else the defaults.
    pub node_metric_spec: NodeMetricSpec,
    /// The formulas with their numbers (exact units).
    pub formulas: Vec<String>,
    /// Malformed annotations / labels that were skipped.
    pub warnings: Vec<String>,
}

/// What an evaluation was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The file holding the ConfigMap; none means the snapshot's.
    pub config: Option<PathBuf>,
    /// Evaluate as if `colocation-config` had `"enable": true` at the
    /// cluster level (nodes that disable it themselves stay disabled).
    pub enable: bool,
    /// The time to evaluate at; none means the newest NodeMetric
    /// `status.updateTime`, else the system clock.
    pub now: Option<Timestamp>,
    /// The nodes to evaluate.
    pub nodes: NodeSelection,
}

/// A finished evaluation.
#[derive(Debug)]
pub struct Evaluation {
    /// The report.
    pub report: Report,
    /// The manager's result for each reported node, in the same order.
    pub results: Vec<NodeResource>,
}

impl Evaluation {
    /// Every warning of every node.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.results.iter().flat_map(|r| &r.warnings)
    }
}

/// Runs the manager's decision code on the snapshot's selected nodes.
pub fn evaluate(snapshot: &Snapshot, options: &Options) -> Result<Evaluation, NoderesourceError> {
    let (mut cfg, source) = load_config(options.config.as_deref(), snapshot)?;
    if options.enable {
        cfg.cluster.enable = Some(true);
    }
    let colocation = ResolvedColocation::resolve(&cfg);
    let (now, now_source) = snapshot.what_if_now(options.now);
    let nodes: Vec<&NodeView> =
        snapshot.nodes.iter().map(|n| &n.view).filter(|v| options.nodes.wants(v.name())).collect();
    let results = calculate_all(
        nodes.iter().copied(),
        snapshot.pods.iter().map(|p| &p.view),
        &snapshot.node_metrics,
        &colocation,
        now,
    );
    let report = Report {
        now: now.to_string(),
        now_source: now_source.describe(),
        config: ConfigInfo {
            source,
            enabled: colocation.cluster.is_enabled(),
            forced: options.enable,
        },
        nodes: nodes.iter().zip(&results).map(|(view, result)| node_report(view, result)).collect(),
    };
    Ok(Evaluation { report, results })
}

/// The `colocation-config` to use and a description of where it came from.
fn load_config(
    path: Option<&Path>,
    snapshot: &Snapshot,
) -> Result<(ColocationCfg, String), NoderesourceError> {
    let Some(FoundConfig { configmap, name, origin }) = find_config(path, snapshot)? else {
        return Ok((
            ColocationCfg::default(),
            "built-in defaults (no slo-controller-config ConfigMap)".to_string(),
        ));
    };
    match parse_key::<ColocationCfg>(configmap.data.as_ref()) {
        Ok(Some(cfg)) => Ok((cfg, format!("ConfigMap {name} from {origin}"))),
        Ok(None) => Ok((
            ColocationCfg::default(),
            format!("ConfigMap {name} from {origin} (no colocation-config key: defaults)"),
        )),
        Err(error) => Err(NoderesourceError::Config { configmap: name, origin, error }),
    }
}

fn node_report(view: &NodeView, r: &NodeResource) -> NodeReport {
    let current = ExtendedResources::from_status(view);
    let threshold = r.strategy.diff_threshold();
    let (state, degraded) = match &r.reset {
        None => ("computed", false),
        Some(reason) if reason.is_degraded() => ("degraded", true),
        Some(_) => ("disabled", false),
    };
    NodeReport {
        node: r.node.clone(),
        state,
        degraded,
        reason: r.reset.as_ref().map(ToString::to_string),
        reset: r.reset.clone(),
        batch: r.batch.as_ref().map(|b| b.result),
        mid: r.mid.as_ref().map(|m| m.result),
        current: Tiers::from(&current),
        change: significant_change(&current, &r.resources, threshold).map(|c| c.to_string()),
        patch: r.resources.status_patch(),
        terms: Terms { batch: r.batch.clone(), mid: r.mid.clone() },
        strategy: r.strategy.clone(),
        node_metric_spec: node_metric_spec(Some(&r.strategy)),
        formulas: explain(r, Units::Exact),
        warnings: r.warnings.clone(),
    }
}
