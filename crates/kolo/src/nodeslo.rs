//! `kolo nodeslo`: wiring for [`kolo_manager::whatif::nodeslo`].

use std::error::Error;
use std::io::{self, Write};

use kolo_manager::whatif::nodeslo::render;

use crate::slo_config::SloInputs;

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
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), Box<dyn Error + Send + Sync>> {
    let snapshot = args.inputs.load()?;
    let rendered = render(&snapshot, args.inputs.config.as_deref(), &args.inputs.selection())?;
    crate::warn_all(&rendered.warnings);
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": rendered.items});
    let written = match args.output {
        Format::Json => serde_json::to_writer_pretty(&mut *out, &list)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out)),
        Format::Yaml => {
            let text =
                serde_saphyr::to_string(&list).map_err(|e| format!("serializing output: {e}"))?;
            out.write_all(text.as_bytes())
        }
    };
    match written {
        // The reader went away (`| head`): nothing left to tell anyone.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other.map_err(|e| format!("writing output: {e}"))?),
    }
}
