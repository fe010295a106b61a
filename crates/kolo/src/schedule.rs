//! `kolo schedule`: wiring for [`kolo_scheduler::whatif`].

use std::io::Write;
use std::path::PathBuf;

use kolo_scheduler::whatif::{self, load_config};

use crate::{CliError, OutputFormat, write_json};

/// Loads the snapshot files and the configuration, schedules, prints.
pub fn run(
    files: &[PathBuf],
    options: &whatif::Options,
    output: OutputFormat,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let config = load_config(options.config.as_deref())?;
    let snapshot = crate::load_snapshots(files)?;
    let run = whatif::schedule(snapshot, &config, options)?;
    match output {
        OutputFormat::Json => write_json(&run.report, out),
        OutputFormat::Text => Ok(whatif::write_table(&run, out)?),
    }
}
