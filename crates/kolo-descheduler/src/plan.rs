//! The actions a descheduler round asks of its driver: data, not calls.
//!
//! The kolo-kube driver carries each out against the API server (an
//! eviction through the Eviction API, so PodDisruptionBudgets hold); the
//! simulator applies them to its cluster; `kolo deschedule` prints them.

use kolo_api::crd::{PodMigrationJob, PodMigrationJobSpec, PodMigrationJobStatus, Reservation};
use kolo_core::PodRef;

/// An object an Event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectKey {
    /// `Pod`, `PodMigrationJob`, `Node`, `Reservation`.
    pub kind: &'static str,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`, when known.
    pub uid: String,
}

/// A Kubernetes Event to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What it is about.
    pub regarding: ObjectKey,
    /// `Normal` when false.
    pub warning: bool,
    /// CamelCase reason (`Evicting`, `MigrationCreated`, ...).
    pub reason: String,
    /// One line for an operator.
    pub message: String,
}

/// One thing the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create this PodMigrationJob (its name, or `generateName`, is set).
    CreateJob(Box<PodMigrationJob>),
    /// Replace the spec of job `job` (records the reservation it created).
    SetJobSpec {
        /// The job's name.
        job: String,
        /// The whole new spec.
        spec: Box<PodMigrationJobSpec>,
    },
    /// Replace the status of job `job`.
    SetJobStatus {
        /// The job's name.
        job: String,
        /// The whole new status.
        status: Box<PodMigrationJobStatus>,
    },
    /// Delete job `job` (the scavenger).
    DeleteJob {
        /// The job's name.
        job: String,
    },
    /// Create this Reservation.
    CreateReservation(Box<Reservation>),
    /// Delete the Reservation named `name`.
    DeleteReservation {
        /// The Reservation's name.
        name: String,
    },
    /// Evict the pod through the Eviction API (PodDisruptionBudgets hold;
    /// a refusal is reported back to the job, not retried blindly).
    Evict {
        /// The pod (its UID guards against evicting a replacement).
        pod: PodRef,
        /// The job this eviction belongs to, if any.
        job: Option<String>,
        /// Why, for the Event and the log.
        reason: String,
    },
    /// Record an Event.
    Event(Event),
}
