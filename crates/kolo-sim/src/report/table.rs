//! The summary as a table for the terminal: one row per metric, one column
//! per policy, so policies read side by side.

use super::PolicyRun;

/// One row: label and a formatter.
type Row = (&'static str, fn(&PolicyRun) -> String);

const ROWS: &[Row] = &[
    ("CPU utilization, average", |r| pct(r.result.summary.cpu_utilization_avg)),
    ("CPU utilization, p95", |r| pct(r.result.summary.cpu_utilization_p95)),
    ("  of which LS + system (avg)", |r| pct(r.result.summary.ls_only_utilization_avg)),
    ("BE CPU-hours completed", |r| format!("{:.0}", r.result.summary.be_cpu_hours_completed)),
    ("BE CPU-hours used", |r| format!("{:.0}", r.result.summary.be_cpu_hours_used)),
    ("BE pods submitted", |r| r.result.summary.be_pods_submitted.to_string()),
    ("BE pods completed", |r| r.result.summary.be_pods_completed.to_string()),
    ("BE jobs completed", |r| r.result.summary.be_jobs_completed.to_string()),
    ("BE pods evicted", |r| r.result.summary.be_pods_evicted.to_string()),
    ("BE pods OOM-killed", |r| r.result.summary.be_pods_oom_killed.to_string()),
    ("BE pods pending at the end", |r| r.result.summary.be_pods_pending.to_string()),
    ("LS pods (pending at the end)", |r| {
        format!("{} ({})", r.result.summary.ls_pods, r.result.summary.ls_pods_pending)
    }),
    ("LS pods evicted", |r| r.result.summary.ls_pods_evicted.to_string()),
    ("LS starved CPU-seconds", |r| format!("{:.0}", r.result.summary.ls_starved_cpu_seconds)),
    ("  share of LS demand", |r| format!("{:.4}%", r.result.summary.ls_starved_share * 100.0)),
    ("LS latency proxy, p99", |r| format!("{:.3}x", r.result.summary.ls_latency_proxy_p99)),
    ("batch allocatable updates", |r| r.result.summary.allocatable_updates.to_string()),
    ("scheduling decisions", |r| r.result.summary.scheduling_cycles.to_string()),
    ("  per second of wall time", |r| format!("{:.0}", r.decisions_per_second())),
    ("wall time", |r| format!("{:.1} s", r.wall_seconds)),
];

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// The table.
pub fn render(runs: &[PolicyRun]) -> String {
    let label_width = ROWS.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> =
        runs.iter().map(|r| ROWS.iter().map(|(_, f)| f(r)).collect()).collect();
    let widths: Vec<usize> = runs
        .iter()
        .zip(&cells)
        .map(|(r, c)| {
            c.iter().map(String::len).chain([r.result.summary.policy.len()]).max().unwrap_or(0)
        })
        .collect();
    let mut out = format!("{:<label_width$}", "");
    for (r, w) in runs.iter().zip(&widths) {
        out.push_str(&format!("  {:>w$}", r.result.summary.policy));
    }
    out.push('\n');
    for (i, (label, _)) in ROWS.iter().enumerate() {
        out.push_str(&format!("{label:<label_width$}"));
        for (c, w) in cells.iter().zip(&widths) {
            out.push_str(&format!("  {:>w$}", c[i]));
        }
        out.push('\n');
    }
    out
}
