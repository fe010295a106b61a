//! `kolo descheduler`: kolo's descheduler against a cluster. Watches nodes,
//! pods, NodeMetrics, PodMigrationJobs, Reservations and workloads; runs
//! LowNodeLoad every `deschedulingInterval` and the PodMigrationJob
//! controller every 500 ms; creates jobs and Reservations, evicts through
//! the Eviction API, records Events; leader-elected (Lease
//! `kolo-descheduler`).

use std::path::{Path, PathBuf};

use kolo_kube::component::{self, ComponentError};
use kolo_kube::descheduler::{
    DeschedulerConfig, DeschedulerDriver, DeschedulerOptions, WatchScope, eviction_client,
};

use crate::cluster::ComponentArgs;

/// The Lease the replicas elect a leader with.
pub const LEASE: &str = "kolo-descheduler";

/// `kolo descheduler` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    component: ComponentArgs,
    /// A DeschedulerConfiguration file (interval, dry run, LowNodeLoad and
    /// MigrationController arguments); default: kolo's defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Decide and record Events only: no PodMigrationJob, Reservation or
    /// eviction is written (whatever the configuration says).
    #[arg(long)]
    dry_run: bool,
    /// Only pods of this namespace (and their PodMigrationJobs and
    /// workloads) are seen; default: every namespace.
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Only nodes matching this label selector are seen; default: all.
    #[arg(long, value_name = "SELECTOR")]
    node_selector: Option<String>,
}

/// Why `kolo descheduler` stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeschedulerRunError {
    /// The configuration file could not be read.
    #[error("reading descheduler configuration {path}: {source}")]
    ConfigFile {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration was refused (the message names the field).
    #[error("descheduler configuration {path}: {message}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The descheduler stopped.
    #[error(transparent)]
    Component(#[from] ComponentError),
}

/// The configuration in `path` (kolo's defaults without one); `dry_run`
/// forces a dry run.
pub fn load_config(
    path: Option<&Path>,
    dry_run: bool,
) -> Result<DeschedulerConfig, DeschedulerRunError> {
    let mut config = match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| {
                DeschedulerRunError::ConfigFile { path: path.display().to_string(), source }
            })?;
            parse_config(&text).map_err(|message| DeschedulerRunError::Config {
                path: path.display().to_string(),
                message,
            })?
        }
        None => DeschedulerConfig::default(),
    };
    config.dry_run |= dry_run;
    Ok(config)
}

/// Reads a DeschedulerConfiguration. (The reader lands in kolo-descheduler
/// as `DeschedulerConfig::from_yaml`; until then the file's contents are
/// not read and kolo's defaults apply.)
fn parse_config(text: &str) -> Result<DeschedulerConfig, String> {
    let _ = text;
    tracing::warn!("DeschedulerConfiguration reading not available yet: using kolo's defaults");
    Ok(DeschedulerConfig::default())
}

/// Runs the descheduler until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), DeschedulerRunError> {
    let ComponentArgs { cluster, leader } = args.component;
    let settings = cluster.settings("descheduler");
    let config = load_config(args.config.as_deref(), args.dry_run)?;
    let election = leader.election();
    let identity = election.lease(LEASE).identity;
    let options = DeschedulerOptions {
        config,
        scope: WatchScope { namespace: args.namespace, node_selector: args.node_selector },
        identity,
    };
    let kubeconfig = settings.kubeconfig.clone();
    component::run(&settings, Some((&election, LEASE)), |client, health, leadership| async move {
        let evictions = eviction_client(kubeconfig.as_deref()).await?;
        DeschedulerDriver::new(client, evictions, options, health).run(leadership).await
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_flag_forces_a_dry_run_and_a_missing_file_is_named() {
        assert!(load_config(None, true).unwrap().dry_run);
        assert!(!load_config(None, false).unwrap().dry_run);
        let e = load_config(Some(Path::new("/nonexistent/policy.yaml")), false).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/policy.yaml"), "{e}");
    }
}
