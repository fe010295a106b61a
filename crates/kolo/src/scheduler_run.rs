//! `kolo scheduler`: kolo's scheduler against a cluster. Watches nodes,
//! pods and NodeMetrics, schedules the pods whose `schedulerName` is one of
//! its profiles', binds them, records Events and sets the `PodScheduled`
//! condition on failure; leader-elected.

use std::path::PathBuf;

use kolo_kube::scheduler::SchedulerDriver;
use kolo_scheduler::config::SchedulerConfig;

use crate::cluster::{self, ClusterArgs, ComponentError, LeaderArgs};

/// `kolo scheduler` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    leader: LeaderArgs,
    /// A KubeSchedulerConfiguration file (profiles, plugins, plugin args);
    /// default: one `kolo-scheduler` profile with kolo's default plugins.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Why `kolo scheduler` could not start.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerRunError {
    /// The configuration file could not be read.
    #[error("reading scheduler config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration was refused (the error names the field).
    #[error("scheduler config {path}: {source}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: kolo_scheduler::config::ConfigError,
    },
    /// The scheduler stopped.
    #[error(transparent)]
    Component(#[from] ComponentError),
}

/// Runs the scheduler until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), SchedulerRunError> {
    let config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| SchedulerRunError::Read { path: path.clone(), source })?;
            SchedulerConfig::from_yaml(&text)
                .map_err(|source| SchedulerRunError::Config { path: path.clone(), source })?
        }
        None => SchedulerConfig::default(),
    };
    let identity = args.leader.lease("kolo-scheduler").identity;
    cluster::run(
        "scheduler",
        &args.cluster,
        Some((&args.leader, "kolo-scheduler")),
        |client, health, leadership| async move {
            SchedulerDriver::new(client, config, health, &identity).run(leadership).await
        },
    )?;
    Ok(())
}
