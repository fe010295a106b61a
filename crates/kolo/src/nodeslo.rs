//! `kolo nodeslo`: wiring for [`kolo_manager::whatif::nodeslo`].

use std::io::Write;

use kolo_manager::whatif::nodeslo::render;

use crate::slo_config::SloInputs;
use crate::{CliError, write_json};

/// Arguments of `kolo nodeslo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The snapshot, the ConfigMap, the nodes.
    #[command(flatten)]
    pub inputs: SloInputs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
    pub output: Format,
}

/// How `kolo nodeslo` prints the NodeSLOs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A `kind: List` of NodeSLO objects in YAML.
    Yaml,
    /// The same in JSON.
    Json,
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), CliError> {
    let snapshot = args.inputs.load().map_err(CliError::Command)?;
    let rendered = render(&snapshot, args.inputs.config.as_deref(), &args.inputs.selection())
        .map_err(|e| CliError::Command(e.into()))?;
    crate::warn_all(&rendered.warnings);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": rendered.items});
    match args.output {
        Format::Json => write_json(&list, out),
        Format::Yaml => {
            let text =
                serde_saphyr::to_string(&list).map_err(|e| CliError::Serialize(e.to_string()))?;
            Ok(out.write_all(text.as_bytes())?)
        }
    }
}
