//! What-if scheduling (`kolo schedule`): what would kolo's scheduler do with
//! the pending pods of a snapshot?
//!
//! The snapshot's nodes, NodeMetrics, assigned pods, job-scheduling objects,
//! PodDisruptionBudgets, PersistentVolumeClaims and PersistentVolumes are
//! fed to the real scheduler (the same [`Scheduler`] the `kolo scheduler`
//! component runs, with an [`InMemoryBinder`]); every pending pod of one of the configured
//! profiles then gets exactly one scheduling cycle, in queue order, and the
//! report says where each pod went and why.

mod table;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use kolo_core::clock::Timestamp;
pub use kolo_core::snapshot::NowSource;
use kolo_core::snapshot::Snapshot;
use serde::Serialize;

pub use self::table::write_table;
use crate::binder::InMemoryBinder;
use crate::config::{ConfigError, SchedulerConfig};
use crate::explain::RejectionCount;
use crate::framework::{Facts, PodInfo, SchedulingObject};
use crate::plugins::coscheduling::{self, facts::GangFacts};
use crate::plugins::reservation::{ReservationError, feed::apply_reservation};
use crate::plugins::{DEFAULT_PLUGINS, registry};
use crate::scheduler::{ApplyError, CycleReport, ExplainLevel, NodeReport, Outcome, Scheduler};

/// What a what-if run was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The `KubeSchedulerConfiguration` file the configuration came from
    /// (errors name it); none means kolo's default profile.
    pub config: Option<PathBuf>,
    /// Schedule every pending pod, whatever its `schedulerName`, with the
    /// first profile.
    pub all: bool,
    /// How much to report per node.
    pub explain: ExplainLevel,
    /// The time to schedule at; none means [`Snapshot::newest_metric_update`].
    pub now: Option<Timestamp>,
}

/// Why `kolo schedule` could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// The configuration file could not be read.
    #[error("reading scheduler config {path}: {source}")]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration file was refused (the error names the field).
    #[error("{path}: {source}")]
    Config {
        /// The file, or `<default>` for the built-in configuration.
        path: PathBuf,
        /// What is wrong.
        source: ConfigError,
    },
    /// The scheduler refused a node or pod of the snapshot (the error names
    /// the object and field).
    #[error("the scheduler refused {0}")]
    Apply(#[from] ApplyError),
    /// The scheduler refused a Reservation of the snapshot (the error names
    /// it and the field).
    #[error("the scheduler refused {0}")]
    Reservation(#[from] ReservationError),
}

/// The report of a run (the JSON output, as documented in `docs/cli.md`).
#[derive(Debug, Serialize, PartialEq)]
pub struct Report {
    /// The time the pods were scheduled at (RFC 3339).
    pub now: String,
    /// One entry per pending pod, in the order they were scheduled.
    pub pods: Vec<PodResult>,
    /// Counts.
    pub summary: Summary,
}

/// Where one pod went: its cycle's report, flattened for reading.
#[derive(Debug, Serialize, PartialEq)]
pub struct PodResult {
    /// `namespace/name`.
    pub pod: String,
    /// The chosen node; `null` if none.
    pub node: Option<String>,
    /// Why the pod was not scheduled (kube-scheduler's wording); `null` if
    /// it was.
    pub message: Option<String>,
    /// The chosen node's weighted total score.
    pub total: Option<i64>,
    /// The chosen node's per-plugin scores (normalized, before weights).
    pub scores: BTreeMap<&'static str, i64>,
    /// For an unschedulable pod, the rejections `message` counts: per
    /// plugin, reason and status code, on how many nodes.
    pub rejections: Vec<RejectionCount>,
    /// The annotations PreBind wrote for the bind (the cpuset as
    /// `scheduling.koordinator.sh/resource-status`).
    pub annotations: BTreeMap<String, String>,
    /// Per plugin, its facts about the pod: LoadAwareScheduling's estimate,
    /// NodeNUMAResource's allocation (the data of the annotation).
    pub facts: BTreeMap<&'static str, Facts>,
    /// Per plugin, its facts about the chosen node before the pod was
    /// placed: LoadAwareScheduling's usage, allocatable and thresholds.
    pub node_facts: BTreeMap<&'static str, Facts>,
    /// Per-node details with `--explain` / `--explain-all`; empty otherwise.
    pub nodes: Vec<NodeReport>,
    /// Whether a Permit plugin held the pod in its cycle (a gang member
    /// waiting for the others); `message` then says how that ended.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// Counts over the run.
#[derive(Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Pods that got a scheduling cycle.
    pub pods: usize,
    /// Of those, placed on a node.
    pub scheduled: usize,
    /// Of those, not placed (no node fits, or an error).
    pub unschedulable: usize,
    /// Pending pods left alone because their `schedulerName` is not one of
    /// the profiles' (`--all` schedules them too).
    pub skipped: usize,
}

/// A finished run: the report plus what only the table shows.
#[derive(Debug)]
pub struct Run {
    /// The report.
    pub report: Report,
    /// Where `now` came from.
    pub now_source: NowSource,
    /// Nodes in the snapshot.
    pub nodes: usize,
    /// Wall time of the scheduling cycles alone.
    pub elapsed: std::time::Duration,
}

/// Reads a `KubeSchedulerConfiguration` file; none means kolo's default
/// profile. `kolo scheduler` reads its configuration the same way.
pub fn load_config(path: Option<&std::path::Path>) -> Result<SchedulerConfig, ScheduleError> {
    let Some(path) = path else { return Ok(SchedulerConfig::default()) };
    let text = std::fs::read_to_string(path)
        .map_err(|source| ScheduleError::ReadConfig { path: path.to_path_buf(), source })?;
    SchedulerConfig::from_yaml(&text)
        .map_err(|source| ScheduleError::Config { path: path.to_path_buf(), source })
}

/// Schedules the snapshot's pending pods: one cycle each, in queue order.
pub fn schedule(
    snapshot: Snapshot,
    config: &SchedulerConfig,
    options: &Options,
) -> Result<Run, ScheduleError> {
    let (now, now_source) = snapshot.what_if_now(options.now);
    let binder = Arc::new(InMemoryBinder::new());
    let config_path = || options.config.clone().unwrap_or_else(|| PathBuf::from("<default>"));
    let mut scheduler = Scheduler::new(config, &registry(), DEFAULT_PLUGINS, binder.clone())
        .map_err(|source| ScheduleError::Config { path: config_path(), source })?;
    scheduler.set_explain(options.explain);
    scheduler.set_facts(true);
    let first_profile = scheduler.profiles()[0].scheduler_name().to_string();

    let nodes = snapshot.nodes.len();
    // Nodes first, then their metrics, then pods: the cache counts an
    // assigned pod on its node as it arrives, and the load-aware plugin
    // judges assigned pods against the metric it already holds.
    for node in snapshot.nodes {
        scheduler.apply_node(node.object, now)?;
    }
    for metric in snapshot.node_metrics {
        scheduler.apply_node_metric(metric, now);
    }
    // Quotas, gangs and reservations before pods: the plugins map each pod
    // to its quota and gang as it arrives, and a scheduled reservation holds
    // its room (a pending one is scheduled like a pod).
    for quota in snapshot.elastic_quotas {
        scheduler.apply_object(SchedulingObject::ElasticQuota(Arc::new(quota)), now);
    }
    for group in snapshot.pod_groups {
        scheduler.apply_object(SchedulingObject::PodGroup(Arc::new(group)), now);
    }
    for reservation in snapshot.reservations {
        apply_reservation(&mut scheduler, Arc::new(reservation), now)?;
    }
    // Budgets (preemption), claims and volumes (the volume plugins), as the
    // `kolo scheduler` component watches them.
    for budget in snapshot.pod_disruption_budgets {
        scheduler.apply_object(SchedulingObject::PodDisruptionBudget(Arc::new(budget)), now);
    }
    for claim in snapshot.persistent_volume_claims {
        scheduler.apply_object(SchedulingObject::PersistentVolumeClaim(Arc::new(claim)), now);
    }
    for volume in snapshot.persistent_volumes {
        scheduler.apply_object(SchedulingObject::PersistentVolume(Arc::new(volume)), now);
    }
    let mut skipped = 0;
    let mut pending = Vec::new();
    for pod in snapshot.pods {
        let view = &pod.view;
        if view.is_terminated() {
            continue;
        }
        if view.is_assigned() {
            let info = PodInfo::from_parts(Arc::new(pod.object), pod.view);
            scheduler.apply_pod_info(Arc::new(info), now);
            continue;
        }
        let mut info = PodInfo::from_parts(Arc::new(pod.object), pod.view);
        if scheduler.profile_for(&info).is_none() {
            if !options.all {
                skipped += 1;
                continue;
            }
            // `--all`: the pod is scheduled as if it had asked for the first
            // profile; object and view must agree on that.
            let mut object = info.pod().clone();
            object.spec.get_or_insert_with(Default::default).scheduler_name =
                Some(first_profile.clone());
            let view = info.view().clone().with_scheduler_name(&first_profile);
            info = PodInfo::from_parts(Arc::new(object), view);
        }
        pending.push(Arc::new(info));
    }
    // Pending pods last, so the first cycle already sees every assigned pod.
    for info in pending {
        scheduler.apply_pod_info(info, now);
    }

    // Time stands still at `now`, so a pod that fails is put back to wait
    // for its backoff (at least 1 s, the config refuses less) or for a
    // cluster event and is not popped again: every pod gets exactly one
    // cycle, and pods placed earlier count on their nodes for later ones.
    let started = Instant::now();
    let reports = scheduler.run_until_idle(now);
    let elapsed = started.elapsed();

    let mut pods: Vec<PodResult> = reports.into_iter().map(pod_result).collect();
    // A pod held at Permit (a gang member) was reported when it was held;
    // what became of it is known only now.
    let bound: HashSet<String> = binder.bindings().into_iter().map(|b| b.pod).collect();
    let waiting: HashSet<&str> = scheduler.waiting_pods().map(|(pod, _)| pod).collect();
    for pod in pods.iter_mut().filter(|p| p.held) {
        settle_held(pod, bound.contains(&pod.pod), waiting.contains(pod.pod.as_str()));
    }
    let scheduled = pods.iter().filter(|p| p.node.is_some()).count();
    let summary =
        Summary { pods: pods.len(), scheduled, unschedulable: pods.len() - scheduled, skipped };
    Ok(Run { report: Report { now: now.to_string(), pods, summary }, now_source, nodes, elapsed })
}

fn pod_result(report: CycleReport) -> PodResult {
    let mut result = PodResult {
        pod: report.pod,
        node: None,
        message: None,
        total: None,
        scores: BTreeMap::new(),
        rejections: Vec::new(),
        annotations: report.annotations,
        facts: report.facts,
        node_facts: report.node_facts,
        nodes: report.nodes,
        held: false,
    };
    match report.outcome {
        Outcome::Scheduled { node, total, scores } => {
            result.node = Some(node);
            result.total = Some(total);
            result.scores = scores;
        }
        Outcome::Waiting { node } => {
            // A Permit plugin holds the pod on its node; how that ends is
            // settled after the run ([`settle_held`]).
            result.held = true;
            result.node = Some(node);
        }
        Outcome::Unschedulable { message, nominated, rejections, .. } => {
            result.message = Some(match nominated {
                Some(node) => format!("{message} (nominated node: {node})"),
                None => message,
            });
            result.rejections = rejections;
        }
        Outcome::Failed { message } => result.message = Some(format!("error: {message}")),
    }
    result
}

/// What became of a pod held at Permit by the end of the run: bound (its
/// gang completed), still held, or let go (its gang could not complete).
fn settle_held(pod: &mut PodResult, bound: bool, still_held: bool) {
    let held_on = pod.node.take().unwrap_or_default();
    let gang = pod.facts.get(coscheduling::NAME).and_then(|f| f.downcast_ref::<GangFacts>());
    let gang_name =
        gang.map_or_else(|| "its Permit plugin".to_string(), |g| format!("gang {}", g.gang));
    if bound {
        pod.node = Some(held_on);
        pod.message = None;
    } else if still_held {
        pod.message = Some(match gang {
            Some(g) => format!(
                "reserved on {held_on}, waiting for {} more member(s) of gang {}",
                g.waiting_for, g.gang
            ),
            None => format!("reserved on {held_on}, waiting for a Permit plugin"),
        });
        pod.node = Some(held_on);
    } else {
        pod.message =
            Some(format!("reserved on {held_on}, then released: {gang_name} could not complete"));
    }
}

/// The `--explain N` / `--explain-all` flags as an [`ExplainLevel`].
pub fn explain_level(top: Option<usize>, all: bool) -> ExplainLevel {
    match (all, top) {
        (true, _) => ExplainLevel::All,
        (false, Some(n)) => ExplainLevel::Top(n),
        (false, None) => ExplainLevel::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;

    #[test]
    fn explain_flags() {
        assert_eq!(explain_level(None, false), ExplainLevel::None);
        assert_eq!(explain_level(Some(3), false), ExplainLevel::Top(3));
        assert_eq!(explain_level(None, true), ExplainLevel::All);
    }

    #[test]
    fn outcomes_become_results() {
        let scores = BTreeMap::from([("NodeResourcesFit", 70)]);
        let cases = [
            (
                Outcome::Scheduled { node: "n1".into(), total: 70, scores: scores.clone() },
                (Some("n1"), None, Some(70), scores.clone()),
            ),
            (
                Outcome::Waiting { node: "n2".into() },
                // Settled after the run (`settle_held`).
                (Some("n2"), None, None, BTreeMap::new()),
            ),
            (
                Outcome::Unschedulable {
                    message: "0/1 nodes are available: x.".into(),
                    nominated: None,
                    victims: Vec::new(),
                    rejections: Vec::new(),
                },
                (None, Some("0/1 nodes are available: x."), None, BTreeMap::new()),
            ),
            (
                Outcome::Unschedulable {
                    message: "0/1 nodes are available: x.".into(),
                    nominated: Some("n3".into()),
                    victims: Vec::new(),
                    rejections: Vec::new(),
                },
                (
                    None,
                    Some("0/1 nodes are available: x. (nominated node: n3)"),
                    None,
                    BTreeMap::new(),
                ),
            ),
            (
                Outcome::Failed { message: "boom".into() },
                (None, Some("error: boom"), None, BTreeMap::new()),
            ),
        ];
        for (outcome, (node, message, total, scores)) in cases {
            let report = CycleReport::new("ns/p".into(), outcome.clone());
            let got = pod_result(report);
            assert_eq!(got.node.as_deref(), node, "{outcome:?}");
            assert_eq!(got.message.as_deref(), message, "{outcome:?}");
            assert_eq!((got.total, &got.scores), (total, &scores), "{outcome:?}");
        }
    }

    #[test]
    fn held_pods_are_settled_by_how_their_wait_ended() {
        let held =
            || pod_result(CycleReport::new("ns/p".into(), Outcome::Waiting { node: "n".into() }));
        // (bound, still held) → (node, message)
        let cases = [
            ((true, false), (Some("n"), None)),
            ((false, true), (Some("n"), Some("reserved on n, waiting for a Permit plugin"))),
            (
                (false, false),
                (None, Some("reserved on n, then released: its Permit plugin could not complete")),
            ),
        ];
        for ((bound, still), (node, message)) in cases {
            let mut pod = held();
            assert!(pod.held);
            settle_held(&mut pod, bound, still);
            assert_eq!(
                (pod.node.as_deref(), pod.message.as_deref()),
                (node, message),
                "{bound} {still}"
            );
        }
    }

    #[test]
    fn the_table_aligns_rows_and_indents_node_lines() {
        let run = Run {
            report: Report {
                now: "2026-11-22T04:00:00Z".into(),
                pods: vec![
                    PodResult {
                        pod: "ns/a-long-pod-name".into(),
                        node: Some("n1".into()),
                        message: None,
                        total: Some(191),
                        scores: BTreeMap::from([("A", 74), ("B", 81)]),
                        rejections: vec![],
                        annotations: BTreeMap::new(),
                        facts: BTreeMap::new(),
                        node_facts: BTreeMap::new(),
                        nodes: vec![
                            NodeReport {
                                node: "n1".into(),
                                feasible: true,
                                reasons: vec![],
                                rejected_by: None,
                                code: None,
                                scores: BTreeMap::from([("A", 74), ("B", 81)]),
                                total: Some(191),
                                facts: BTreeMap::new(),
                            },
                            NodeReport {
                                node: "node-22".into(),
                                feasible: false,
                                reasons: vec!["Insufficient cpu".into()],
                                rejected_by: Some("NodeResourcesFit"),
                                code: Some(Code::Unschedulable),
                                scores: BTreeMap::new(),
                                total: None,
                                facts: BTreeMap::new(),
                            },
                        ],
                        held: false,
                    },
                    PodResult {
                        pod: "ns/b".into(),
                        node: None,
                        message: Some("0/2 nodes are available: 2 Insufficient cpu.".into()),
                        total: None,
                        scores: BTreeMap::new(),
                        rejections: vec![],
                        annotations: BTreeMap::new(),
                        facts: BTreeMap::new(),
                        node_facts: BTreeMap::new(),
                        nodes: vec![],
                        held: false,
                    },
                ],
                summary: Summary { pods: 2, scheduled: 1, unschedulable: 1, skipped: 0 },
            },
            now_source: NowSource::Flag,
            nodes: 2,
            elapsed: std::time::Duration::from_millis(4),
        };
        let mut out = Vec::new();
        write_table(&run, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Scheduling 2 pending pod(s) on 2 node(s) at 2026-11-22T04:00:00Z (--now)\n\
             \n\
             POD                 NODE    SCORE  DETAILS\n\
             ns/a-long-pod-name  n1        191  A=74 B=81\n\
             \x20   n1       total=191  A=74 B=81\n\
             \x20   node-22  rejected by NodeResourcesFit: Insufficient cpu\n\
             ns/b                <none>      -  0/2 nodes are available: 2 Insufficient cpu.\n\
             \n\
             2 pods: 1 scheduled, 1 unschedulable; evaluated in 4.0 ms (500 pods/s)\n"
        );
    }
}
