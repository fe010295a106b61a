//! `kolo noderesource`: wiring for [`kolo_manager::whatif::noderesource`].

use std::io::Write;

use kolo_core::clock::Timestamp;
use kolo_manager::whatif::noderesource::{Options, evaluate, write_table};

use crate::slo_config::SloInputs;
use crate::{CliError, write_json};

/// Arguments of `kolo noderesource`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The snapshot, the ConfigMap, the nodes.
    #[command(flatten)]
    pub inputs: SloInputs,
    /// Evaluate as if `colocation-config` had `"enable": true` at the
    /// cluster level (nodes that disable it themselves stay disabled).
    #[arg(long)]
    pub enable: bool,
    /// The time to evaluate at (RFC 3339); default: the newest NodeMetric
    /// `status.updateTime` in the snapshot, else the system clock.
    #[arg(long, value_name = "RFC3339", value_parser = kolo_core::snapshot::parse_now)]
    pub now: Option<Timestamp>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Table output: only the summary table, not each node's terms.
    #[arg(long)]
    pub summary: bool,
}

/// How `kolo noderesource` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table for people, in cores and GiB (`-o text` works too).
    #[value(alias = "text")]
    Table,
    /// JSON for programs, exact integers (milli-cores, bytes).
    Json,
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), CliError> {
    let snapshot = args.inputs.load().map_err(CliError::Command)?;
    let options = Options {
        config: args.inputs.config.clone(),
        enable: args.enable,
        now: args.now,
        nodes: args.inputs.selection(),
    };
    let evaluation = evaluate(&snapshot, &options).map_err(|e| CliError::Command(e.into()))?;
    crate::warn_all(evaluation.warnings());
    match args.output {
        Format::Json => write_json(&evaluation.report, out),
        Format::Table => Ok(write_table(&evaluation, args.summary, out)?),
    }
}
