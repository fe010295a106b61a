//! `kolo`: QoS-based co-location for Kubernetes.
//!
//! One binary carries every kolo component and tool as a subcommand; one
//! container image serves every Deployment and the DaemonSet.

mod crds;
mod inspect;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// QoS-based co-location for Kubernetes: reclaim what latency-sensitive pods
/// request but do not use, and run batch work on it safely.
#[derive(Debug, Parser)]
#[command(name = "kolo", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every CustomResourceDefinition kolo uses, as YAML for
    /// `kubectl apply -f -`.
    Crds,
    /// Work with cluster snapshots (`kubectl get ... -o yaml` dumps).
    Snapshot {
        #[command(subcommand)]
        command: SnapshotCommand,
    },
    /// Print kolo's version.
    Version,
}

#[derive(Debug, Subcommand)]
enum SnapshotCommand {
    /// Summarise a snapshot: nodes, pods per QoS and priority class,
    /// requested vs allocatable, batch resources, kolo objects.
    Inspect {
        /// Snapshot files (YAML or JSON; `-` reads stdin). Several files are
        /// merged.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
}

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// A table for people.
    Text,
    /// JSON for programs.
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds => crds::print_crds(&mut std::io::stdout().lock()),
        Command::Version => {
            writeln!(std::io::stdout(), "kolo {}", env!("CARGO_PKG_VERSION")).map_err(Into::into)
        }
        Command::Snapshot { command: SnapshotCommand::Inspect { files, output } } => {
            inspect::run(&files, output, &mut std::io::stdout().lock())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kolo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Errors a subcommand reports before exiting with status 1.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// The snapshot could not be loaded.
    #[error(transparent)]
    Snapshot(#[from] kolo_core::snapshot::SnapshotError),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
    /// Output could not be serialized.
    #[error("serializing output: {0}")]
    Serialize(String),
}
