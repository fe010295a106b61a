//! What-if descheduling (`kolo deschedule --snapshot`): what would one
//! round of kolo's descheduler do with a cluster?
//!
//! [`deschedule`] runs one [`Descheduler::balance`] over a [`Cluster`] and,
//! when the round created PodMigrationJobs, one [`Descheduler::migrate`]
//! over the cluster with those jobs added, to show what the migration
//! controller would do with them next. Nothing is carried out: the actions
//! are only described. [`WhatIf`] is the report (the JSON output, one
//! documented top-level object) and [`write_table`] renders it for people.
//!
//! The JSON object:
//!
//! * `now`, `nowSource`: the time the round ran at (RFC 3339) and where it
//!   came from (`--now`, the newest NodeMetric `updateTime`, the clock);
//! * `dryRun`: the configuration's `dryRun` (evictions are Events only);
//! * `pools`: LowNodeLoad's [`PoolReport`]s as they are serialized
//!   (`pool`, `nodes` with `class`, `usage`, `abnormal`, `score`;
//!   `candidates` with `pod`, `node`, `prod`, `usageScore`, `verdict` and
//!   `detail`; `stopped`);
//! * `migrations`: the PodMigrationJobs the round created, in order
//!   ([`MigrationReport`]);
//! * `controller`: what the migration controller's next pass would do
//!   ([`ControllerStep`]);
//! * `events`: the Events the round recorded ([`EventReport`]);
//! * `summary`: counts ([`Summary`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use kolo_api::crd::PodMigrationJob;
use kolo_core::clock::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use crate::cluster::Cluster;
use crate::descheduler::Descheduler;
use crate::low_node_load::{CandidateVerdict, NodeReport, PoolReport};
use crate::migration::job::spec_reservation;
use crate::plan::{Action, Event};

/// The annotation a migration job carries its eviction reason in.
pub const EVICT_REASON_ANNOTATION: &str = "koordinator.sh/evict-reason";
/// The annotation naming the plugin that asked for the migration.
pub const EVICT_TRIGGER_ANNOTATION: &str = "koordinator.sh/evict-trigger";

/// The whole what-if report (the JSON output).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// The time the round ran at (RFC 3339).
    pub now: String,
    /// Where `now` came from (`--now`, `newest NodeMetric updateTime`,
    /// `system clock`).
    pub now_source: String,
    /// Whether the configuration is a dry run (Events only, no jobs).
    pub dry_run: bool,
    /// Per node pool, what LowNodeLoad saw and chose.
    pub pools: Vec<PoolReport>,
    /// The PodMigrationJobs the round created, in order.
    pub migrations: Vec<MigrationReport>,
    /// What the migration controller's next pass would do with them.
    pub controller: Vec<ControllerStep>,
    /// The Events the round recorded.
    pub events: Vec<EventReport>,
    /// Counts.
    pub summary: Summary,
}

/// One PodMigrationJob the round created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationReport {
    /// The job's name (or its `generateName` prefix).
    pub job: String,
    /// The pod to move (`namespace/name`).
    pub pod: String,
    /// The node it runs on.
    pub node: String,
    /// `spec.mode` (`ReservationFirst` or `EvictDirectly`; empty: the
    /// controller's default).
    pub mode: String,
    /// The plugin that asked (`koordinator.sh/evict-trigger`).
    pub trigger: String,
    /// Why (`koordinator.sh/evict-reason`).
    pub reason: String,
}

/// One action of the migration controller's next pass, described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerStep {
    /// The action: `createJob`, `setJobSpec`, `setJobStatus`, `deleteJob`,
    /// `createReservation`, `deleteReservation`, `evict`, `event`.
    pub action: String,
    /// The job it belongs to, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// One line: what it does.
    pub detail: String,
}

/// One Event the round recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventReport {
    /// `Kind namespace/name` of the object it is about.
    pub regarding: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// Counts over the round.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Pods in the cluster.
    pub pods: usize,
    /// Nodes per class, over every pool (class name → count).
    pub classes: BTreeMap<String, usize>,
    /// Candidates per verdict (`evicted`, `filtered`, `noMetric`, `noFit`,
    /// `notReached`, `refused` → count).
    pub verdicts: BTreeMap<String, usize>,
    /// PodMigrationJobs created.
    pub migrations: usize,
}

/// Runs one Balance round of `descheduler` over `cluster` at `now` and, if
/// it created jobs, one migration pass over the cluster with them; returns
/// the report (`now_source` says where `now` came from).
pub fn deschedule(
    descheduler: &mut Descheduler,
    cluster: &Cluster,
    now: Timestamp,
    now_source: &str,
) -> WhatIf {
    let round = descheduler.balance(cluster, now);
    let mut created: Vec<Arc<PodMigrationJob>> = Vec::new();
    let mut events = Vec::new();
    for action in &round.actions {
        match action {
            Action::CreateJob(job) => created.push(Arc::new((**job).clone())),
            Action::Event(event) => events.push(event_report(event)),
            _ => {}
        }
    }
    let migrations = created.iter().map(|job| migration_report(job, cluster)).collect();
    let controller = if created.is_empty() {
        Vec::new()
    } else {
        let jobs = cluster.jobs().iter().cloned().chain(created.iter().cloned());
        let with_jobs = cluster.clone().with_jobs(jobs);
        descheduler.migrate(&with_jobs, now).iter().map(controller_step).collect()
    };
    let summary = summarize(cluster, &round.pools, created.len());
    WhatIf {
        now: now.to_string(),
        now_source: now_source.to_string(),
        dry_run: descheduler.is_dry_run(),
        pools: round.pools,
        migrations,
        controller,
        events,
        summary,
    }
}

/// The name a job goes by: its name, else its `generateName` prefix.
fn job_name(job: &PodMigrationJob) -> String {
    let name = job.name_any();
    if name.is_empty() { job.metadata.generate_name.clone().unwrap_or_default() } else { name }
}

fn migration_report(job: &PodMigrationJob, cluster: &Cluster) -> MigrationReport {
    let annotation = |key: &str| job.annotations().get(key).cloned().unwrap_or_default();
    let pod_ref = job.spec.pod_ref.as_ref();
    let pod = pod_ref
        .map(|r| {
            format!(
                "{}/{}",
                r.namespace.as_deref().unwrap_or_default(),
                r.name.as_deref().unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let node = cluster
        .pod(&pod)
        .and_then(|p| p.view().node_name().map(str::to_string))
        .unwrap_or_default();
    MigrationReport {
        job: job_name(job),
        pod,
        node,
        mode: job.spec.mode.clone().unwrap_or_default(),
        trigger: annotation(EVICT_TRIGGER_ANNOTATION),
        reason: annotation(EVICT_REASON_ANNOTATION),
    }
}

fn event_report(event: &Event) -> EventReport {
    let r = &event.regarding;
    let name =
        if r.namespace.is_empty() { r.name.clone() } else { format!("{}/{}", r.namespace, r.name) };
    EventReport {
        regarding: format!("{} {name}", r.kind),
        kind: if event.warning { "Warning" } else { "Normal" }.to_string(),
        reason: event.reason.clone(),
        message: event.message.clone(),
    }
}

/// Describes one action of the migration controller.
pub fn controller_step(action: &Action) -> ControllerStep {
    let step = |action: &str, job: Option<&str>, detail: String| ControllerStep {
        action: action.to_string(),
        job: job.map(str::to_string),
        detail,
    };
    match action {
        Action::CreateJob(job) => {
            let name = job_name(job);
            step("createJob", Some(&name), "create the job".into())
        }
        Action::SetJobSpec { job, spec } => {
            let detail = match spec_reservation(spec) {
                Some(name) => format!("record reservation {name}"),
                None => "update the spec".into(),
            };
            step("setJobSpec", Some(job), detail)
        }
        Action::SetJobStatus { job, status } => {
            let mut detail = format!("phase {}", status.phase.as_deref().unwrap_or("-"));
            for part in [&status.reason, &status.message].into_iter().flatten() {
                detail.push_str(": ");
                detail.push_str(part);
            }
            step("setJobStatus", Some(job), detail)
        }
        Action::DeleteJob { job } => step("deleteJob", Some(job), "delete the job".into()),
        Action::CreateReservation(r) => {
            step("createReservation", None, format!("create reservation {}", r.name_any()))
        }
        Action::DeleteReservation { name } => {
            step("deleteReservation", None, format!("delete reservation {name}"))
        }
        Action::Evict { pod, job, reason } => {
            step("evict", job.as_deref(), format!("evict {}/{}: {reason}", pod.namespace, pod.name))
        }
        Action::Event(event) => {
            let e = event_report(event);
            step("event", None, format!("{} {}: {}", e.regarding, e.reason, e.message))
        }
    }
}

/// The camelCase name of a verdict (as in the JSON).
pub fn verdict_name(verdict: &CandidateVerdict) -> &'static str {
    match verdict {
        CandidateVerdict::Evicted(_) => "evicted",
        CandidateVerdict::Filtered(_) => "filtered",
        CandidateVerdict::NoMetric => "noMetric",
        CandidateVerdict::NoFit(_) => "noFit",
        CandidateVerdict::NotReached(_) => "notReached",
        CandidateVerdict::Refused(_) => "refused",
    }
}

/// The detail of a verdict (empty for `noMetric`).
pub fn verdict_detail(verdict: &CandidateVerdict) -> &str {
    match verdict {
        CandidateVerdict::Evicted(s)
        | CandidateVerdict::Filtered(s)
        | CandidateVerdict::NoFit(s)
        | CandidateVerdict::NotReached(s)
        | CandidateVerdict::Refused(s) => s,
        CandidateVerdict::NoMetric => "",
    }
}

fn summarize(cluster: &Cluster, pools: &[PoolReport], migrations: usize) -> Summary {
    let mut summary = Summary {
        nodes: cluster.nodes().len(),
        pods: cluster.pods().len(),
        migrations,
        ..Summary::default()
    };
    for pool in pools {
        for node in &pool.nodes {
            *summary.classes.entry(node.class.as_str().to_string()).or_default() += 1;
        }
        for candidate in &pool.candidates {
            *summary.verdicts.entry(verdict_name(&candidate.verdict).to_string()).or_default() += 1;
        }
    }
    summary
}

/// `part` of `whole` in percent, one decimal (`-` when `whole` is 0).
fn percent(part: i64, whole: i64) -> String {
    if whole <= 0 {
        return "-".into();
    }
    let p = part as f64 * 100.0 / whole as f64;
    // Thresholds are whole percents of allocatable, truncated: print them
    // without a decimal when they are one.
    if (p - p.round()).abs() < 0.05 { format!("{:.0}", p.round()) } else { format!("{p:.1}") }
}

/// `used/low/high` of one resource, in percent of allocatable (prod
/// amounts when `prod`).
fn usage_cell(node: &NodeReport, resource: &str, prod: bool) -> String {
    let Some(u) = node.usage.iter().find(|u| u.resource == resource) else {
        return "-".into();
    };
    let (used, low, high) =
        if prod { (u.prod_used, u.prod_low, u.prod_high) } else { (u.used, u.low, u.high) };
    let marker = if used > high { " >" } else { "" };
    format!(
        "{}/{}/{}{marker}",
        percent(used, u.allocatable),
        percent(low, u.allocatable),
        percent(high, u.allocatable)
    )
}

/// Writes rows as left-aligned columns (the last one unpadded).
fn write_columns(rows: &[Vec<String>], indent: &str, out: &mut impl Write) -> std::io::Result<()> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let mut line = String::from(indent);
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Whether any node of the pool has a prod threshold below allocatable
/// (else the prod columns say nothing).
fn has_prod_thresholds(pool: &PoolReport) -> bool {
    pool.nodes.iter().flat_map(|n| &n.usage).any(|u| u.prod_high < u.allocatable)
}

fn write_nodes(pool: &PoolReport, out: &mut impl Write) -> std::io::Result<()> {
    let mut resources: Vec<&str> = Vec::new();
    for u in pool.nodes.iter().flat_map(|n| &n.usage) {
        if !resources.contains(&u.resource.as_str()) {
            resources.push(&u.resource);
        }
    }
    let prod = has_prod_thresholds(pool);
    let mut header: Vec<String> = ["NODE", "CLASS", "ABNORMAL", "SCORE"].map(String::from).into();
    for r in &resources {
        header.push(format!("{}% USED/LOW/HIGH", r.to_uppercase()));
    }
    if prod {
        for r in &resources {
            header.push(format!("PROD {}%", r.to_uppercase()));
        }
    }
    header.push("NOTE".into());
    let mut rows = vec![header];
    for node in &pool.nodes {
        let mut row = vec![
            node.node.clone(),
            node.class.as_str().to_string(),
            node.abnormal.map_or("-".into(), |a| if a { "yes" } else { "no" }.into()),
            node.score.map_or("-".into(), |s| s.to_string()),
        ];
        row.extend(resources.iter().map(|r| usage_cell(node, r, false)));
        if prod {
            row.extend(resources.iter().map(|r| usage_cell(node, r, true)));
        }
        row.push(node.note.clone());
        rows.push(row);
    }
    write_columns(&rows, "  ", out)
}

fn write_candidates(pool: &PoolReport, out: &mut impl Write) -> std::io::Result<()> {
    if pool.candidates.is_empty() {
        return writeln!(out, "  no candidates");
    }
    let mut rows = vec![
        ["#", "CANDIDATE", "NODE", "PASS", "USAGE-SCORE", "FITS", "VERDICT"]
            .map(String::from)
            .to_vec(),
    ];
    for (i, c) in pool.candidates.iter().enumerate() {
        let detail = verdict_detail(&c.verdict);
        let verdict = if detail.is_empty() {
            verdict_name(&c.verdict).to_string()
        } else {
            format!("{}: {detail}", verdict_name(&c.verdict))
        };
        rows.push(vec![
            (i + 1).to_string(),
            c.pod.clone(),
            c.node.clone(),
            if c.prod { "prod" } else { "node" }.to_string(),
            // Negative: not scored (filtered before sorting).
            if c.usage_score < 0 { "-".to_string() } else { c.usage_score.to_string() },
            c.target.clone().unwrap_or_else(|| "-".into()),
            verdict,
        ]);
    }
    write_columns(&rows, "  ", out)
}

/// Writes the report as tables: per pool its nodes (class, usage against
/// thresholds in percent of allocatable, `>` over high) and candidates (in
/// the order considered, with the verdict and why), then the migrations in
/// order, the controller's next steps, the Events and a summary line.
pub fn write_table(report: &WhatIf, out: &mut impl Write) -> std::io::Result<()> {
    let s = &report.summary;
    writeln!(
        out,
        "Descheduling {} node(s), {} pod(s) at {} ({}){}",
        s.nodes,
        s.pods,
        report.now,
        report.now_source,
        if report.dry_run { ", dry run" } else { "" }
    )?;
    if report.pools.is_empty() {
        writeln!(out, "\nNo Balance plugin ran (is LowNodeLoad enabled in the profile?)")?;
    }
    for pool in &report.pools {
        writeln!(out, "\nPool {}", pool.pool)?;
        write_nodes(pool, out)?;
        if !pool.stopped.is_empty() {
            writeln!(out, "  stopped: {}", pool.stopped)?;
            if pool.stopped.contains("abnormal") {
                writeln!(
                    out,
                    "  (one round was run: with anomalyCondition.consecutiveAbnormalities > 1 a \
                     source must stay over its thresholds for several rounds)"
                )?;
            }
        }
        writeln!(out)?;
        write_candidates(pool, out)?;
    }
    if !report.migrations.is_empty() {
        writeln!(out, "\nMigrations, in order")?;
        let mut rows =
            vec![["#", "JOB", "POD", "FROM", "MODE", "REASON"].map(String::from).to_vec()];
        for (i, m) in report.migrations.iter().enumerate() {
            let mode = if m.mode.is_empty() { "(default)" } else { &m.mode };
            rows.push(vec![
                (i + 1).to_string(),
                m.job.clone(),
                m.pod.clone(),
                m.node.clone(),
                mode.to_string(),
                m.reason.clone(),
            ]);
        }
        write_columns(&rows, "  ", out)?;
    }
    if !report.controller.is_empty() {
        writeln!(out, "\nThe migration controller's next pass")?;
        let rows: Vec<Vec<String>> = report
            .controller
            .iter()
            .map(|c| vec![c.action.clone(), c.job.clone().unwrap_or("-".into()), c.detail.clone()])
            .collect();
        write_columns(&rows, "  ", out)?;
    }
    if !report.events.is_empty() {
        writeln!(out, "\nEvents")?;
        let rows: Vec<Vec<String>> = report
            .events
            .iter()
            .map(|e| vec![e.kind.clone(), e.regarding.clone(), e.reason.clone(), e.message.clone()])
            .collect();
        write_columns(&rows, "  ", out)?;
    }
    writeln!(out)?;
    let join = |m: &BTreeMap<String, usize>| {
        m.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
    };
    let candidates: usize = s.verdicts.values().sum();
    writeln!(
        out,
        "{} node(s): {}; {candidates} candidate(s){}{}; {} migration job(s)",
        s.nodes,
        if s.classes.is_empty() { "none classified".into() } else { join(&s.classes) },
        if s.verdicts.is_empty() { "" } else { ": " },
        join(&s.verdicts),
        s.migrations
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::low_node_load::{CandidateReport, NodeClass, ResourceUsage};

    fn usage(resource: &str, used: i64, allocatable: i64, low: i64, high: i64) -> ResourceUsage {
        ResourceUsage {
            resource: resource.into(),
            used,
            allocatable,
            low,
            high,
            prod_used: 0,
            prod_low: allocatable,
            prod_high: allocatable,
        }
    }

    fn node(name: &str, class: NodeClass, cpu_used: i64, score: Option<i64>) -> NodeReport {
        NodeReport {
            node: name.into(),
            class,
            note: String::new(),
            // 16 cores, 64 GiB; thresholds 45/75 and 55/80 percent.
            usage: vec![
                usage("cpu", cpu_used, 16_000, 7_200, 12_000),
                usage("memory", 32 << 30, 64 << 30, 37_795_712_204, 54_975_581_388),
            ],
            abnormal: score.map(|_| true),
            score,
        }
    }

    fn candidate(pod: &str, score: i64, verdict: CandidateVerdict) -> CandidateReport {
        let target = matches!(verdict, CandidateVerdict::Evicted(_)).then(|| "cold".to_string());
        CandidateReport {
            pod: pod.into(),
            node: "hot".into(),
            prod: false,
            usage_score: score,
            target,
            verdict,
        }
    }

    fn pool() -> PoolReport {
        PoolReport {
            pool: "__default_node_pool__".into(),
            nodes: vec![
                node("hot", NodeClass::Source, 14_400, Some(650)),
                node("cold", NodeClass::Low, 3_200, None),
                NodeReport {
                    note: "NodeMetric expired".into(),
                    usage: vec![],
                    ..node("old", NodeClass::NoMetric, 0, None)
                },
            ],
            candidates: vec![
                candidate("ops/agent-x", -1, CandidateVerdict::Filtered("DaemonSet pod".into())),
                candidate(
                    "batch/be-1",
                    950,
                    CandidateVerdict::Evicted(
                        "node is overutilized, node cpu usage(90.00%)>threshold(75.00%)".into(),
                    ),
                ),
                candidate(
                    "shop/web-0",
                    400,
                    CandidateVerdict::NotReached(
                        "node is no longer over its high thresholds".into(),
                    ),
                ),
                candidate("shop/new", 0, CandidateVerdict::NoMetric),
            ],
            stopped: String::new(),
        }
    }

    #[test]
    fn cells_are_percents_of_allocatable_with_a_marker_over_high() {
        let hot = node("hot", NodeClass::Source, 14_400, Some(650));
        assert_eq!(usage_cell(&hot, "cpu", false), "90/45/75 >");
        let cold = node("cold", NodeClass::Low, 3_300, None);
        assert_eq!(usage_cell(&cold, "cpu", false), "20.6/45/75");
        assert_eq!(usage_cell(&cold, "memory", false), "50/55/80");
        assert_eq!(usage_cell(&cold, "pods", false), "-");
        assert_eq!(percent(1, 0), "-");
    }

    #[test]
    fn summary_counts_classes_and_verdicts() {
        let cluster = Cluster::default();
        let s = summarize(&cluster, &[pool()], 1);
        assert_eq!(s.classes["source"], 1);
        assert_eq!(s.classes["low"], 1);
        assert_eq!(s.classes["noMetric"], 1);
        assert_eq!(
            s.verdicts,
            BTreeMap::from([
                ("evicted".to_string(), 1),
                ("filtered".to_string(), 1),
                ("noMetric".to_string(), 1),
                ("notReached".to_string(), 1)
            ])
        );
        assert_eq!(s.migrations, 1);
    }

    fn report() -> WhatIf {
        let pools = vec![pool()];
        WhatIf {
            now: "2026-11-22T04:00:00Z".into(),
            now_source: "--now".into(),
            dry_run: false,
            summary: Summary { nodes: 3, pods: 4, ..summarize(&Cluster::default(), &pools, 1) },
            pools,
            migrations: vec![MigrationReport {
                job: "pmj-1".into(),
                pod: "batch/be-1".into(),
                node: "hot".into(),
                mode: "EvictDirectly".into(),
                trigger: "LowNodeLoad".into(),
                reason: "node is overutilized".into(),
            }],
            controller: vec![ControllerStep {
                action: "evict".into(),
                job: Some("pmj-1".into()),
                detail: "evict batch/be-1: node is overutilized".into(),
            }],
            events: vec![],
        }
    }

    #[test]
    fn the_table_shows_classes_verdicts_and_migrations_in_order() {
        let mut out = Vec::new();
        write_table(&report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "Descheduling 3 node(s), 4 pod(s) at 2026-11-22T04:00:00Z (--now)\n\
             \n\
             Pool __default_node_pool__\n\
             \x20 NODE  CLASS     ABNORMAL  SCORE  CPU% USED/LOW/HIGH  MEMORY% USED/LOW/HIGH  NOTE\n\
             \x20 hot   source    yes       650    90/45/75 >          50/55/80\n\
             \x20 cold  low       -         -      20/45/75            50/55/80\n\
             \x20 old   noMetric  -         -      -                   -                      NodeMetric expired\n\
             \n\
             \x20 #  CANDIDATE    NODE  PASS  USAGE-SCORE  FITS  VERDICT\n\
             \x20 1  ops/agent-x  hot   node  -            -     filtered: DaemonSet pod\n\
             \x20 2  batch/be-1   hot   node  950          cold  evicted: node is overutilized, node cpu usage(90.00%)>threshold(75.00%)\n\
             \x20 3  shop/web-0   hot   node  400          -     notReached: node is no longer over its high thresholds\n\
             \x20 4  shop/new     hot   node  0            -     noMetric\n\
             \n\
             Migrations, in order\n\
             \x20 #  JOB    POD         FROM  MODE           REASON\n\
             \x20 1  pmj-1  batch/be-1  hot   EvictDirectly  node is overutilized\n\
             \n\
             The migration controller's next pass\n\
             \x20 evict  pmj-1  evict batch/be-1: node is overutilized\n\
             \n\
             3 node(s): 1 low, 1 noMetric, 1 source; 4 candidate(s): 1 evicted, 1 filtered, 1 noMetric, 1 notReached; 1 migration job(s)\n"
        );
    }

    #[test]
    fn the_json_is_one_documented_object() {
        let json = serde_json::to_value(report()).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        for key in
            ["now", "nowSource", "dryRun", "pools", "migrations", "controller", "events", "summary"]
        {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
        let candidate = &json["pools"][0]["candidates"][1];
        assert_eq!(candidate["pod"], "batch/be-1");
        assert_eq!(candidate["verdict"], "evicted");
        assert!(candidate["detail"].as_str().unwrap().starts_with("node is overutilized"));
        assert_eq!(json["pools"][0]["candidates"][3]["verdict"], "noMetric");
        assert_eq!(json["pools"][0]["nodes"][0]["class"], "source");
        assert_eq!(json["summary"]["verdicts"]["filtered"], 1);
        assert_eq!(json["migrations"][0]["mode"], "EvictDirectly");
    }

    #[test]
    fn controller_steps_name_their_job() {
        let evict = Action::Evict {
            pod: kolo_core::PodRef::new("batch", "be-1", "u1"),
            job: Some("pmj-1".into()),
            reason: "migrating".into(),
        };
        let step = controller_step(&evict);
        assert_eq!((step.action.as_str(), step.job.as_deref()), ("evict", Some("pmj-1")));
        assert_eq!(step.detail, "evict batch/be-1: migrating");
        let delete = controller_step(&Action::DeleteReservation { name: "r1".into() });
        assert_eq!((delete.action.as_str(), delete.job), ("deleteReservation", None));
    }

    #[test]
    fn an_empty_round_says_no_balance_plugin_ran() {
        let mut descheduler = Descheduler::new(&Default::default()).unwrap();
        let report =
            deschedule(&mut descheduler, &Cluster::default(), Timestamp::UNIX_EPOCH, "--now");
        assert!(report.pools.is_empty() && report.migrations.is_empty());
        let mut out = Vec::new();
        write_table(&report, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("No Balance plugin ran"), "{text}");
    }
}
