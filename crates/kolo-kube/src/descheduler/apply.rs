//! Carrying out a round's [`Action`]s against the API server, one at a
//! time and in order (a job's Reservation is created before the job's spec
//! names it).
//!
//! * every object the API server answers a write with goes into the
//!   driver's stores at once, so the next round (500 ms later) neither
//!   repeats a create nor writes over it with a stale `resourceVersion`;
//! * job status and spec writes carry the `resourceVersion` last seen: a
//!   write over a newer object is refused (409) and the next round, on the
//!   newer object, decides again;
//! * an eviction's outcome (a PodDisruptionBudget's refusal among them) is
//!   handed back for the migration controller;
//! * in a dry run only Events are written; every other action is logged
//!   and counted (`kolo_descheduler_actions_total{result="dry_run"}`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kolo_api::crd::{PodMigrationJob, Reservation};
use kolo_core::PodRef;
use kolo_descheduler::{Action, Event, ObjectKey};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, ResourceExt};

use super::events::Events;
use super::evict::{EvictionOutcome, evict_pod};
use super::metrics::DeschedulerMetrics;
use super::stores::Stores;
use crate::error::KubeError;
use crate::health::{ActionLabels, Health};

/// What the migration controller must hear about an action carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// How an eviction went.
    Eviction(EvictionReport),
    /// How creating the Reservation `name` went (`Err`: the API's message;
    /// one that already exists counts as created).
    Reservation {
        /// The Reservation.
        name: String,
        /// `Ok`, or why the API refused it.
        result: Result<(), String>,
    },
}

/// An eviction's outcome, for the migration controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvictionReport {
    /// The job the eviction belonged to, if any.
    pub job: Option<String>,
    /// The pod.
    pub pod: PodRef,
    /// How it ended.
    pub outcome: EvictionOutcome,
}

/// Why an action was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The API server refused or failed the write.
    #[error(transparent)]
    Api(#[from] KubeError),
    /// The action names a job the driver does not know (deleted
    /// meanwhile): there is no `resourceVersion` to write over.
    #[error("PodMigrationJob/{job}: not in the driver's store (deleted meanwhile?)")]
    UnknownJob {
        /// The job.
        job: String,
    },
}

/// Carries out actions.
pub struct Applier {
    client: Client,
    /// A client without kube's retry of 429 (see [`super::evict`]).
    evictions: Client,
    events: Events,
    health: Arc<Health>,
    metrics: Arc<DeschedulerMetrics>,
    v1beta1_only: AtomicBool,
    dry_run: bool,
}

/// The name an action's log and `actions_total` counter use.
pub fn action_name(action: &Action) -> &'static str {
    match action {
        Action::CreateJob(_) => "create_job",
        Action::SetJobSpec { .. } => "update_job",
        Action::SetJobStatus { .. } => "update_job_status",
        Action::DeleteJob { .. } => "delete_job",
        Action::CreateReservation(_) => "create_reservation",
        Action::DeleteReservation { .. } => "delete_reservation",
        Action::Evict { .. } => "evict",
        Action::Event(_) => "event",
    }
}

impl Applier {
    /// An applier writing through `client` (evictions through
    /// `evictions`); in a dry run only Events are written.
    pub fn new(
        client: Client,
        evictions: Client,
        events: Events,
        health: Arc<Health>,
        metrics: Arc<DeschedulerMetrics>,
        dry_run: bool,
    ) -> Applier {
        Applier {
            client,
            evictions,
            events,
            health,
            metrics,
            v1beta1_only: AtomicBool::new(false),
            dry_run,
        }
    }

    /// Carries out `action`, updating `stores` with what the API server
    /// answered; returns what the migration controller must hear (an
    /// eviction's outcome, a Reservation's creation). A failed write is
    /// logged and counted: the next round decides again on what the watch
    /// shows.
    pub async fn apply(&self, action: Action, stores: &mut Stores) -> Option<Report> {
        let name = action_name(&action);
        if let Action::Event(event) = action {
            self.events.record(event);
            return None;
        }
        if self.dry_run {
            tracing::info!(action = name, detail = ?action, "dry run: not written");
            let labels = ActionLabels { action: name.into(), result: "dry_run".into() };
            self.health.actions.get_or_create(&labels).inc();
            return None;
        }
        if let Action::Evict { pod, job, reason } = action {
            return Some(Report::Eviction(self.evict(pod, job, &reason).await));
        }
        let reservation = match &action {
            Action::CreateReservation(r) => Some(r.name_any()),
            _ => None,
        };
        let result = self.write(action, stores).await;
        self.health.count(name, &result);
        if let Err(e) = &result {
            tracing::warn!(action = name, error = %e, "write failed; the next round decides again");
        }
        reservation
            .map(|name| Report::Reservation { name, result: result.map_err(|e| e.to_string()) })
    }

    async fn write(&self, action: Action, stores: &mut Stores) -> Result<(), ApplyError> {
        let pp = PostParams::default();
        let jobs: Api<PodMigrationJob> = Api::all(self.client.clone());
        let reservations: Api<Reservation> = Api::all(self.client.clone());
        match action {
            Action::CreateJob(job) => {
                let status = job.status.clone();
                let what = format!("PodMigrationJob/{}", job.name_any());
                let mut created = match jobs.create(&pp, &job).await {
                    Ok(created) => created,
                    Err(e) if already_exists(&e) => {
                        tracing::debug!(job = %job.name_any(), "PodMigrationJob exists already");
                        return Ok(());
                    }
                    Err(e) => return Err(KubeError::api("create", &what, e).into()),
                };
                tracing::info!(job = %created.name_any(), pod = ?job.spec.pod_ref.as_ref().and_then(|r| r.name.as_deref()), "created PodMigrationJob");
                // The status subresource ignores a status sent with the
                // create; it is written next.
                if status.is_some() && created.status != status {
                    created.status = status;
                    created = jobs
                        .replace_status(&created.name_any(), &pp, &created)
                        .await
                        .map_err(|e| KubeError::api("update status of", &what, e))?;
                }
                stores.put_job(created);
            }
            Action::SetJobStatus { job, status } => {
                let what = format!("PodMigrationJob/{job}");
                let mut object = self.stored_job(stores, &job)?;
                object.status = Some(*status);
                let written = jobs
                    .replace_status(&job, &pp, &object)
                    .await
                    .map_err(|e| KubeError::api("update status of", &what, e))?;
                tracing::info!(%job, phase = ?written.status.as_ref().and_then(|s| s.phase.as_deref()), "wrote PodMigrationJob status");
                stores.put_job(written);
            }
            Action::SetJobSpec { job, spec } => {
                let what = format!("PodMigrationJob/{job}");
                let mut object = self.stored_job(stores, &job)?;
                object.spec = *spec;
                let written = jobs
                    .replace(&job, &pp, &object)
                    .await
                    .map_err(|e| KubeError::api("update", &what, e))?;
                stores.put_job(written);
            }
            Action::DeleteJob { job } => {
                delete(&jobs, &job).await?;
                tracing::info!(%job, "deleted PodMigrationJob");
                stores.remove_job(&job);
            }
            Action::CreateReservation(r) => {
                let what = format!("Reservation/{}", r.name_any());
                let created = match reservations.create(&pp, &r).await {
                    Ok(created) => created,
                    Err(e) if already_exists(&e) => {
                        tracing::debug!(reservation = %r.name_any(), "Reservation exists already");
                        return Ok(());
                    }
                    Err(e) => {
                        if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                            tracing::warn!(
                                "the Reservation CRD is not installed: ReservationFirst migrations cannot progress"
                            );
                        }
                        return Err(KubeError::api("create", &what, e).into());
                    }
                };
                tracing::info!(reservation = %created.name_any(), "created Reservation");
                stores.put_reservation(created);
            }
            Action::DeleteReservation { name } => {
                delete(&reservations, &name).await?;
                tracing::info!(reservation = %name, "deleted Reservation");
                stores.remove_reservation(&name);
            }
            Action::Evict { .. } | Action::Event(_) => {}
        }
        Ok(())
    }

    /// The job as last seen (its `resourceVersion` guards the write).
    fn stored_job(&self, stores: &Stores, name: &str) -> Result<PodMigrationJob, ApplyError> {
        stores
            .job_named(name)
            .map(|j| (**j).clone())
            .ok_or_else(|| ApplyError::UnknownJob { job: name.into() })
    }

    /// Evicts a pod and records the outcome (metric, log, Event on the pod).
    async fn evict(&self, pod: PodRef, job: Option<String>, reason: &str) -> EvictionReport {
        let outcome = evict_pod(&self.evictions, &pod, &self.v1beta1_only).await;
        self.metrics.eviction(outcome.label());
        let ok = outcome.result().is_ok();
        let labels =
            ActionLabels { action: "evict".into(), result: if ok { "ok" } else { "error" }.into() };
        self.health.actions.get_or_create(&labels).inc();
        let regarding = ObjectKey {
            kind: "Pod",
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            uid: pod.uid.clone(),
        };
        let job_note =
            job.as_deref().map(|j| format!(" (PodMigrationJob {j})")).unwrap_or_default();
        let event = match outcome.result() {
            Ok(()) => {
                tracing::info!(pod = %pod, job = ?job, %reason, "evicted");
                Event {
                    regarding,
                    warning: false,
                    reason: "Descheduled".into(),
                    message: format!("Evicted by kolo-descheduler{job_note}: {reason}"),
                }
            }
            Err(message) => {
                tracing::warn!(pod = %pod, job = ?job, error = %message, "eviction refused or failed");
                Event {
                    regarding,
                    warning: true,
                    reason: "FailedEvict".into(),
                    message: format!("Not evicted{job_note}: {message}"),
                }
            }
        };
        self.events.record(event);
        EvictionReport { job, pod, outcome }
    }
}

/// Whether a create failed because the object exists (a create the
/// driver made before a restart, or a retried one).
fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists")
}

/// Deletes an object; one already gone is fine.
async fn delete<K>(api: &Api<K>, name: &str) -> Result<(), KubeError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(KubeError::api("delete", format!("{}/{name}", K::kind(&())), e)),
    }
}
