//! Which `slo-controller-config` ConfigMap a what-if run uses: the one of a
//! given file, else the snapshot's, else none (built-in defaults); and which
//! of the snapshot's nodes it looks at.

use std::path::{Path, PathBuf};

use crate::config::{DEFAULT_CONFIG_NAME, DEFAULT_CONFIG_NAMESPACE};
use k8s_openapi::api::core::v1::ConfigMap;
use kolo_core::snapshot::{Snapshot, SnapshotError};

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

/// The nodes a run looks at: the named ones, or every node when none is
/// named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelection(pub Vec<String>);

/// A node the selection names is not in the snapshot.
#[derive(Debug, thiserror::Error)]
#[error("--node {0}: no such node in the snapshot")]
pub struct UnknownNode(pub String);

impl NodeSelection {
    /// Checks that every named node is in the snapshot.
    pub fn check(&self, snapshot: &Snapshot) -> Result<(), UnknownNode> {
        let known: std::collections::HashSet<&str> =
            snapshot.nodes.iter().map(|n| n.view.name()).collect();
        match self.0.iter().find(|n| !known.contains(n.as_str())) {
            Some(missing) => Err(UnknownNode(missing.clone())),
            None => Ok(()),
        }
    }

    /// Whether the selection takes this node (every node when empty).
    pub fn wants(&self, node: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|n| n == node)
    }
}
