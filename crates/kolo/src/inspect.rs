//! `kolo snapshot inspect`: wiring for [`kolo_core::snapshot::summary`].

use std::io::Write;
use std::path::PathBuf;

use kolo_core::snapshot::summary::Summary;

use crate::{CliError, OutputFormat, write_json};

/// Loads the files (merged) and prints their summary.
pub fn run(files: &[PathBuf], output: OutputFormat, out: &mut impl Write) -> Result<(), CliError> {
    let summary = Summary::of(&crate::load_snapshots(files)?);
    match output {
        OutputFormat::Json => write_json(&summary, out),
        OutputFormat::Text => Ok(summary.write_text(out)?),
    }
}
