//! The scheduling thread: owns the [`Scheduler`], applies the watchers'
//! changes, runs cycles, and hands binds and reports to the async runtime.
//!
//! The scheduler is synchronous and parallel inside a cycle (rayon), so it
//! runs on a thread of its own; the watchers, binds and reports run on the
//! tokio runtime. The thread blocks on its channel between cycles (waking at
//! least once a second for backoffs that end with no cluster change), so an
//! idle scheduler costs nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kolo_api::crd::{ElasticQuota, NodeMetric, PodGroup, Reservation};
use kolo_core::clock::Timestamp;
use kolo_scheduler::config::SchedulerConfig;
use kolo_scheduler::framework::{ObjectKind, ObjectRef, SchedulingObject};
use kolo_scheduler::plugins::{DEFAULT_PLUGINS, registry};
use kolo_scheduler::scheduler::{CycleReport, Outcome, Scheduler, Stats};
use kube::{Client, ResourceExt};
use tokio::runtime::Handle;

use super::binder::KubeBinder;
use kolo_core::PodRef;

use super::metrics::SchedulerMetrics;
use super::preempt::{Preemption, clear_nomination, preempt};
use super::report::Reports;
use super::reservations::{Reservations, StatusWrite, write_status};
use super::watch::spawn_watchers;
use crate::error::KubeError;
use crate::health::Health;
use crate::leader::Leadership;
use crate::mirror::{Change, key};

/// A change for the scheduling thread.
#[derive(Debug)]
pub enum Update {
    /// A node changed.
    Node(Box<Change<Node>>),
    /// A pod changed.
    Pod(Box<Change<Pod>>),
    /// A NodeMetric changed.
    NodeMetric(Box<Change<NodeMetric>>),
    /// An ElasticQuota changed.
    Quota(Box<Change<ElasticQuota>>),
    /// A PodGroup changed.
    PodGroup(Box<Change<PodGroup>>),
    /// A Reservation changed.
    Reservation(Box<Change<Reservation>>),
    /// A PodDisruptionBudget changed (read as `policy/v1`).
    Budget(Box<Change<PodDisruptionBudget>>),
    /// A PersistentVolumeClaim changed.
    Claim(Box<Change<PersistentVolumeClaim>>),
    /// A PersistentVolume changed.
    Volume(Box<Change<PersistentVolume>>),
    /// Writing this Reservation's status failed: the next change retries.
    ReservationWriteFailed(String),
    /// The CRD of this kind is not installed: schedule as if there were
    /// none of its objects (its watch keeps retrying).
    CrdMissing(ObjectKind),
    /// A bind finished: apply its outcome now.
    Wake,
    /// A preemption's evictions did not all go through: the preemptor
    /// (`namespace/name`) stops waiting for its victims.
    PreemptionFailed(String),
}

/// The kinds whose first list the scheduler waits for before it decides
/// anything (a CRD that is not installed counts as listed, empty).
const SYNCED_KINDS: [&str; 9] = [
    "nodes",
    "pods",
    "nodemetrics",
    "elasticquotas",
    "podgroups",
    "reservations",
    "poddisruptionbudgets",
    "persistentvolumeclaims",
    "persistentvolumes",
];

/// The index in [`SYNCED_KINDS`] of a scheduling object's kind.
fn synced_index(kind: ObjectKind) -> usize {
    match kind {
        ObjectKind::ElasticQuota => 3,
        ObjectKind::PodGroup => 4,
        ObjectKind::Reservation => 5,
        ObjectKind::PodDisruptionBudget => 6,
        ObjectKind::PersistentVolumeClaim => 7,
        ObjectKind::PersistentVolume => 8,
    }
}

/// How a reserve pod's key starts (`Reservation/<name>`, the Reservation
/// plugin's `reserve_pod_key`).
const RESERVE_POD_PREFIX: &str = "Reservation/";

/// How long the thread sleeps when nothing happens (pods whose backoff
/// ends, unschedulable pods flushed after a while, are picked up then).
const IDLE_WAKE: Duration = Duration::from_secs(1);

/// kolo's scheduler against a cluster.
pub struct SchedulerDriver {
    client: Client,
    config: SchedulerConfig,
    health: Arc<Health>,
    identity: String,
    metrics: Arc<SchedulerMetrics>,
}

impl SchedulerDriver {
    /// A driver for `config`'s profiles; `identity` names this instance in
    /// Events.
    pub fn new(
        client: Client,
        config: SchedulerConfig,
        health: Arc<Health>,
        identity: &str,
    ) -> SchedulerDriver {
        let metrics = SchedulerMetrics::new(&health);
        SchedulerDriver { client, config, health, identity: identity.into(), metrics }
    }

    /// Watches and schedules until leadership is lost (when `leadership` is
    /// given; the caller acquired it) or the process ends.
    pub async fn run(self, leadership: Option<Leadership>) -> Result<(), KubeError> {
        let (tx, rx) = channel();
        let reports = Reports::new(
            self.client.clone(),
            "kolo-scheduler",
            &self.identity,
            self.health.clone(),
        );
        let binder = Arc::new(KubeBinder::new(
            self.client.clone(),
            Handle::current(),
            reports.clone(),
            self.health.clone(),
            tx.clone(),
        ));
        let scheduler = Scheduler::new(&self.config, &registry(), DEFAULT_PLUGINS, binder)?;
        let names: Vec<String> =
            scheduler.profiles().iter().map(|p| p.scheduler_name().to_string()).collect();
        tracing::info!(scheduler_names = ?names, "scheduling pods with these schedulerNames");
        spawn_watchers(&self.client, &tx);
        let preempted = tx.clone();
        drop(tx);
        let thread = SchedulingThread {
            scheduler,
            reports,
            runtime: Handle::current(),
            health: self.health.clone(),
            metrics: self.metrics.clone(),
            last_stats: Stats::default(),
            arrived: HashMap::new(),
            synced: [false; SYNCED_KINDS.len()],
            uids: HashMap::new(),
            nominated_in_api: HashMap::new(),
            reported: HashMap::new(),
            client: self.client.clone(),
            v1beta1_only: Arc::new(AtomicBool::new(false)),
            preempted,
            reservations: Reservations::new(),
        };
        std::thread::Builder::new()
            .name("kolo-scheduling".into())
            .spawn(move || thread.run(rx))
            .map_err(|source| KubeError::Thread { source })?;
        Err(Leadership::lost_if_held(leadership).await)
    }
}

struct SchedulingThread {
    scheduler: Scheduler,
    reports: Reports,
    runtime: Handle,
    health: Arc<Health>,
    metrics: Arc<SchedulerMetrics>,
    /// The core's counters at the last metrics update.
    last_stats: Stats,
    /// Pending pod key → when its first watch event arrived (for
    /// `kolo_scheduler_pod_scheduling_duration_seconds`).
    arrived: HashMap<String, Instant>,
    /// Whether the first list of each of [`SYNCED_KINDS`] is in.
    synced: [bool; SYNCED_KINDS.len()],
    /// Pod key → UID (Events and bindings name the pod by UID).
    uids: HashMap<String, String>,
    /// Pending pod key → the `status.nominatedNodeName` its object shows,
    /// so a nomination the scheduler dropped is cleared in the API too.
    nominated_in_api: HashMap<String, String>,
    /// Pod key → the failure last reported, so a pod that fails the same
    /// way again (after its own condition update requeued it) is not
    /// reported twice.
    reported: HashMap<String, String>,
    /// For preemptions (evictions, nominations).
    client: Client,
    /// The server lacks `policy/v1` Eviction (found out on the first one).
    v1beta1_only: Arc<AtomicBool>,
    /// Where a preemption whose evictions failed, or a reservation status
    /// write that failed, reports back.
    preempted: Sender<Update>,
    /// The Reservations, their owners, and their status.
    reservations: Reservations,
}

impl SchedulingThread {
    fn run(mut self, rx: Receiver<Update>) {
        loop {
            match rx.recv_timeout(IDLE_WAKE) {
                Ok(update) => self.apply(update),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            while let Ok(update) = rx.try_recv() {
                self.apply(update);
            }
            if !self.synced.iter().all(|s| *s) {
                continue; // never decide on a partial view of the cluster
            }
            let now = Timestamp::now();
            let expired = self.reservations.expire(&mut self.scheduler, now);
            self.write_reservations(expired);
            loop {
                let started = Instant::now();
                let Some(report) = self.scheduler.schedule_next(now) else { break };
                self.metrics.cycle(started.elapsed());
                self.handle(report);
            }
            self.scheduler.process_bind_results(now);
            self.update_metrics();
        }
    }

    /// Brings the metrics up to the core's counters and queues.
    fn update_metrics(&mut self) {
        let stats = self.scheduler.stats();
        let nodes = self.scheduler.cache().nodes().len();
        self.metrics.update(&self.last_stats, &stats, self.scheduler.queue().counts(), nodes);
        self.last_stats = stats;
    }

    fn apply(&mut self, update: Update) {
        let now = Timestamp::now();
        match update {
            Update::Node(change) => match *change {
                Change::Apply(node) => {
                    if let Err(e) = self.scheduler.apply_node(node, now) {
                        tracing::warn!(error = %e, "node refused; keeping its last good state");
                    }
                }
                Change::Delete(name) => self.scheduler.remove_node(&name, now),
                Change::Synced => self.synced(0),
            },
            Update::Pod(change) => match *change {
                Change::Apply(pod) => {
                    let k = key(&pod);
                    if pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
                        self.reported.remove(&k);
                        self.arrived.remove(&k);
                    } else {
                        self.arrived.entry(k.clone()).or_insert_with(Instant::now);
                    }
                    match api_nomination(&pod) {
                        Some(node) => self.nominated_in_api.insert(k.clone(), node),
                        None => self.nominated_in_api.remove(&k),
                    };
                    self.uids.insert(k.clone(), pod.uid().unwrap_or_default());
                    let writes = self.reservations.pod_changed(&k, &pod, now);
                    self.write_reservations(writes);
                    if let Err(e) = self.scheduler.apply_pod(pod, now) {
                        tracing::warn!(error = %e, "pod refused; keeping its last good state");
                    }
                }
                Change::Delete(k) => {
                    let write = self.reservations.pod_removed(&k, now);
                    self.write_reservations(write);
                    self.scheduler.remove_pod(&k, now);
                    self.uids.remove(&k);
                    self.arrived.remove(&k);
                    self.nominated_in_api.remove(&k);
                    self.reported.remove(&k);
                }
                Change::Synced => self.synced(1),
            },
            Update::NodeMetric(change) => match *change {
                Change::Apply(metric) => {
                    let name = metric.metadata.name.clone().unwrap_or_default();
                    // Each unreadable quantity reads as absent (0); the rest
                    // of the NodeMetric is used.
                    for e in self.scheduler.apply_node_metric(metric, now) {
                        tracing::warn!(nodemetric = %name, error = %e, "quantity read as 0");
                    }
                }
                Change::Delete(name) => self.scheduler.remove_node_metric(&name, now),
                Change::Synced => self.synced(2),
            },
            Update::Quota(change) => {
                self.object(*change, ObjectKind::ElasticQuota, SchedulingObject::ElasticQuota)
            }
            Update::PodGroup(change) => {
                self.object(*change, ObjectKind::PodGroup, SchedulingObject::PodGroup)
            }
            Update::Reservation(change) => self.reservation(*change),
            Update::Budget(change) => self.object(
                *change,
                ObjectKind::PodDisruptionBudget,
                SchedulingObject::PodDisruptionBudget,
            ),
            Update::Claim(change) => self.object(
                *change,
                ObjectKind::PersistentVolumeClaim,
                SchedulingObject::PersistentVolumeClaim,
            ),
            Update::Volume(change) => self.object(
                *change,
                ObjectKind::PersistentVolume,
                SchedulingObject::PersistentVolume,
            ),
            Update::ReservationWriteFailed(name) => self.reservations.write_failed(&name),
            Update::CrdMissing(kind) => self.synced(synced_index(kind)),
            Update::Wake => {}
            Update::PreemptionFailed(pod) => {
                if self.scheduler.clear_nomination(&pod) {
                    tracing::info!(%pod, "nomination dropped: not every victim could be evicted");
                }
                self.clear_stale_nomination(&pod);
            }
        }
    }

    /// Applies a change of a scheduling object (quota, gang, reservation).
    fn object<K>(
        &mut self,
        change: Change<K>,
        kind: ObjectKind,
        wrap: fn(Arc<K>) -> SchedulingObject,
    ) {
        let now = Timestamp::now();
        match change {
            Change::Apply(object) => self.scheduler.apply_object(wrap(Arc::new(object)), now),
            Change::Delete(key) => self.scheduler.remove_object(&ObjectRef { kind, key }, now),
            Change::Synced => self.synced(synced_index(kind)),
        }
    }

    /// Applies a change of a Reservation: fed with its reserve pod, its
    /// status written when it changed.
    fn reservation(&mut self, change: Change<Reservation>) {
        let now = Timestamp::now();
        match change {
            Change::Apply(r) => {
                let write = self.reservations.apply(r, &mut self.scheduler, now);
                self.write_reservations(write);
            }
            Change::Delete(name) => self.reservations.remove(&name, &mut self.scheduler, now),
            Change::Synced => self.synced(synced_index(ObjectKind::Reservation)),
        }
    }

    /// Writes reservation statuses on the runtime; a failure is reported
    /// back so the next change retries.
    fn write_reservations(&self, writes: impl IntoIterator<Item = StatusWrite>) {
        for write in writes {
            let (client, health, report) =
                (self.client.clone(), self.health.clone(), self.preempted.clone());
            self.runtime.spawn(async move {
                let result = write_status(client, &write).await;
                health.count("reservation_status", &result);
                match result {
                    Ok(()) => tracing::info!(reservation = %write.name,
                        phase = ?write.object.status.as_ref().and_then(|s| s.phase.clone()),
                        "wrote Reservation status"),
                    Err(e) => {
                        tracing::warn!(error = %e, "Reservation status not written");
                        let _ = report.send(Update::ReservationWriteFailed(write.name));
                    }
                }
            });
        }
    }

    fn synced(&mut self, i: usize) {
        let kind = SYNCED_KINDS[i];
        if !self.synced[i] {
            tracing::info!(kind, "initial list done");
        }
        self.synced[i] = true;
        if self.synced.iter().all(|s| *s) && !self.health.is_ready() {
            tracing::info!("caches synced; scheduling");
            self.health.set_ready(true);
        }
    }

    /// Clears the pod's `status.nominatedNodeName` in the API when the
    /// object shows one and the scheduler holds none (dropped, or never
    /// this scheduler's).
    fn clear_stale_nomination(&mut self, pod: &str) {
        if self.scheduler.nominated_node(pod).is_some() {
            return;
        }
        if self.nominated_in_api.remove(pod).is_none() {
            return;
        }
        let uid = self.uids.get(pod).cloned().unwrap_or_default();
        let task =
            clear_nomination(self.client.clone(), self.health.clone(), PodRef::from_key(pod, &uid));
        self.runtime.spawn(task);
    }

    /// Carries out a preemption on the runtime (evictions, the nomination).
    fn preempt(&self, pod: &str, node: String, victims: Vec<kolo_scheduler::report::Victim>) {
        let uid = self.uids.get(pod).cloned().unwrap_or_default();
        let preemption = Preemption { preemptor: PodRef::from_key(pod, &uid), node, victims };
        tracing::info!(pod, node = %preemption.node, victims = preemption.victims.len(), "preempting");
        let key = pod.to_string();
        let task = preempt(
            self.client.clone(),
            self.reports.clone(),
            self.health.clone(),
            self.v1beta1_only.clone(),
            preemption,
        );
        let report = self.preempted.clone();
        self.runtime.spawn(async move {
            if !task.await {
                let _ = report.send(Update::PreemptionFailed(key));
            }
        });
    }

    fn handle(&mut self, report: CycleReport) {
        if let Some(name) = report.pod.strip_prefix(RESERVE_POD_PREFIX) {
            return self.handle_reservation(name.to_string(), report.outcome);
        }
        let (unschedulable, message) = match report.outcome {
            Outcome::Scheduled { node, total, .. } => {
                tracing::debug!(pod = %report.pod, %node, total, "assumed; binding");
                self.reported.remove(&report.pod);
                if let Some(arrived) = self.arrived.remove(&report.pod) {
                    self.metrics.assigned(arrived.elapsed());
                }
                return;
            }
            Outcome::Waiting { node } => {
                tracing::debug!(pod = %report.pod, %node, "waiting for permit");
                return;
            }
            Outcome::Unschedulable { message, nominated, victims, .. } => {
                match nominated {
                    Some(node) => self.preempt(&report.pod, node, victims),
                    None => self.clear_stale_nomination(&report.pod),
                }
                (true, message)
            }
            Outcome::Failed { message } => (false, message),
        };
        if self.reported.get(&report.pod) == Some(&message) {
            return;
        }
        tracing::info!(pod = %report.pod, %message, "cannot schedule");
        self.reported.insert(report.pod.clone(), message.clone());
        let uid = self.uids.get(&report.pod).cloned().unwrap_or_default();
        let pod = PodRef::from_key(&report.pod, &uid);
        let reports = self.reports.clone();
        self.runtime.spawn(async move { reports.failed(&pod, unschedulable, &message).await });
    }

    /// A cycle of a reservation's reserve pod: a failure goes to the
    /// reservation's status (no Event, no pod condition: there is no pod).
    fn handle_reservation(&mut self, name: String, outcome: Outcome) {
        let message = match outcome {
            Outcome::Unschedulable { message, .. } | Outcome::Failed { message } => message,
            Outcome::Scheduled { node, .. } | Outcome::Waiting { node } => {
                tracing::debug!(reservation = %name, %node, "reservation assumed");
                return;
            }
        };
        tracing::info!(reservation = %name, %message, "cannot schedule reservation");
        let write = self.reservations.unschedulable(&name, &message, Timestamp::now());
        self.write_reservations(write);
    }
}

/// The `status.nominatedNodeName` of a pod not yet assigned, if set.
fn api_nomination(pod: &Pod) -> Option<String> {
    if pod.spec.as_ref().is_some_and(|s| s.node_name.is_some()) {
        return None;
    }
    let node = pod.status.as_ref()?.nominated_node_name.as_deref()?;
    (!node.is_empty()).then(|| node.to_string())
}
