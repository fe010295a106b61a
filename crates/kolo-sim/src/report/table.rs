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
    ("hot node-minutes (over model.hotCpuPercent)", |r| {
        format!("{:.0}", r.result.summary.descheduler.hot_node_minutes)
    }),
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
    let mut rows: Vec<(String, Vec<String>)> =
        ROWS.iter().map(|(label, f)| (label.to_string(), runs.iter().map(f).collect())).collect();
    rows.extend(descheduler_rows(runs));
    rows.extend(job_rows(runs));
    let label_width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let widths: Vec<usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            rows.iter()
                .map(|(_, c)| c[i].len())
                .chain([r.result.summary.policy.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{:<label_width$}", "");
    for (r, w) in runs.iter().zip(&widths) {
        out.push_str(&format!("  {:>w$}", r.result.summary.policy));
    }
    out.push('\n');
    for (label, cells) in &rows {
        out.push_str(&format!("{label:<label_width$}"));
        for (c, w) in cells.iter().zip(&widths) {
            out.push_str(&format!("  {c:>w$}"));
        }
        out.push('\n');
    }
    out
}

/// Rows for the descheduler, when some policy runs one.
fn descheduler_rows(runs: &[PolicyRun]) -> Vec<(String, Vec<String>)> {
    type Summary = crate::descheduler::DeschedulerSummary;
    if runs.iter().all(|r| r.result.summary.descheduler.descheduler_rounds == 0) {
        return Vec::new();
    }
    let cell = |f: &dyn Fn(&Summary) -> String| -> Vec<String> {
        runs.iter().map(|r| f(&r.result.summary.descheduler)).collect()
    };
    vec![
        (
            "descheduler rounds (source nodes seen)".into(),
            cell(&|d| format!("{} ({})", d.descheduler_rounds, d.descheduler_sources)),
        ),
        (
            "  migrations: jobs / succeeded / failed".into(),
            cell(&|d| {
                format!(
                    "{} / {} / {}",
                    d.migration_jobs, d.migrations_succeeded, d.migrations_failed
                )
            }),
        ),
        ("  pods evicted by migrations".into(), cell(&|d| d.migration_evictions.to_string())),
        ("  LS pods disrupted".into(), cell(&|d| d.ls_pods_disrupted.to_string())),
    ]
}

/// Rows for the tenants' quotas and the gangs, when the scenario has them
/// (every policy runs the same scenario, so they all have the same ones).
fn job_rows(runs: &[PolicyRun]) -> Vec<(String, Vec<String>)> {
    let Some(first) = runs.first() else { return Vec::new() };
    fn jobs(r: &PolicyRun) -> &crate::jobs::JobsSummary {
        &r.result.summary.jobs
    }
    let mut rows = Vec::new();
    for (i, t) in first.result.summary.jobs.tenants.iter().enumerate() {
        let tenant = |r: &PolicyRun| jobs(r).tenants.get(i).cloned();
        let cell = |f: &dyn Fn(&crate::jobs::TenantSummary) -> String| {
            runs.iter().map(|r| tenant(r).map_or_else(|| "-".into(), |t| f(&t))).collect()
        };
        rows.push((
            format!(
                "tenant {} (min {}, max {} cores): used cores avg / peak",
                t.name, t.min_cores, t.max_cores
            ),
            cell(&|t| format!("{:.1} / {:.1}", t.used_cores_avg, t.used_cores_peak)),
        ));
        rows.push((
            "  fair share (quota runtime), cores avg".into(),
            cell(&|t| format!("{:.1}", t.fair_share_cores_avg)),
        ));
        rows.push(("  share of batch use".into(), cell(&|t| pct(t.share_of_batch_used))));
        rows.push((
            "  hours below min while waiting".into(),
            cell(&|t| format!("{:.2} of {:.2}", t.hours_below_min_while_waiting, t.hours_waiting)),
        ));
    }
    if first.result.summary.jobs.gangs.is_some() {
        let cell = |f: &dyn Fn(&crate::jobs::GangSummary) -> String| {
            runs.iter().map(|r| jobs(r).gangs.as_ref().map_or_else(|| "-".into(), f)).collect()
        };
        rows.push((
            "gangs placed / submitted".into(),
            cell(&|g| format!("{} / {}", g.placed, g.submitted)),
        ));
        rows.push((
            "  wait p50 / p95 / max".into(),
            cell(&|g| {
                format!(
                    "{:.0} / {:.0} / {:.0} s",
                    g.wait_seconds_p50, g.wait_seconds_p95, g.wait_seconds_max
                )
            }),
        ));
        rows.push(("  half-placed at the end".into(), cell(&|g| g.half_placed_at_end.to_string())));
        rows.push((
            "  pods held at Permit at the end".into(),
            cell(&|g| g.pods_held_at_permit_at_end.to_string()),
        ));
    }
    rows
}
