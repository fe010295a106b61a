//! The descheduler's loop: watches in, rounds in the middle, writes out.
//!
//! One task owns the [`Descheduler`], the stores and the applier. It
//! applies the watchers' changes as they come, and once every kind's first
//! list is in (it never decides on a partial view) it runs
//!
//! * `balance` every `deschedulingInterval` (the first right after the
//!   caches sync), and
//! * `migrate` every [`MIGRATE_INTERVAL`], and [`MIGRATE_DEBOUNCE`] after
//!   a pod, job or reservation changes (a burst of changes makes one pass),
//!
//! carrying out each round's actions in order before the next round.

use std::sync::Arc;
use std::time::Duration;

use kolo_core::clock::Timestamp;
use kolo_descheduler::Descheduler;
use kube::Client;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::{Instant, sleep_until};

use std::collections::HashMap;

use super::apply::{Applier, Report};
use super::events::Events;
use super::metrics::DeschedulerMetrics;
use super::stores::{Stores, Touched, Update};
use super::watch::{WatchScope, spawn_watchers};
use crate::error::KubeError;
use crate::health::Health;
use crate::leader::Leadership;
use kolo_descheduler::Action;
use kolo_descheduler::migration::job::spec_reservation;

/// How often the migration controller runs without a change.
pub const MIGRATE_INTERVAL: Duration = Duration::from_millis(500);

/// How long after a pod, job or reservation change it runs.
pub const MIGRATE_DEBOUNCE: Duration = Duration::from_millis(50);

/// How the driver runs.
#[derive(Debug, Clone)]
pub struct DeschedulerOptions {
    /// Which pods and nodes are watched.
    pub scope: WatchScope,
    /// This instance's name in Events.
    pub identity: String,
}

/// kolo's descheduler against a cluster.
pub struct DeschedulerDriver {
    descheduler: Descheduler,
    client: Client,
    evictions: Client,
    options: DeschedulerOptions,
    health: Arc<Health>,
}

impl DeschedulerDriver {
    /// A driver running `descheduler`'s rounds (its configuration says
    /// the interval and whether this is a dry run), writing through
    /// `client` and evicting through `evictions` (a client that does not
    /// retry 429: [`super::eviction_client`]).
    pub fn new(
        descheduler: Descheduler,
        client: Client,
        evictions: Client,
        options: DeschedulerOptions,
        health: Arc<Health>,
    ) -> DeschedulerDriver {
        DeschedulerDriver { descheduler, client, evictions, options, health }
    }

    /// Watches and deschedules until leadership is lost (when `leadership`
    /// is given; the caller acquired it) or the process ends.
    pub async fn run(self, leadership: Option<Leadership>) -> Result<(), KubeError> {
        let DeschedulerDriver { descheduler, client, evictions, options, health } = self;
        if !descheduler.balances() {
            tracing::warn!(
                "no Balance plugin enabled: only existing PodMigrationJobs are advanced"
            );
        }
        let (tx, rx) = unbounded_channel();
        spawn_watchers(&client, &options.scope, &tx);
        drop(tx);
        let metrics = DeschedulerMetrics::new(&health);
        let events =
            Events::new(client.clone(), "kolo-descheduler", &options.identity, health.clone());
        let dry_run = descheduler.is_dry_run();
        if dry_run {
            tracing::info!("dry run: only Events are written");
        }
        let applier =
            Applier::new(client, evictions, events, health.clone(), metrics.clone(), dry_run);
        let interval = descheduler.interval().max(Duration::from_secs(1));
        tracing::info!(?interval, dry_run, "descheduling");
        let rounds = Rounds {
            descheduler,
            stores: Stores::new(options.scope.namespace.clone()),
            applier,
            metrics,
            health,
            interval,
        };
        tokio::select! {
            e = Leadership::lost_if_held(leadership) => Err(e),
            () = rounds.run(rx) => Ok(()),
        }
    }
}

/// The loop's state.
struct Rounds {
    descheduler: Descheduler,
    stores: Stores,
    applier: Applier,
    metrics: Arc<DeschedulerMetrics>,
    health: Arc<Health>,
    interval: Duration,
}

impl Rounds {
    async fn run(mut self, mut updates: UnboundedReceiver<Update>) {
        let mut next_balance = Instant::now();
        let mut next_migrate = Instant::now() + MIGRATE_INTERVAL;
        loop {
            let wake = next_migrate.min(next_balance);
            tokio::select! {
                update = updates.recv() => match update {
                    Some(update) => self.note(update, &mut next_migrate),
                    None => return, // every watcher is gone
                },
                () = sleep_until(wake) => {}
            }
            while let Ok(update) = updates.try_recv() {
                self.note(update, &mut next_migrate);
            }
            if !self.stores.synced() {
                continue; // never decide on a partial view of the cluster
            }
            if !self.health.is_ready() {
                tracing::info!("caches synced; descheduling");
                self.health.set_ready(true);
            }
            if Instant::now() >= next_balance {
                self.balance().await;
                next_balance = Instant::now() + self.interval;
            }
            if Instant::now() >= next_migrate {
                self.migrate().await;
                next_migrate = Instant::now() + MIGRATE_INTERVAL;
            }
            self.metrics.set_migrations(&self.stores.jobs_by_phase());
            self.metrics.reservation_crd.set(i64::from(self.stores.reservation_crd()));
        }
    }

    /// Applies a watcher's change; a pod, job or reservation brings the
    /// next migration pass forward.
    fn note(&mut self, update: Update, next_migrate: &mut Instant) {
        if self.stores.apply(update) == Touched::Migration {
            *next_migrate = (*next_migrate).min(Instant::now() + MIGRATE_DEBOUNCE);
        }
    }

    /// One Balance round and its actions.
    async fn balance(&mut self) {
        let cluster = self.stores.cluster();
        let started = std::time::Instant::now();
        let round = self.descheduler.balance(&cluster, Timestamp::now());
        self.metrics.balance_round(started.elapsed(), &round.pools);
        for pool in &round.pools {
            let classes: Vec<String> =
                pool.nodes.iter().map(|n| format!("{}={}", n.node, n.class.as_str())).collect();
            let candidates: Vec<String> =
                pool.candidates.iter().map(|c| format!("{}: {:?}", c.pod, c.verdict)).collect();
            tracing::debug!(
                pool = %pool.pool, stopped = %pool.stopped, ?classes, ?candidates, "balance round"
            );
        }
        self.carry_out(round.actions).await;
    }

    /// One migration pass and its actions.
    async fn migrate(&mut self) {
        let cluster = self.stores.cluster();
        let actions = self.descheduler.migrate(&cluster, Timestamp::now());
        self.carry_out(actions).await;
    }

    /// Carries out a round's actions in order and tells the migration
    /// controller how its evictions and Reservations went (a
    /// PodDisruptionBudget's refusal is an expected answer: the
    /// controller's next pass fails the job with `FailedEvict`).
    async fn carry_out(&mut self, actions: Vec<Action>) {
        let owners = reservation_jobs(&actions);
        for action in actions {
            match self.applier.apply(action, &mut self.stores).await {
                Some(Report::Eviction(report)) => {
                    if let Some(job) = &report.job {
                        let result = report.outcome.result();
                        self.descheduler.eviction_result(job, result, Timestamp::now());
                    }
                }
                Some(Report::Reservation { name, result }) => {
                    let job = owners.get(&name).map_or(name.as_str(), String::as_str);
                    self.descheduler.reservation_result(job, result);
                }
                None => {}
            }
        }
    }
}

/// Reservation name → the job whose new spec names it, among `actions`
/// (the controller creates a job's Reservation and records it in the
/// job's spec in the same pass). A Reservation no spec names is the job's
/// own name (the controller's default).
pub fn reservation_jobs(actions: &[Action]) -> HashMap<String, String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SetJobSpec { job, spec } => {
                Some((spec_reservation(spec)?.to_string(), job.clone()))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kolo_api::crd::{PodMigrateReservationOptions, PodMigrationJobSpec};

    use super::*;

    #[test]
    fn a_reservation_is_reported_for_the_job_whose_spec_names_it() {
        let spec = PodMigrationJobSpec {
            reservation_options: Some(PodMigrateReservationOptions {
                reservation_ref: Some(ObjectReference {
                    name: Some("r-1".into()),
                    ..ObjectReference::default()
                }),
                ..PodMigrateReservationOptions::default()
            }),
            ..PodMigrationJobSpec::default()
        };
        let actions = [
            Action::DeleteJob { job: "old".into() },
            Action::SetJobSpec { job: "job-1".into(), spec: Box::new(spec) },
            Action::SetJobSpec { job: "job-2".into(), spec: Box::default() },
        ];
        let owners = reservation_jobs(&actions);
        assert_eq!(owners.get("r-1").map(String::as_str), Some("job-1"));
        assert_eq!(owners.len(), 1, "a spec naming no Reservation maps nothing");
    }
}
