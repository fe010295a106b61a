//! Finding the `slo-controller-config` ConfigMap for the what-if commands
//! (`kolo noderesource`, `kolo nodeslo`): from `--config FILE`, else from the
//! snapshot, else none (built-in defaults).

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use kolo_core::snapshot::{Snapshot, SnapshotError};
use kolo_manager::config::{DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE};

/// Why the ConfigMap could not be found.
#[derive(Debug, thiserror::Error)]
pub enum FindConfigError {
    /// The `--config` file could not be loaded.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The `--config` file holds no ConfigMap.
    #[error("{0}: no ConfigMap found")]
    NoConfigMap(PathBuf),
    /// The `--config` file holds several ConfigMaps, none of them named
    /// `slo-controller-config`.
    #[error("{path}: {count} ConfigMaps, none named {DEFAULT_CONFIG_NAME}")]
    AmbiguousConfigMap {
        /// The file.
        path: PathBuf,
        /// How many ConfigMaps it holds.
        count: usize,
    },
}

/// A ConfigMap and where it came from.
pub struct FoundConfig {
    /// The ConfigMap.
    pub configmap: ConfigMap,
    /// `namespace/name`.
    pub name: String,
    /// `--config`'s path, or "the snapshot".
    pub origin: String,
}

/// The ConfigMap of `--config` (its `slo-controller-config`, or its only
/// ConfigMap), else the snapshot's `slo-controller-config`, else `None`.
pub fn find_config(
    path: Option<&Path>,
    snapshot: &Snapshot,
) -> Result<Option<FoundConfig>, FindConfigError> {
    let (configmap, origin) = match path {
        Some(path) => {
            let file = Snapshot::load(path)?;
            let chosen = match (named(&file.config_maps), file.config_maps.as_slice()) {
                (Some(cm), _) => cm.clone(),
                (None, [only]) => only.clone(),
                (None, []) => return Err(FindConfigError::NoConfigMap(path.to_path_buf())),
                (None, many) => {
                    return Err(FindConfigError::AmbiguousConfigMap {
                        path: path.to_path_buf(),
                        count: many.len(),
                    });
                }
            };
            (chosen, path.display().to_string())
        }
        None => match named(&snapshot.config_maps) {
            Some(cm) => (cm.clone(), "the snapshot".to_string()),
            None => return Ok(None),
        },
    };
    let name = format!(
        "{}/{}",
        configmap.metadata.namespace.as_deref().unwrap_or_default(),
        configmap.metadata.name.as_deref().unwrap_or_default()
    );
    Ok(Some(FoundConfig { configmap, name, origin }))
}

/// `koordinator-system/slo-controller-config`, else any ConfigMap named
/// `slo-controller-config`.
fn named(maps: &[ConfigMap]) -> Option<&ConfigMap> {
    let named = |cm: &&ConfigMap| cm.metadata.name.as_deref() == Some(DEFAULT_CONFIG_NAME);
    maps.iter()
        .filter(named)
        .find(|cm| cm.metadata.namespace.as_deref() == Some(DEFAULT_CONFIG_NAMESPACE))
        .or_else(|| maps.iter().find(named))
}

/// The inputs of the SLO what-if commands: a snapshot, an optional
/// ConfigMap file, and an optional node filter.
#[derive(Debug, clap::Args)]
pub struct SloInputs {
    /// Snapshot files (YAML or JSON; `-` reads stdin): the nodes (with pods
    /// and NodeMetrics for `noderesource`), and optionally the
    /// slo-controller-config ConfigMap. May repeat; the files are merged.
    #[arg(long = "snapshot", required = true, value_name = "FILE")]
    pub snapshots: Vec<PathBuf>,
    /// A file holding the slo-controller-config ConfigMap (YAML or JSON);
    /// default: the `slo-controller-config` ConfigMap of the snapshot, else
    /// the built-in defaults (co-location disabled).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only this node (may repeat).
    #[arg(long = "node", value_name = "NAME")]
    pub nodes: Vec<String>,
}

impl SloInputs {
    /// Loads and merges the snapshot files; a `--node` the snapshot lacks
    /// is an error naming it.
    pub fn load(&self) -> Result<Snapshot, SloInputError> {
        let mut snapshot = Snapshot::default();
        for file in &self.snapshots {
            snapshot.add_file(file)?;
        }
        let known: std::collections::HashSet<&str> =
            snapshot.nodes.iter().map(|n| n.view.name()).collect();
        if let Some(missing) = self.nodes.iter().find(|n| !known.contains(n.as_str())) {
            return Err(SloInputError::UnknownNode(missing.clone()));
        }
        Ok(snapshot)
    }

    /// Whether `--node` selects this node (every node without `--node`).
    pub fn wants(&self, node: &str) -> bool {
        self.nodes.is_empty() || self.nodes.iter().any(|n| n == node)
    }
}

/// Why the inputs could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SloInputError {
    /// A snapshot could not be loaded.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// `--node` names a node the snapshot does not have.
    #[error("--node {0}: no such node in the snapshot")]
    UnknownNode(String),
}
