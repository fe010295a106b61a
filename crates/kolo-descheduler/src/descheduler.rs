//! [`Descheduler`]: the round object the drivers hold (kolo-kube's
//! `kolo descheduler`, kolo-sim's engine, `kolo deschedule --snapshot`).
//!
//! * [`Descheduler::balance`] runs the Balance plugins (LowNodeLoad) once,
//!   every `deschedulingInterval`; their evictions become PodMigrationJobs
//!   through the migration controller (or, in a dry run, Events only).
//! * [`Descheduler::migrate`] advances every PodMigrationJob: arbitration
//!   of pending jobs, the reconcile state machine, the scavenger. Drivers
//!   call it often (every 500 ms, and when a job, pod or reservation
//!   changes).
//! * [`Descheduler::eviction_result`] and
//!   [`Descheduler::reservation_result`] tell the controller how the
//!   driver's writes went (a PodDisruptionBudget refusing an eviction
//!   fails the job, it is not retried blindly).

use std::time::Duration;

use kolo_core::HasMeta;
use kolo_core::clock::Timestamp;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::config::{ConfigError, DeschedulerConfig, DeschedulerProfile};
use crate::low_node_load::{self, CandidateVerdict, LowNodeLoad, LowNodeLoadArgs, PoolReport};
use crate::migration::{MigrationController, MigrationControllerArgs};
use crate::plan::{Action, Event, ObjectKey};

/// The one evictor (and evictor filter) plugin.
pub const MIGRATION_CONTROLLER: &str = "MigrationController";

/// What one Balance round decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    /// Per profile and node pool, what LowNodeLoad saw and chose.
    pub pools: Vec<PoolReport>,
    /// What the driver must do (create jobs and Events; in a dry run,
    /// Events only).
    pub actions: Vec<Action>,
}

/// One enabled Balance plugin.
#[derive(Debug, Clone)]
struct BalancePlugin {
    profile: String,
    plugin: LowNodeLoad,
}

/// The descheduler, one round at a time.
#[derive(Debug, Clone)]
pub struct Descheduler {
    interval: Duration,
    dry_run: bool,
    balance: Vec<BalancePlugin>,
    migration: MigrationController,
}

impl Descheduler {
    /// A descheduler for `config` that has seen nothing yet. Fails when a
    /// plugin is unknown or refuses its args (the error names the profile,
    /// plugin and field).
    pub fn new(config: &DeschedulerConfig) -> Result<Descheduler, ConfigError> {
        let interval = config.interval()?;
        let dry_run = config.is_dry_run();
        let mut balance = Vec::new();
        let mut migration_args: Option<(String, Value)> = None;
        for (i, profile) in config.profiles().iter().enumerate() {
            check_plugins(i, profile)?;
            if DeschedulerProfile::enabled(&profile.plugins.balance, low_node_load::NAME, false) {
                let field = format!("profiles[{i}].pluginConfig[{}].args", low_node_load::NAME);
                let args = profile.args(low_node_load::NAME).cloned().unwrap_or(Value::Null);
                let plugin = LowNodeLoadArgs::from_value(args)
                    .and_then(LowNodeLoad::new)
                    .map_err(|e| invalid(&field, e.to_string()))?;
                balance.push(BalancePlugin { profile: profile.name.clone(), plugin });
            }
            if let Some(args) = profile.args(MIGRATION_CONTROLLER) {
                let field = format!("profiles[{i}].pluginConfig[{MIGRATION_CONTROLLER}].args");
                match &migration_args {
                    Some((first, earlier)) if earlier != args => {
                        let message = format!(
                            "differs from the args in {first}: kolo runs one migration controller"
                        );
                        return Err(invalid(&field, message));
                    }
                    _ => migration_args = Some((field, args.clone())),
                }
            }
        }
        let (field, args) = migration_args.unwrap_or_else(|| {
            (format!("{MIGRATION_CONTROLLER} args"), Value::Object(Default::default()))
        });
        let mut args = MigrationControllerArgs::from_value(args)
            .map_err(|e| invalid(&field, e.to_string()))?;
        // The top-level dryRun makes the controller record Events only; its
        // own dryRun does as much.
        args.dry_run |= dry_run;
        let dry_run = args.dry_run;
        let migration =
            MigrationController::new(args).map_err(|e| invalid(&field, e.to_string()))?;
        Ok(Descheduler { interval, dry_run, balance, migration })
    }

    /// The migration controller's identity (`job-created-by`): jobs with
    /// another are left alone.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Descheduler {
        self.migration = self.migration.with_identity(identity);
        self
    }

    /// How often [`balance`](Self::balance) should run.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Whether this is a dry run: Events only, no job, reservation or
    /// eviction.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Whether any Balance plugin is enabled.
    pub fn balances(&self) -> bool {
        !self.balance.is_empty()
    }

    /// The migration controller (its args, its filter).
    pub fn migration(&self) -> &MigrationController {
        &self.migration
    }

    /// One Balance round over `cluster` at `now`.
    pub fn balance(&mut self, cluster: &Cluster, now: Timestamp) -> Round {
        let mut pools = Vec::new();
        let mut dry_run_events = Vec::new();
        let mut evictor = self.migration.evictor(cluster, now, low_node_load::NAME);
        for balance in &mut self.balance {
            let reports = balance.plugin.balance(cluster, &mut evictor, now);
            if balance.plugin.args().dry_run {
                dry_run_events.extend(
                    reports.iter().flat_map(|r| dry_run_events_of(&balance.profile, r, cluster)),
                );
            }
            pools.extend(reports);
        }
        let mut actions = evictor.into_actions();
        actions.extend(dry_run_events);
        Round { pools, actions }
    }

    /// One migration pass over every PodMigrationJob at `now`; nothing in
    /// a dry run.
    pub fn migrate(&mut self, cluster: &Cluster, now: Timestamp) -> Vec<Action> {
        if self.dry_run {
            return Vec::new();
        }
        self.migration.reconcile(cluster, now)
    }

    /// How the driver's [`Action::Evict`] for `job` went (`Err`: the API's
    /// message, e.g. a PodDisruptionBudget's 429).
    pub fn eviction_result(&mut self, job: &str, result: Result<(), String>, now: Timestamp) {
        self.migration.eviction_result(job, result, now);
    }

    /// How the driver's [`Action::CreateReservation`] for `job` went (an
    /// AlreadyExists counts as success).
    pub fn reservation_result(&mut self, job: &str, result: Result<(), String>) {
        self.migration.reservation_result(job, result);
    }
}

/// Only LowNodeLoad balances and only the migration controller evicts and
/// filters; anything else is named as unknown rather than ignored.
fn check_plugins(i: usize, profile: &DeschedulerProfile) -> Result<(), ConfigError> {
    let sets = [
        ("deschedule", &profile.plugins.deschedule, &[][..]),
        ("balance", &profile.plugins.balance, &[low_node_load::NAME][..]),
        ("evict", &profile.plugins.evict, &[MIGRATION_CONTROLLER][..]),
        ("filter", &profile.plugins.filter, &[MIGRATION_CONTROLLER][..]),
    ];
    for (point, set, known) in sets {
        for (j, plugin) in set.enabled.iter().enumerate() {
            if !known.contains(&plugin.name.as_str()) {
                let message =
                    format!("unknown {point} plugin {:?} (kolo has: {known:?})", plugin.name);
                return Err(invalid(
                    &format!("profiles[{i}].plugins.{point}.enabled[{j}]"),
                    message,
                ));
            }
        }
    }
    for (point, set) in [("evict", &profile.plugins.evict), ("filter", &profile.plugins.filter)] {
        if !DeschedulerProfile::enabled(set, MIGRATION_CONTROLLER, true) {
            let message = format!(
                "{MIGRATION_CONTROLLER} is kolo's only {point} plugin and cannot be disabled"
            );
            return Err(invalid(&format!("profiles[{i}].plugins.{point}"), message));
        }
    }
    for (j, config) in profile.plugin_config.iter().enumerate() {
        if config.name != low_node_load::NAME && config.name != MIGRATION_CONTROLLER {
            let message = format!("args for unknown plugin {:?}", config.name);
            return Err(invalid(&format!("profiles[{i}].pluginConfig[{j}].name"), message));
        }
    }
    Ok(())
}

/// The Events a LowNodeLoad dry run (its own `dryRun`) records: one per
/// pod it would have evicted.
fn dry_run_events_of<'a>(
    profile: &'a str,
    report: &'a PoolReport,
    cluster: &'a Cluster,
) -> impl Iterator<Item = Action> + 'a {
    report.candidates.iter().filter_map(move |c| {
        let CandidateVerdict::Evicted(reason) = &c.verdict else { return None };
        let (namespace, name) = c.pod.split_once('/')?;
        let uid = cluster.pod(&c.pod).map(|p| p.view().uid().to_string()).unwrap_or_default();
        Some(Action::Event(Event {
            regarding: ObjectKey {
                kind: "Pod",
                namespace: namespace.into(),
                name: name.into(),
                uid,
            },
            warning: false,
            reason: "MigrationDryRun".into(),
            message: format!(
                "{} (profile {profile}) would migrate the pod (dry run): {reason}",
                low_node_load::NAME
            ),
        }))
    })
}

fn invalid(field: &str, message: String) -> ConfigError {
    ConfigError::Invalid { field: field.into(), message }
}
