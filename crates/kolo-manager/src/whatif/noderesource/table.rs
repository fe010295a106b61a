//! The evaluation as tables for people, in cores and GiB.

use std::io::{self, Write};

use kolo_api::crd::NodeMetricCollectPolicy;

use super::Evaluation;
use crate::noderesource::explain::{Units, explain};
use crate::noderesource::{BatchTerms, CpuMem, MidMode, MidTerms};

const U: Units = Units::Human;

fn opt_cpu(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |v| U.cpu(v))
}

fn opt_mem(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |v| U.memory(v))
}

/// Writes the summary table, and unless `summary_only` each node's terms.
pub fn write_table(
    evaluation: &Evaluation,
    summary_only: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let Evaluation { report, results } = evaluation;
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
