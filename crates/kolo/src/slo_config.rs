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
