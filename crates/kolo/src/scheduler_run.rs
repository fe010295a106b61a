//! `kolo scheduler`: kolo's scheduler against a cluster. Watches nodes,
//! pods and NodeMetrics, schedules the pods whose `schedulerName` is one of
//! its profiles', binds them, records Events and sets the `PodScheduled`
//! condition on failure; leader-elected.

use std::path::PathBuf;

use kolo_kube::component::{self, ComponentError};
use kolo_kube::scheduler::SchedulerDriver;
use kolo_scheduler::whatif::{ScheduleError, load_config};

use crate::cluster::ComponentArgs;

/// `kolo scheduler` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    component: ComponentArgs,
    /// A KubeSchedulerConfiguration file (profiles, plugins, plugin args);
    /// default: one `kolo-scheduler` profile with kolo's default plugins.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Why `kolo scheduler` stopped.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerRunError {
    /// The configuration could not be read or was refused (the error names
    /// the file and field).
    #[error(transparent)]
    Config(#[from] ScheduleError),
    /// The scheduler stopped.
    #[error(transparent)]
    Component(#[from] ComponentError),
}

/// Runs the scheduler until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), SchedulerRunError> {
    let config = load_config(args.config.as_deref())?;
    let ComponentArgs { cluster, leader } = args.component;
    let election = leader.election();
    let identity = election.lease("kolo-scheduler").identity;
    component::run(
        &cluster.settings("scheduler"),
        Some((&election, "kolo-scheduler")),
        |client, health, leadership| async move {
            SchedulerDriver::new(client, config, health, &identity).run(leadership).await
        },
    )?;
    Ok(())
}
