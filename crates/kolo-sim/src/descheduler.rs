//! kolo's descheduler in the simulator: the real round object
//! ([`kolo_descheduler::Descheduler`]) driven by the engine, and the
//! figures it is judged by.
//!
//! A policy with a `deschedulerConfig` (colocation kind: the descheduler
//! reads NodeMetrics, which only nodes with an agent report) runs it:
//!
//! * the engine keeps each node's latest usage report (the very
//!   [`NodeUsageReport`] the scheduler's load-aware plugin reads) and the
//!   bound pods;
//! * every `deschedulingInterval` of simulated time,
//!   [`SimDescheduler::round`] builds a [`Cluster`] from them and runs
//!   `balance` (LowNodeLoad); the PodMigrationJobs it creates are kept
//!   here, as the API server would store them;
//! * at every step while a job is active, one `migrate` pass advances the
//!   jobs (the real controller requeues every few seconds; a step is the
//!   simulator's grain); its writes are applied to the stored jobs and its
//!   evictions returned to the engine, which takes the pod off its node
//!   and has its workload recreate it pending, so kolo's scheduler places
//!   it again (`EvictDirectly` semantics).
//!
//! Reservations are not simulated (the engine hands the scheduler no
//! Reservation objects), so a policy should set the MigrationController's
//! `defaultJobMode: EvictDirectly`; a Reservation a job asks for anyway is
//! reported back as refused, and the job fails (counted in
//! [`DeschedulerSummary::reservations_not_simulated`]).
//!
//! Hot-node time is measured in every run, with or without a descheduler,
//! so policies compare side by side: a node is hot in a step when its CPU
//! use (system + LS + BE) is over `model.hotCpuPercent` of its allocatable
//! CPU, or its memory over `model.hotMemoryPercent` of its allocatable
//! memory.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kolo_api::crd::PodMigrationJob;
use kolo_core::PodRef;
use kolo_core::clock::Timestamp;
use kolo_core::node::NodeView;
use kolo_core::usage_report::NodeUsageReport;
use kolo_descheduler::config::{ConfigError, DeschedulerConfig};
use kolo_descheduler::low_node_load::NodeClass;
use kolo_descheduler::migration::job::spec_reservation;
use kolo_descheduler::{Action, Cluster, Descheduler, Workload};
use kolo_scheduler::framework::PodInfo;
use serde::Serialize;

use crate::objects::{BATCH_NAMESPACE, LS_NAMESPACE};

/// The workload that owns a simulated pod (the descheduler's evictor
/// moves only owned pods, and its limits count per workload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// `ReplicaSet` or `Job`.
    pub kind: &'static str,
    /// `apps/v1` or `batch/v1`.
    pub api_version: &'static str,
    /// Its namespace (the pods').
    pub namespace: &'static str,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Its pods (replicas, or the job's parallelism).
    pub replicas: u32,
}

impl Owner {
    /// LS service `service`'s ReplicaSet, of `replicas` pods.
    pub fn service(service: u32, replicas: u32) -> Owner {
        Owner {
            kind: "ReplicaSet",
            api_version: "apps/v1",
            namespace: LS_NAMESPACE,
            name: format!("svc-{service}"),
            uid: format!("rs-svc-{service}"),
            replicas,
        }
    }

    /// Batch job `job`'s Job, of `pods` pods.
    pub fn job(job: u32, pods: u32) -> Owner {
        Owner {
            kind: "Job",
            api_version: "batch/v1",
            namespace: BATCH_NAMESPACE,
            name: format!("job-{job}"),
            uid: format!("job-{job}"),
            replicas: pods,
        }
    }

    /// The pods' controller owner reference.
    pub fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    /// The workload as a descheduler round reads it.
    pub fn workload(&self) -> Workload {
        Workload {
            kind: self.kind.into(),
            namespace: self.namespace.into(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            replicas: Some(i32::try_from(self.replicas).unwrap_or(i32::MAX)),
        }
    }
}

/// The pod as the descheduler reads a started one: Running and Ready (a
/// workload counts only Ready pods as available, and the migration
/// controller's limits count the others as unavailable).
pub fn started(info: &PodInfo) -> PodInfo {
    let mut pod = Pod::clone(info.pod_arc());
    let status = pod.status.get_or_insert_with(Default::default);
    status.phase = Some("Running".into());
    status.conditions = Some(vec![PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    PodInfo::from_parts(Arc::new(pod), info.view().clone())
}

/// Phases of a job the controller still works on.
const ACTIVE_PHASES: [&str; 3] = ["", "Pending", "Running"];

/// The descheduler's figures in a run's summary (zero, but for hot-node
/// time, when the policy runs no descheduler).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeschedulerSummary {
    /// Node-minutes above the hot thresholds (`model.hotCpuPercent`,
    /// `model.hotMemoryPercent`).
    pub hot_node_minutes: f64,
    /// Balance rounds run.
    pub descheduler_rounds: u64,
    /// Source nodes (node or prod sources) the rounds found, summed over
    /// rounds.
    pub descheduler_sources: u64,
    /// PodMigrationJobs created.
    pub migration_jobs: u64,
    /// Jobs that ended Succeeded.
    pub migrations_succeeded: u64,
    /// Jobs that ended Failed or Aborted.
    pub migrations_failed: u64,
    /// Pods evicted by the migration controller.
    pub migration_evictions: u64,
    /// LS pods among them: disrupted by a move.
    pub ls_pods_disrupted: u64,
    /// Reservations the controller asked for, not simulated.
    pub reservations_not_simulated: u64,
}

/// What a deschedule step reads from the engine.
pub struct RoundInput {
    /// Every node, in the engine's order.
    pub nodes: Vec<NodeView>,
    /// Every bound pod.
    pub pods: Vec<PodInfo>,
    /// The workloads the pods belong to.
    pub workloads: Vec<Workload>,
    /// Whether Balance is due this step.
    pub balance: bool,
}

/// The descheduler of one run, with what the API server would store for it.
#[derive(Debug)]
pub struct SimDescheduler {
    descheduler: Descheduler,
    /// Each node's latest usage report, by node name.
    reports: HashMap<String, Arc<NodeUsageReport>>,
    /// The PodMigrationJobs, in creation order.
    jobs: Vec<Arc<PodMigrationJob>>,
    /// Jobs named so far (for names of jobs created with `generateName`).
    named: u64,
    /// When the next Balance round is due, seconds into the run (0: not
    /// yet computed).
    next_round: f64,
    summary: DeschedulerSummary,
}

impl SimDescheduler {
    /// A descheduler configured by `config`.
    pub fn new(config: DeschedulerConfig) -> Result<SimDescheduler, ConfigError> {
        Ok(SimDescheduler {
            descheduler: Descheduler::new(&config)?,
            reports: HashMap::new(),
            jobs: Vec::new(),
            named: 0,
            next_round: 0.0,
            summary: DeschedulerSummary::default(),
        })
    }

    /// Whether a Balance round is due at `t` seconds into the run (the
    /// first at one interval, then every interval; an interval that is not
    /// a multiple of the step runs at the first step after it is due).
    pub fn due(&mut self, t: f64) -> bool {
        let interval = self.descheduler.interval().as_secs_f64();
        if self.next_round == 0.0 {
            self.next_round = interval;
        }
        if t + 1e-9 < self.next_round {
            return false;
        }
        while self.next_round <= t + 1e-9 {
            self.next_round += interval;
        }
        true
    }

    /// Keeps `report` as its node's latest.
    pub fn report(&mut self, report: &Arc<NodeUsageReport>) {
        self.reports.insert(report.node.clone(), Arc::clone(report));
    }

    /// Whether some job is still being worked on (the engine then builds
    /// a cluster for a migration pass even between Balance rounds).
    pub fn has_active_jobs(&self) -> bool {
        self.jobs.iter().any(|j| is_active(j))
    }

    /// One step of the descheduler at `now`: Balance when `input.balance`,
    /// then one migration pass when a job is active. Returns the pods to
    /// evict, in order.
    pub fn round(&mut self, input: RoundInput, now: Timestamp) -> Vec<PodRef> {
        let usage: Vec<Arc<NodeUsageReport>> =
            input.nodes.iter().filter_map(|n| self.reports.get(n.name()).cloned()).collect();
        let cluster = Cluster::new(input.nodes, input.pods, usage)
            .with_workloads(input.workloads)
            .with_jobs(self.jobs.clone());
        if input.balance {
            let round = self.descheduler.balance(&cluster, now);
            self.summary.descheduler_rounds += 1;
            self.summary.descheduler_sources += round
                .pools
                .iter()
                .flat_map(|p| &p.nodes)
                .filter(|n| matches!(n.class, NodeClass::Source | NodeClass::ProdHigh))
                .count() as u64;
            for action in round.actions {
                if let Action::CreateJob(job) = action {
                    self.create(*job, now);
                }
            }
        }
        if !self.has_active_jobs() {
            return Vec::new();
        }
        let actions = self.descheduler.migrate(&cluster.with_jobs(self.jobs.clone()), now);
        self.apply(actions, now)
    }

    /// Stores a new job as the API server would: named, with a UID and a
    /// creation time.
    fn create(&mut self, mut job: PodMigrationJob, now: Timestamp) {
        self.named += 1;
        let meta = &mut job.metadata;
        if meta.name.as_deref().unwrap_or_default().is_empty() {
            let prefix = meta.generate_name.as_deref().unwrap_or("pmj-");
            meta.name = Some(format!("{prefix}{:05}", self.named));
        }
        if meta.uid.is_none() {
            meta.uid = Some(format!("pmj-uid-{:05}", self.named));
        }
        meta.creation_timestamp.get_or_insert(Time(now));
        self.summary.migration_jobs += 1;
        self.jobs.push(Arc::new(job));
    }

    /// Applies a migration pass's writes; returns its evictions.
    fn apply(&mut self, actions: Vec<Action>, now: Timestamp) -> Vec<PodRef> {
        let mut evictions = Vec::new();
        let mut reservations = Vec::new();
        for action in actions {
            match action {
                Action::CreateJob(job) => self.create(*job, now),
                Action::SetJobSpec { job, spec } => {
                    // A job recording a Reservation this pass asked for:
                    // tell the controller it was not created, so the job
                    // fails now rather than at its TTL.
                    let reservation = spec_reservation(&spec);
                    if reservation.is_some_and(|r| reservations.iter().any(|c| c == r)) {
                        self.descheduler.reservation_result(
                            &job,
                            Err("the simulator does not run Reservations (use EvictDirectly)"
                                .into()),
                        );
                    }
                    self.edit(&job, |j| j.spec = *spec);
                }
                Action::SetJobStatus { job, status } => {
                    let phase = status.phase.clone().unwrap_or_default();
                    let was_active = self.job(&job).is_some_and(is_active);
                    self.edit(&job, |j| j.status = Some(*status));
                    if was_active {
                        match phase.as_str() {
                            "Succeeded" => self.summary.migrations_succeeded += 1,
                            "Failed" | "Aborted" => self.summary.migrations_failed += 1,
                            _ => {}
                        }
                    }
                }
                Action::DeleteJob { job } => {
                    self.jobs.retain(|j| j.metadata.name.as_deref() != Some(job.as_str()))
                }
                Action::CreateReservation(r) => {
                    self.summary.reservations_not_simulated += 1;
                    reservations.push(r.metadata.name.clone().unwrap_or_default());
                }
                Action::DeleteReservation { .. } | Action::Event(_) => {}
                Action::Evict { pod, job, .. } => {
                    // A simulated eviction always goes through (no
                    // PodDisruptionBudgets in the simulator).
                    if let Some(job) = job {
                        self.descheduler.eviction_result(&job, Ok(()), now);
                    }
                    self.summary.migration_evictions += 1;
                    evictions.push(pod);
                }
            }
        }
        evictions
    }

    fn job(&self, name: &str) -> Option<&PodMigrationJob> {
        self.jobs.iter().find(|j| j.metadata.name.as_deref() == Some(name)).map(|j| &**j)
    }

    fn edit(&mut self, name: &str, f: impl FnOnce(&mut PodMigrationJob)) {
        if let Some(job) = self.jobs.iter_mut().find(|j| j.metadata.name.as_deref() == Some(name)) {
            f(Arc::make_mut(job));
        }
    }

    /// Counts an evicted pod that was an LS pod.
    pub fn ls_disrupted(&mut self) {
        self.summary.ls_pods_disrupted += 1;
    }

    /// The figures so far, with `hot_node_minutes` measured by the engine.
    pub fn summary(&self) -> DeschedulerSummary {
        self.summary.clone()
    }
}

fn is_active(job: &PodMigrationJob) -> bool {
    let phase = job.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or_default();
    ACTIVE_PHASES.contains(&phase)
}

/// Whether a node's step was hot: CPU use (millicores) over `cpu_percent`
/// of `allocatable_cpu`, or memory (bytes) over `memory_percent` of
/// `allocatable_memory`.
pub fn is_hot(
    cpu_used: f64,
    memory_used: f64,
    allocatable: kolo_core::CpuMem,
    cpu_percent: f64,
    memory_percent: f64,
) -> bool {
    cpu_used > allocatable.cpu as f64 * cpu_percent / 100.0
        || memory_used > allocatable.memory as f64 * memory_percent / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use kolo_api::crd::PodMigrationJobStatus;
    use kolo_core::CpuMem;

    #[test]
    fn rounds_are_due_every_interval_at_the_step_after() {
        let config = DeschedulerConfig::from_yaml("deschedulingInterval: 45s").unwrap();
        let mut d = SimDescheduler::new(config).unwrap();
        let due: Vec<u32> = (1..=20).map(|k| k * 10).filter(|&t| d.due(f64::from(t))).collect();
        // Due at 45, 90, 135, 180: run at the first 10 s step at or after.
        assert_eq!(due, [50, 90, 140, 180]);
    }

    #[test]
    fn hot_is_strictly_over_either_threshold() {
        let alloc = CpuMem::new(10_000, 100);
        // (cpu, memory) → hot at 80% cpu / 85% memory
        for ((cpu, memory), hot) in [
            ((8_000.0, 10.0), false),
            ((8_001.0, 10.0), true),
            ((100.0, 85.0), false),
            ((100.0, 85.5), true),
        ] {
            assert_eq!(is_hot(cpu, memory, alloc, 80.0, 85.0), hot, "{cpu} {memory}");
        }
    }

    fn status(phase: &str) -> Box<PodMigrationJobStatus> {
        Box::new(PodMigrationJobStatus { phase: Some(phase.into()), ..Default::default() })
    }

    #[test]
    fn jobs_are_named_stored_and_counted_as_they_end() {
        let mut d = SimDescheduler::new(DeschedulerConfig::default()).unwrap();
        let now = Timestamp::UNIX_EPOCH;
        let mut job = PodMigrationJob::new("", Default::default());
        job.metadata.generate_name = Some("lnl-".into());
        d.create(job, now);
        assert_eq!(d.jobs[0].metadata.name.as_deref(), Some("lnl-00001"));
        assert!(d.has_active_jobs());
        let evicted = d.apply(
            vec![
                Action::SetJobStatus { job: "lnl-00001".into(), status: status("Running") },
                Action::Evict {
                    pod: PodRef::new("ls", "svc-1-3", "u"),
                    job: Some("lnl-00001".into()),
                    reason: "r".into(),
                },
                Action::SetJobStatus { job: "lnl-00001".into(), status: status("Succeeded") },
                // Setting a finished job's status again counts nothing.
                Action::SetJobStatus { job: "lnl-00001".into(), status: status("Succeeded") },
            ],
            now,
        );
        assert_eq!(evicted, [PodRef::new("ls", "svc-1-3", "u")]);
        assert!(!d.has_active_jobs());
        let s = d.summary();
        assert_eq!((s.migration_jobs, s.migration_evictions, s.migrations_succeeded), (1, 1, 1));
        d.apply(vec![Action::DeleteJob { job: "lnl-00001".into() }], now);
        assert!(d.jobs.is_empty());
    }
}
