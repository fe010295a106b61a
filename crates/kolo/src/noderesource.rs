//! `kolo noderesource`: what batch and mid allocatable would kolo's manager
//! publish for each node of a snapshot, and why.
//!
//! The snapshot's nodes, pods and NodeMetrics go through the manager's own
//! decision code ([`kolo_manager::noderesource::calculate_all`]) with the
//! `colocation-config` of an `slo-controller-config` ConfigMap (`--config`,
//! else the one in the snapshot, else the defaults, which disable
//! co-location). Each node's result comes with every term of the formulas,
//! its effective co-location strategy and the NodeMetric spec the manager
//! writes for it. Nothing is written anywhere.

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;

use kolo_api::crd::{NodeMetricCollectPolicy, NodeMetricSpec};
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::snapshot::Snapshot;
use kolo_manager::config::colocation::ResolvedColocation;
use kolo_manager::config::{ColocationCfg, ColocationStrategy, ConfigKeyError, parse_key};
use kolo_manager::nodemetric::node_metric_spec;
use kolo_manager::noderesource::explain::{Units, explain};
use kolo_manager::noderesource::{
    BatchTerms, CpuMem, ExtendedResources, MidMode, MidTerms, NodeResource, ResetReason,
    calculate_all, significant_change,
};
use serde::Serialize;

use crate::slo_config::{FindConfigError, FoundConfig, SloInputError, SloInputs, find_config};

/// Arguments of `kolo noderesource`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The snapshot, the ConfigMap, the nodes.
    #[command(flatten)]
    pub inputs: SloInputs,
    /// Evaluate as if `colocation-config` had `"enable": true` at the
    /// cluster level (nodes that disable it themselves stay disabled).
    #[arg(long)]
    pub enable: bool,
    /// The time to evaluate at (RFC 3339); default: the newest NodeMetric
    /// `status.updateTime` in the snapshot, else the system clock.
    #[arg(long, value_name = "RFC3339", value_parser = crate::schedule::parse_now)]
    pub now: Option<Timestamp>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Table output: only the summary table, not each node's terms.
    #[arg(long)]
    pub summary: bool,
}

/// How `kolo noderesource` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table for people, in cores and GiB (`-o text` works too).
    #[value(alias = "text")]
    Table,
    /// JSON for programs, exact integers (milli-cores, bytes).
    Json,
}

/// Why `kolo noderesource` could not run.
#[derive(Debug, thiserror::Error)]
pub enum NoderesourceError {
    /// The snapshot could not be loaded, or `--node` is unknown.
    #[error(transparent)]
    Inputs(#[from] SloInputError),
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
    /// Output could not be written.
    #[error("writing output: {0}")]
    Io(#[from] io::Error),
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

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), Box<dyn Error + Send + Sync>> {
    match run_inner(args, out) {
        // The reader went away (`| head`): nothing left to tell anyone.
        Err(NoderesourceError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Into::into),
    }
}

fn run_inner(args: &Args, out: &mut dyn Write) -> Result<(), NoderesourceError> {
    let snapshot = args.inputs.load()?;
    let (mut cfg, source) = load_config(args.inputs.config.as_deref(), &snapshot)?;
    if args.enable {
        cfg.cluster.enable = Some(true);
    }
    let colocation = ResolvedColocation::resolve(&cfg);
    let (now, now_source) = match (args.now, crate::schedule::default_now(&snapshot)) {
        (Some(now), _) => (now, "--now"),
        (None, Some(now)) => (now, "newest NodeMetric updateTime"),
        (None, None) => (Timestamp::now(), "system clock"),
    };
    let nodes: Vec<&NodeView> =
        snapshot.nodes.iter().map(|n| &n.view).filter(|v| args.inputs.wants(v.name())).collect();
    let results = calculate_all(
        nodes.iter().copied(),
        snapshot.pods.iter().map(|p| &p.view),
        &snapshot.node_metrics,
        &colocation,
        now,
    );
    let mut stderr = io::stderr().lock();
    for warning in results.iter().flat_map(|r| &r.warnings) {
        // Warnings never abort; a closed stderr is no reason to fail either.
        let _ = writeln!(stderr, "kolo: warning: {warning}");
    }
    let report = Report {
        now: now.to_string(),
        now_source,
        config: ConfigInfo {
            source,
            enabled: colocation.cluster.is_enabled(),
            forced: args.enable,
        },
        nodes: nodes.iter().zip(&results).map(|(view, result)| node_report(view, result)).collect(),
    };
    match args.output {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report).map_err(io::Error::from)?;
            writeln!(out)?;
        }
        Format::Table => write_table(&report, &results, args.summary, out)?,
    }
    Ok(())
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

const U: Units = Units::Human;

fn opt_cpu(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |v| U.cpu(v))
}

fn opt_mem(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |v| U.memory(v))
}

fn write_table(
    report: &Report,
    results: &[NodeResource],
    summary_only: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "Batch and mid allocatable of {} node(s) at {} ({})",
        report.nodes.len(),
        report.now,
        report.now_source
    )?;
    writeln!(out, "Configuration: {}", report.config.source)?;
    if !report.config.enabled {
        writeln!(
            out,
            "Co-location is DISABLED in this configuration (colocation-config \"enable\" is \
             false or unset), so every node's batch and mid resources are withdrawn. \
             Use --enable to see what they would be."
        )?;
    } else if report.config.forced {
        writeln!(out, "Co-location enabled by --enable.")?;
    }
    writeln!(
        out,
        "CPU in cores, memory in GiB; `-o json` has the exact integers. Nothing is written."
    )?;
    writeln!(out)?;
    let width = report.nodes.iter().map(|n| n.node.len()).max().unwrap_or(0).max(4);
    writeln!(
        out,
        "{:<width$}  {:>9}  {:>9}  {:>9}  {:>9}  STATUS",
        "NODE", "BATCH-CPU", "BATCH-MEM", "MID-CPU", "MID-MEM"
    )?;
    for n in &report.nodes {
        let status = match (&n.reason, &n.change) {
            (Some(reason), _) => reason.clone(),
            (None, Some(change)) => format!("computed; update due: {change}"),
            (None, None) => "computed".to_string(),
        };
        writeln!(
            out,
            "{:<width$}  {:>9}  {:>9}  {:>9}  {:>9}  {status}",
            n.node,
            opt_cpu(n.batch.map(|b| b.cpu)),
            opt_mem(n.batch.map(|b| b.memory)),
            opt_cpu(n.mid.map(|m| m.cpu)),
            opt_mem(n.mid.map(|m| m.memory)),
        )?;
    }
    if summary_only {
        return Ok(());
    }
    for (n, r) in report.nodes.iter().zip(results) {
        writeln!(out)?;
        writeln!(out, "{}", n.node)?;
        if let Some(reason) = &n.reason {
            writeln!(out, "  batch and mid withdrawn: {reason}")?;
        }
        let batch = r.batch.as_ref().map(batch_rows).unwrap_or_default();
        let mid = r.mid.as_ref().map(mid_rows).unwrap_or_default();
        let width = batch.iter().chain(&mid).map(|row| row.0.len() + 2).max().unwrap_or(0);
        if !batch.is_empty() {
            write_rows(out, "batch", &batch, width)?;
        }
        if let Some(m) = &r.mid {
            let mode = match m.mode {
                MidMode::Default(_) => "mid (default mode)",
                MidMode::Static(_) => "mid (static mode)",
            };
            write_rows(out, mode, &mid, width)?;
        }
        if r.reset.is_none() {
            writeln!(out, "  formulas:")?;
            for line in explain(r, U) {
                writeln!(out, "    {line}")?;
            }
        }
        if let Some(policy) = &n.node_metric_spec.metric_collect_policy {
            writeln!(out, "  NodeMetric spec: {}", collect_policy(policy))?;
        }
        let c = &n.current;
        writeln!(
            out,
            "  status now: batch {} cores / {} GiB, mid {} cores / {} GiB{}",
            opt_cpu(c.batch.cpu),
            opt_mem(c.batch.memory),
            opt_cpu(c.mid.cpu),
            opt_mem(c.mid.memory),
            match &n.change {
                Some(change) => format!("; update due: {change}"),
                None => "; no update due (within resourceDiffThreshold)".to_string(),
            }
        )?;
    }
    Ok(())
}

/// A collect policy in words: `report every 60 s, average over 300 s,
/// windows 5m0s 10m0s 30m0s, memory usageWithoutPageCache`.
fn collect_policy(p: &NodeMetricCollectPolicy) -> String {
    let seconds = |v: Option<i64>| v.map_or("-".to_string(), |v| format!("{v} s"));
    let durations = p.node_aggregate_policy.as_ref().and_then(|a| a.durations.as_deref());
    format!(
        "report every {}, average over {}, windows {}, memory {}",
        seconds(p.report_interval_seconds),
        seconds(p.aggregate_duration_seconds),
        durations.map_or("-".to_string(), |d| d.join(" ")),
        p.node_memory_collect_policy.as_deref().unwrap_or("-"),
    )
}

/// (label, cpu, memory) rows.
type Rows = Vec<(String, String, String)>;

fn amounts(label: &str, v: CpuMem) -> (String, String, String) {
    (label.to_string(), U.cpu(v.cpu), U.memory(v.memory))
}

fn percents(label: &str, cpu: Option<i64>, memory: Option<i64>) -> (String, String, String) {
    let p = |v: Option<i64>| v.map_or("-".to_string(), |v| format!("{v}%"));
    (label.to_string(), p(cpu), p(memory))
}

fn batch_rows(b: &BatchTerms) -> Rows {
    let p = &b.pods;
    let mut rows = vec![
        amounts("capacity", b.capacity),
        percents(
            "reclaim threshold",
            Some(b.reclaim_threshold_percent.cpu),
            Some(b.reclaim_threshold_percent.memory),
        ),
        amounts("safety margin", b.safety_margin),
        amounts("kubelet reserved", b.kubelet_reserved),
    ];
    let annotation_label = match b.reserved_cpus {
        Some(n) => format!("annotation reserved ({n} reservedCPUs)"),
        None => "annotation reserved".to_string(),
    };
    rows.push(match b.annotation_reserved {
        Some(a) => amounts(&annotation_label, a),
        None => (annotation_label, "-".into(), "-".into()),
    });
    rows.extend([
        amounts("node reserved = max(kubelet, annotation)", b.node_reserved),
        amounts("system usage", b.system_usage),
        amounts("host apps above batch", b.host_app_used),
        amounts("max(system used, node reserved)", b.sys_used_or_reserved),
        amounts(&format!("HP request ({} pods)", p.high_priority), b.hp_request),
        amounts("HP used", b.hp_used),
        amounts(
            &format!("  of which unmeasured pods ({}, at request)", p.without_metric),
            p.without_metric_request,
        ),
        amounts(&format!("  of which dangling metrics ({})", p.dangling), p.dangling_used),
        amounts("HP max(used, request)", b.hp_max_used_request),
        amounts("by usage", b.by_usage),
        amounts("by request", b.by_request),
        amounts("by maxUsageRequest", b.by_max_usage_request),
        (
            "policy".to_string(),
            b.cpu_policy.as_str().to_string(),
            b.memory_policy.as_str().to_string(),
        ),
        percents(
            "cap (batch*ThresholdPercent)",
            b.threshold_percent.cpu,
            b.threshold_percent.memory,
        ),
    ]);
    if let Some(ratio) = b.cpu_normalization_ratio {
        rows.push(amounts("before cpu normalization", b.capped));
        rows.push(("cpu-normalization-ratio".into(), format!("x{ratio}"), "-".into()));
    }
    rows.push(amounts("batch", b.result));
    rows
}

fn mid_rows(m: &MidTerms) -> Rows {
    let mut rows = vec![amounts("capacity", m.capacity)];
    match &m.mode {
        MidMode::Static(s) => rows.push(percents(
            "static reserved",
            Some(s.reserved_percent.cpu),
            Some(s.reserved_percent.memory),
        )),
        MidMode::Default(d) => {
            rows.push(match d.prod_reclaimable {
                Some(r) => amounts("prodReclaimable", r),
                None => ("prodReclaimable (not reported)".into(), "0.00".into(), "0.00".into()),
            });
            rows.push(match d.node_usage {
                Some(u) => amounts("node usage", u),
                None => ("node usage (incomplete)".into(), "-".into(), "-".into()),
            });
            rows.extend([
                amounts("node unused", d.node_unused),
                amounts("max(min(prodReclaimable, unused), 0)", d.reclaimable),
                amounts("max(node reserved, system used)", d.reserved_or_used),
                amounts("prod requests", d.prod_request),
                amounts("unallocated", d.unallocated),
                percents(
                    "midUnallocatedPercent",
                    Some(d.unallocated_percent),
                    Some(d.unallocated_percent),
                ),
                amounts("from unallocated", d.from_unallocated),
            ]);
        }
    }
    rows.extend([
        amounts("uncapped", m.uncapped),
        percents(
            "cap (mid*ThresholdPercent)",
            Some(m.threshold_percent.cpu),
            Some(m.threshold_percent.memory),
        ),
        amounts("mid", m.result),
    ]);
    rows
}

/// A section of rows under `title`; labels are padded to `width - 2`
/// (they are indented two more than the title).
fn write_rows(out: &mut dyn Write, title: &str, rows: &Rows, width: usize) -> io::Result<()> {
    let width = width.max(title.len()).max(2);
    writeln!(out, "  {title:<width$}  {:>15}  {:>15}", "cpu (cores)", "memory (GiB)")?;
    for (label, cpu, memory) in rows {
        writeln!(out, "    {label:<w$}  {cpu:>15}  {memory:>15}", w = width - 2)?;
    }
    Ok(())
}
