//! `kolo deschedule`: wiring for [`kolo_descheduler::whatif`].

use std::io::Write;
use std::path::{Path, PathBuf};

use kolo_core::clock::Timestamp;
use kolo_descheduler::config::{ConfigError, DeschedulerConfig};
use kolo_descheduler::{Cluster, Descheduler, whatif};

use crate::{CliError, OutputFormat, write_json};

/// The configuration used without `--config` (the example file, so what
/// the docs show is what runs): LowNodeLoad with Koordinator's documented
/// thresholds (low 45% cpu / 55% memory, high 75% / 80%), and one
/// over-threshold round enough to make a node a source — a what-if run sees
/// one round, so the default anomaly condition (the 6th consecutive round)
/// would never fire.
pub const DEFAULT_CONFIG: &str = include_str!("../../../examples/descheduler.yaml");

/// `kolo deschedule` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Snapshot files (YAML or JSON; `-` reads stdin). May repeat; the
    /// files are merged.
    #[arg(long = "snapshot", required = true, value_name = "FILE")]
    pub snapshots: Vec<PathBuf>,
    /// A DeschedulerConfiguration file (`descheduler/v1alpha2`: profiles,
    /// LowNodeLoad and MigrationController args); default:
    /// examples/descheduler.yaml (built in).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// The time to deschedule at (RFC 3339, e.g. 2026-11-22T04:00:00Z).
    #[arg(long, value_name = "RFC3339", value_parser = kolo_core::snapshot::parse_now)]
    pub now: Option<Timestamp>,
}

/// Why `kolo deschedule` could not run.
#[derive(Debug, thiserror::Error)]
pub enum DescheduleError {
    /// The configuration file could not be read.
    #[error("reading descheduler config {path}: {source}")]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The configuration was refused (the error names the field).
    #[error("{path}: {source}")]
    Config {
        /// The file, or `<default>`.
        path: PathBuf,
        /// What is wrong.
        source: ConfigError,
    },
}

/// Reads the configuration file, or the built-in one.
pub fn load_config(path: Option<&Path>) -> Result<DeschedulerConfig, DescheduleError> {
    let (text, name) = match path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| DescheduleError::ReadConfig { path: path.into(), source })?;
            (text, path.to_path_buf())
        }
        None => (DEFAULT_CONFIG.to_string(), PathBuf::from("<default>")),
    };
    DeschedulerConfig::from_yaml(&text)
        .map_err(|source| DescheduleError::Config { path: name, source })
}

/// Loads the snapshot and the configuration, runs one round, prints.
pub fn run(args: &Args, out: &mut impl Write) -> Result<(), CliError> {
    let boxed = |e: DescheduleError| CliError::Command(e.into());
    let config = load_config(args.config.as_deref()).map_err(boxed)?;
    let path = || args.config.clone().unwrap_or_else(|| PathBuf::from("<default>"));
    let mut descheduler = Descheduler::new(&config)
        .map_err(|source| boxed(DescheduleError::Config { path: path(), source }))?;
    let snapshot = crate::load_snapshots(&args.snapshots)?;
    let (now, source) = snapshot.what_if_now(args.now);
    let cluster = Cluster::from_snapshot(&snapshot);
    let report = whatif::deschedule(&mut descheduler, &cluster, now, source.describe());
    match args.output {
        OutputFormat::Json => write_json(&report, out),
        OutputFormat::Text => Ok(whatif::write_table(&report, out)?),
    }
}
