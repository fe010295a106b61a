//! `kolo descheduler`: kolo's descheduler against a cluster. Watches nodes,
//! pods, NodeMetrics, PodMigrationJobs, Reservations and workloads; runs
//! LowNodeLoad every `deschedulingInterval` and the PodMigrationJob
//! controller every 500 ms; creates jobs and Reservations, evicts through
//! the Eviction API, records Events; leader-elected (Lease
//! `kolo-descheduler`).

use std::path::{Path, PathBuf};

use kolo_kube::component::{self, ComponentError};
use kolo_kube::descheduler::{
    ConfigError, Descheduler, DeschedulerConfig, DeschedulerDriver, DeschedulerOptions, WatchScope,
    eviction_client,
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
    /// The configuration was refused (the error names the field).
    #[error("{path}: {source}")]
    Config {
        /// The file, or `--dry-run` / defaults.
        path: String,
        /// What is wrong.
        source: ConfigError,
    },
    /// The descheduler stopped.
    #[error(transparent)]
    Component(#[from] ComponentError),
}

/// The descheduler of the configuration in `path` (kolo's defaults
/// without one: no Balance plugin enabled); `dry_run` forces a dry run.
pub fn load(path: Option<&Path>, dry_run: bool) -> Result<Descheduler, DeschedulerRunError> {
    let name = path.map_or_else(|| "default configuration".into(), |p| p.display().to_string());
    let mut config = match path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| DeschedulerRunError::ConfigFile { path: name.clone(), source })?;
            DeschedulerConfig::from_yaml(&text)
                .map_err(|source| DeschedulerRunError::Config { path: name.clone(), source })?
        }
        None => DeschedulerConfig::default(),
    };
    if dry_run {
        config.dry_run = Some(true);
    }
    Descheduler::new(&config).map_err(|source| DeschedulerRunError::Config { path: name, source })
}

/// Runs the descheduler until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), DeschedulerRunError> {
    let ComponentArgs { cluster, leader } = args.component;
    let settings = cluster.settings("descheduler");
    let descheduler = load(args.config.as_deref(), args.dry_run)?;
    let election = leader.election();
    let identity = election.lease(LEASE).identity;
    let options = DeschedulerOptions {
        scope: WatchScope { namespace: args.namespace, node_selector: args.node_selector },
        identity,
    };
    let kubeconfig = settings.kubeconfig.clone();
    component::run(&settings, Some((&election, LEASE)), |client, health, leadership| async move {
        let evictions = eviction_client(kubeconfig.as_deref()).await?;
        DeschedulerDriver::new(descheduler, client, evictions, options, health)
            .run(leadership)
            .await
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dry_run_flag_wins_and_a_bad_file_is_named() {
        assert!(load(None, true).unwrap().is_dry_run());
        assert!(!load(None, false).unwrap().is_dry_run());
        let e = load(Some(Path::new("/nonexistent/policy.yaml")), false).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/policy.yaml"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.yaml");
        std::fs::write(
            &file,
            "deschedulingInterval: 0.5s
dryRun: false
",
        )
        .unwrap();
        let e = load(Some(&file), false).unwrap_err().to_string();
        assert!(e.contains("policy.yaml") && e.contains("deschedulingInterval"), "{e}");
        std::fs::write(
            &file,
            "deschedulingInterval: 90s
dryRun: false
",
        )
        .unwrap();
        let descheduler = load(Some(&file), true).unwrap();
        assert_eq!(descheduler.interval(), std::time::Duration::from_secs(90));
        assert!(descheduler.is_dry_run(), "--dry-run overrides dryRun: false");
    }
}
