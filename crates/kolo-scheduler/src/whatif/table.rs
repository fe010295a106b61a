//! The what-if run as a table for people.

use std::collections::BTreeMap;
use std::io::Write;

use super::Run;
use crate::scheduler::NodeReport;

/// `A=1 B=2`.
fn compact_scores(scores: &BTreeMap<&'static str, i64>) -> String {
    scores.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Writes the run as a table: a header with the time used, one row per
/// pod, the explain sections indented under their pod, and a summary line.
pub fn write_table(run: &Run, out: &mut impl Write) -> std::io::Result<()> {
    let report = &run.report;
    writeln!(
        out,
        "Scheduling {} pending pod(s) on {} node(s) at {} ({})",
        report.summary.pods,
        run.nodes,
        report.now,
        run.now_source.describe()
    )?;
    if report.summary.skipped > 0 {
        writeln!(
            out,
            "Skipped {} pending pod(s) of other schedulers (--all schedules them too)",
            report.summary.skipped
        )?;
    }
    writeln!(out)?;
    let pod_width = report.pods.iter().map(|p| p.pod.len()).max().unwrap_or(0).max(3);
    let node_width =
        report.pods.iter().map(|p| p.node.as_deref().map_or(6, str::len)).max().unwrap_or(0).max(6);
    writeln!(out, "{:<pod_width$}  {:<node_width$}  {:>5}  DETAILS", "POD", "NODE", "SCORE")?;
    for pod in &report.pods {
        let node = pod.node.as_deref().unwrap_or("<none>");
        let score = pod.total.map_or("-".to_string(), |t| t.to_string());
        let details = match &pod.message {
            Some(message) => message.clone(),
            // Bound once its gang was complete: its own cycle ended at
            // Permit, before scores were kept.
            None if pod.held => "held at Permit, bound with its gang".to_string(),
            None => compact_scores(&pod.scores),
        };
        writeln!(out, "{:<pod_width$}  {node:<node_width$}  {score:>5}  {details}", pod.pod)?;
        write_nodes(&pod.nodes, out)?;
    }
    writeln!(out)?;
    let s = &report.summary;
    let ms = run.elapsed.as_secs_f64() * 1000.0;
    let rate = if run.elapsed.is_zero() {
        "-".to_string()
    } else {
        format!("{:.0}", s.pods as f64 / run.elapsed.as_secs_f64())
    };
    writeln!(
        out,
        "{} pods: {} scheduled, {} unschedulable; evaluated in {ms:.1} ms ({rate} pods/s)",
        s.pods, s.scheduled, s.unschedulable
    )
}

/// The explain section under a pod: one line per node.
fn write_nodes(nodes: &[NodeReport], out: &mut impl Write) -> std::io::Result<()> {
    let width = nodes.iter().map(|n| n.node.len()).max().unwrap_or(0);
    for node in nodes {
        let name = &node.node;
        if node.feasible {
            let total = node.total.map_or("-".to_string(), |t| t.to_string());
            writeln!(out, "    {name:<width$}  total={total}  {}", compact_scores(&node.scores))?;
        } else {
            let by = node.rejected_by.unwrap_or("?");
            writeln!(out, "    {name:<width$}  rejected by {by}: {}", node.reasons.join("; "))?;
        }
    }
    Ok(())
}
