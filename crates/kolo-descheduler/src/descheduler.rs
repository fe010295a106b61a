//! [`Descheduler`]: the round object the drivers hold (kolo-kube's
//! `kolo descheduler`, kolo-sim's engine, `kolo deschedule --snapshot`).
//!
//! * [`Descheduler::balance`] runs the Balance plugins (LowNodeLoad) once,
//!   every `deschedulingInterval`; their evictions become PodMigrationJobs
//!   (or, in a dry run, Events only).
//! * [`Descheduler::migrate`] advances every PodMigrationJob: arbitration
//!   of pending jobs, the reconcile state machine, the scavenger. Drivers
//!   call it often (every 500 ms, and when a job, pod or reservation
//!   changes).

use std::time::Duration;

use kolo_core::clock::Timestamp;

use crate::cluster::Cluster;
use crate::config::{ConfigError, DeschedulerConfig};
use crate::low_node_load::PoolReport;
use crate::plan::Action;

/// What one Balance round decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    /// Per node pool, what LowNodeLoad saw and chose.
    pub pools: Vec<PoolReport>,
    /// What the driver must do (create jobs; in a dry run, Events only).
    pub actions: Vec<Action>,
}

/// The descheduler, one round at a time.
#[derive(Debug, Clone)]
pub struct Descheduler {
    config: DeschedulerConfig,
    interval: Duration,
}

impl Descheduler {
    /// A descheduler with `config` that has seen nothing yet.
    /// Fails when a plugin refuses its args (the error names the profile,
    /// plugin and field).
    pub fn new(config: DeschedulerConfig) -> Result<Descheduler, ConfigError> {
        let interval = config.interval()?;
        Ok(Descheduler { config, interval })
    }

    /// How often [`balance`](Self::balance) should run.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Whether this is a dry run (Events only).
    pub fn is_dry_run(&self) -> bool {
        self.config.is_dry_run()
    }

    /// The configuration.
    pub fn config(&self) -> &DeschedulerConfig {
        &self.config
    }

    /// One Balance round over `cluster` at `now`.
    pub fn balance(&mut self, cluster: &Cluster, now: Timestamp) -> Round {
        let _ = (cluster, now);
        Round::default()
    }

    /// One migration pass over every PodMigrationJob at `now`.
    pub fn migrate(&mut self, cluster: &Cluster, now: Timestamp) -> Vec<Action> {
        let _ = (cluster, now);
        Vec::new()
    }
}
