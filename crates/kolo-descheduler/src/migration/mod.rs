//! The PodMigrationJob controller (spec §10), as pure decisions.
//!
//! [`MigrationController`] remembers what a controller must between passes
//! (the eviction token bucket, the workload object limiter, and the writes
//! it asked for that the driver's store does not show yet); every pass
//! reads a [`Cluster`] and the time and returns [`Action`]s:
//!
//! * [`MigrationController::evictor`]: the [`Evictor`](crate::Evictor) a
//!   Balance plugin evicts through; each eviction becomes a Pending job
//!   ([`job_evictor`]);
//! * [`MigrationController::reconcile`]: arbitration of Pending jobs
//!   ([`arbitration`]), the state machine of every job ([`reconcile`]),
//!   the scavenger ([`scavenger`]);
//! * [`MigrationController::eviction_result`]: the driver reports how an
//!   eviction went (a PodDisruptionBudget may refuse it);
//!   [`MigrationController::reservation_result`] likewise for a
//!   Reservation it created.
//!
//! Pieces: [`args`] (configuration), [`limits`] (the retryable limits),
//! [`object_limiter`] (per-workload window), [`rate_limit`] (eviction
//! token bucket), [`reservation`] (the Reservation built from a pod),
//! [`job`] (reading and writing jobs, job names).
//!
//! Not done: preemption for unschedulable reservations (Koordinator's
//! plain Reservation interpreter never asks for it either), the
//! `DisablePVCReservation` gate, and reconcile step 4 (the object limiter
//! is charged when a job is created, so only jobs created elsewhere would
//! meet it).

pub mod arbitration;
pub mod args;
pub mod job;
pub mod job_evictor;
pub mod limits;
pub mod object_limiter;
pub mod rate_limit;
pub mod reconcile;
pub mod reservation;
pub mod scavenger;
#[cfg(test)]
mod testing;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use kolo_scheduler::framework::PodInfo;

pub use args::{ArgsError, MigrationControllerArgs};
pub use job_evictor::JobEvictor;

use crate::cluster::Cluster;
use crate::evictor_filter::EvictorFilter;
use crate::plan::Action;
use object_limiter::ObjectLimiter;
use rate_limit::TokenBucket;

/// The identity a controller writes in `koordinator.sh/job-created-by`
/// unless given another ([`MigrationController::with_identity`]).
pub const DEFAULT_IDENTITY: &str = "kolo-descheduler";

/// A job this controller asked the driver to create, not yet in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CreatedJob {
    pub job: String,
    pub pod_uid: String,
    pub at: Timestamp,
}

/// What the controller asked for and the store may not show yet.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memory {
    /// By pod key: jobs created, until the store shows them.
    pub created: HashMap<String, CreatedJob>,
    /// Names of Pending jobs that passed arbitration (until the store
    /// shows them Running or over).
    pub passed: HashSet<String>,
    /// By job: the reservation created for it, until the job's spec names
    /// it and the store holds it.
    pub reservations: HashMap<String, String>,
    /// Jobs whose pod the controller asked to evict (never twice).
    pub evicted: HashSet<String>,
    /// Refused evictions the driver reported, by job.
    pub refused: HashMap<String, String>,
    /// Reservation creations the driver reported failed, by job.
    pub failed_reservations: HashMap<String, String>,
    /// Jobs the scavenger deleted, until they are gone.
    pub deleted: HashSet<String>,
}

/// Why the controller cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The args are invalid.
    #[error(transparent)]
    Args(#[from] ArgsError),
}

/// The PodMigrationJob controller (see the module documentation).
#[derive(Debug, Clone)]
pub struct MigrationController {
    args: MigrationControllerArgs,
    filter: EvictorFilter,
    identity: String,
    bucket: TokenBucket,
    limiter: ObjectLimiter,
    memory: Memory,
}

impl MigrationController {
    /// A controller with `args` (validated) that has done nothing yet.
    pub fn new(args: MigrationControllerArgs) -> Result<MigrationController, Error> {
        args.validate()?;
        let filter = args
            .filter()
            .map_err(|e| ArgsError::Invalid { field: "filter", message: e.to_string() })?;
        let bucket = TokenBucket::new(args.evict_qps.0, args.evict_burst.max(1) as u32);
        let window = args.workload_limiter().map_or(Duration::ZERO, |l| l.duration.0);
        Ok(MigrationController {
            filter,
            identity: DEFAULT_IDENTITY.into(),
            bucket,
            limiter: ObjectLimiter::new(window),
            memory: Memory::default(),
            args,
        })
    }

    /// The same controller writing `identity` in the jobs it creates and
    /// ignoring jobs that carry another (several descheduler instances).
    pub fn with_identity(mut self, identity: impl Into<String>) -> MigrationController {
        self.identity = identity.into();
        self
    }

    /// The args.
    pub fn args(&self) -> &MigrationControllerArgs {
        &self.args
    }

    /// The identity written in `koordinator.sh/job-created-by`.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The evictor filter.
    pub fn filter(&self) -> &EvictorFilter {
        &self.filter
    }

    /// The evictor a Balance plugin evicts through during one round at
    /// `now`. `trigger` is written in `koordinator.sh/evict-trigger` when
    /// a request names no plugin. Take its actions with
    /// [`JobEvictor::into_actions`].
    pub fn evictor<'a>(
        &'a mut self,
        cluster: &'a Cluster,
        now: Timestamp,
        trigger: &'a str,
    ) -> JobEvictor<'a> {
        JobEvictor::new(self, cluster, now, trigger)
    }

    /// One pass over every PodMigrationJob at `now`: forgets what the
    /// store now shows, arbitrates Pending jobs, advances each job, and
    /// scavenges old ones (in that order in the returned actions).
    pub fn reconcile(&mut self, cluster: &Cluster, now: Timestamp) -> Vec<Action> {
        self.forget_seen(cluster, now);
        let scavenged = scavenger::scavenge(cluster, now, &mut self.memory);
        let arbitrated = arbitration::arbitrate(self, cluster, now, &scavenged.jobs);
        let mut actions = arbitrated.actions;
        for job in cluster.jobs() {
            let name = job::name(job);
            if scavenged.jobs.contains(&name) || arbitrated.failed.contains(&name) {
                continue;
            }
            let passed = arbitrated.passed.contains(&name);
            actions.extend(reconcile::reconcile_job(self, cluster, now, job, passed));
        }
        actions.extend(scavenged.actions);
        actions
    }

    /// The driver's report on the eviction it carried out for `job`:
    /// `Ok` changes nothing (the job completes its Eviction condition once
    /// the pod is gone); `Err(message)` (a PodDisruptionBudget's 429, a
    /// 403, ...) makes the next [`reconcile`](Self::reconcile) set the
    /// job's `Eviction` condition False with reason `FailedEvict` and the
    /// message, and the job `Failed` with reason `FailedEvict` and message
    /// `Failed evict Pod "<ns>/<name>" caused by <message>`. The refusal
    /// is not retried: a later Balance round may create a new job.
    pub fn eviction_result(&mut self, job: &str, result: Result<(), String>, now: Timestamp) {
        let _ = now;
        match result {
            Ok(()) => {
                self.memory.refused.remove(job);
            }
            Err(message) => {
                self.memory.refused.insert(job.to_string(), message);
            }
        }
    }

    /// The driver's report on the Reservation it created for `job`: `Ok`
    /// changes nothing; `Err(message)` (the API refused it) makes the next
    /// [`reconcile`](Self::reconcile) set the job's `ReservationCreated`
    /// condition False with reason `FailedCreateReservation` and the job
    /// `Failed` with the same reason and message `Failed to create
    /// Reservation caused by <message>` (Koordinator retries until the
    /// TTL; the job would otherwise fail as `MissingReservation`, its spec
    /// already naming the reservation).
    pub fn reservation_result(&mut self, job: &str, result: Result<(), String>) {
        match result {
            Ok(()) => {
                self.memory.failed_reservations.remove(job);
            }
            Err(message) => {
                self.memory.failed_reservations.insert(job.to_string(), message);
            }
        }
    }

    /// Whether `pod` has a Pending or Running job (in the store, or just
    /// created by this controller).
    pub fn has_active_job(&self, cluster: &Cluster, pod: &PodInfo) -> bool {
        let view = pod.view();
        if self
            .memory
            .created
            .get(pod.key())
            .is_some_and(|c| c.pod_uid.is_empty() || c.pod_uid == view.uid())
        {
            return true;
        }
        cluster.jobs().iter().any(|j| {
            job::is_active(j)
                && job::pod_ref(j).is_some_and(|(ns, name, uid)| {
                    (!uid.is_empty() && uid == view.uid())
                        || (ns == view.namespace() && name == view.name())
                })
        })
    }

    /// Forgets remembered writes the store now shows (or that can no
    /// longer matter).
    fn forget_seen(&mut self, cluster: &Cluster, now: Timestamp) {
        let jobs: HashMap<String, &kolo_api::crd::PodMigrationJob> =
            cluster.jobs().iter().map(|j| (job::name(j), &**j)).collect();
        let ttl = self.args.default_job_ttl.0 + Duration::from_secs(300);
        let horizon = i128::try_from(ttl.as_nanos()).unwrap_or(i128::MAX);
        self.memory.created.retain(|_, c| {
            !jobs.contains_key(&c.job) && now.as_nanosecond() - c.at.as_nanosecond() < horizon
        });
        let pending = |name: &String| jobs.get(name).is_some_and(|j| job::phase(j) == "Pending");
        self.memory.passed.retain(|n| pending(n));
        let active = |name: &String| jobs.get(name).is_some_and(|j| job::is_active(j));
        self.memory.reservations.retain(|j, r| {
            active(j)
                && !(jobs.get(j).and_then(|j| job::reservation_ref(j)) == Some(r.as_str())
                    && cluster.reservation(r).is_some())
        });
        self.memory.evicted.retain(|n| active(n));
        self.memory.refused.retain(|n, _| active(n));
        self.memory.failed_reservations.retain(|n, _| active(n));
        self.memory.deleted.retain(|n| jobs.contains_key(n));
    }
}
