//! The inputs of the SLO what-if commands (`kolo noderesource`, `kolo
//! nodeslo`) as flags.

use std::path::PathBuf;

use kolo_core::snapshot::Snapshot;
use kolo_manager::whatif::NodeSelection;

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
    pub fn load(&self) -> Result<Snapshot, Box<dyn std::error::Error + Send + Sync>> {
        let snapshot = crate::load_snapshots(&self.snapshots)?;
        self.selection().check(&snapshot)?;
        Ok(snapshot)
    }

    /// The `--node` flags.
    pub fn selection(&self) -> NodeSelection {
        NodeSelection(self.nodes.clone())
    }
}
