//! What-if NodeSLO (`kolo nodeslo`): the NodeSLO the manager would write for
//! each node of a snapshot, from an `slo-controller-config` ConfigMap. Also
//! the quickest way to check a ConfigMap before applying it: every malformed
//! key is reported with its JSON path.

use std::path::Path;

use kolo_api::crd::NodeSLO;
use kolo_core::HasMeta;
use kolo_core::snapshot::Snapshot;

use super::{FindConfigError, NodeSelection, find_config};
use crate::config::SloConfigStore;
use crate::nodeslo::render_node_slo;

/// Why the NodeSLOs could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum NodesloError {
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
}

/// The rendered NodeSLOs.
#[derive(Debug, Default)]
pub struct Rendered {
    /// One NodeSLO per selected node, in snapshot order.
    pub items: Vec<NodeSLO>,
    /// Malformed node annotations / labels that were skipped.
    pub warnings: Vec<String>,
}

/// Renders the NodeSLO of each selected node with the ConfigMap of
/// `config_file` (else the snapshot's, else the defaults).
pub fn render(
    snapshot: &Snapshot,
    config_file: Option<&Path>,
    selection: &NodeSelection,
) -> Result<Rendered, NodesloError> {
    let mut store = SloConfigStore::new();
    match find_config(config_file, snapshot)? {
        Some(found) => {
            store.update(found.configmap.data.as_ref().or(Some(&Default::default())));
            if !store.status().errors.is_empty() {
                // A one-shot run has no last good value to fall back on.
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
    let mut rendered = Rendered::default();
    for view in snapshot.nodes.iter().map(|n| &n.view).filter(|v| selection.wants(v.name())) {
        let node = render_node_slo(&config.slo, view.name(), view.labels(), view.annotations());
        rendered.warnings.extend(node.warnings);
        rendered.items.push(NodeSLO::new(view.name(), node.spec));
    }
    Ok(rendered)
}
