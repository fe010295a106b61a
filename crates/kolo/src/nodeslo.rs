//! `kolo nodeslo`: the NodeSLO kolo's manager would write for each node of a
//! snapshot, from an `slo-controller-config` ConfigMap (`--config`, else the
//! one in the snapshot, else the defaults). Also the quickest way to check a
//! ConfigMap before applying it: every malformed key is reported with its
//! JSON path. Nothing is written anywhere.

use std::error::Error;
use std::io::{self, Write};

use kolo_api::crd::NodeSLO;
use kolo_manager::config::SloConfigStore;
use kolo_manager::nodeslo::render_node_slo;

use crate::slo_config::{FindConfigError, SloInputError, SloInputs, find_config};
use kolo_core::HasMeta;

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

/// Why `kolo nodeslo` could not run.
#[derive(Debug, thiserror::Error)]
pub enum NodesloError {
    /// The snapshot could not be loaded, or `--node` is unknown.
    #[error(transparent)]
    Inputs(#[from] SloInputError),
    /// The ConfigMap could not be found.
    #[error(transparent)]
    FindConfig(#[from] FindConfigError),
    /// Keys of the ConfigMap are malformed (one line per key).
    #[error("ConfigMap {configmap} ({origin}) is invalid:\n  {}", errors.join("\n  "))]
    Config {
        /// `namespace/name`.
        configmap: String,
        /// Where it came from.
        origin: String,
        /// One message per bad key, with its JSON path.
        errors: Vec<String>,
    },
    /// The output could not be serialized.
    #[error("serializing output: {0}")]
    Serialize(String),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Io(#[from] io::Error),
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), Box<dyn Error + Send + Sync>> {
    match run_inner(args, out) {
        Err(NodesloError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Into::into),
    }
}

fn run_inner(args: &Args, out: &mut dyn Write) -> Result<(), NodesloError> {
    let snapshot = args.inputs.load()?;
    let mut store = SloConfigStore::new();
    match find_config(args.inputs.config.as_deref(), &snapshot)? {
        Some(found) => {
            store.update(found.configmap.data.as_ref().or(Some(&Default::default())));
            if !store.status().errors.is_empty() {
                // A one-shot command has no last good value to fall back on.
                return Err(NodesloError::Config {
                    configmap: found.name,
                    origin: found.origin,
                    errors: store.status().errors.clone(),
                });
            }
        }
        None => {
            store.update(Some(&Default::default()));
        }
    }
    let config = store.config();
    let mut stderr = io::stderr().lock();
    let mut items = Vec::new();
    for node in &snapshot.nodes {
        let view = &node.view;
        if !args.inputs.wants(view.name()) {
            continue;
        }
        let rendered = render_node_slo(&config.slo, view.name(), view.labels(), view.annotations());
        for warning in &rendered.warnings {
            let _ = writeln!(stderr, "kolo: warning: {warning}");
        }
        items.push(NodeSLO::new(view.name(), rendered.spec));
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    match args.output {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &list).map_err(io::Error::from)?;
            writeln!(out)?;
        }
        Format::Yaml => {
            let text = serde_saphyr::to_string(&list)
                .map_err(|e| NodesloError::Serialize(e.to_string()))?;
            out.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}
