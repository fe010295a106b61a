//! Cluster snapshots: the objects kolo's algorithms read, loaded from what
//! `kubectl get -o yaml` (or `-o json`) prints.
//!
//! Input may be multi-document YAML, a `kind: List` (or `PodList`, ...)
//! document, a JSON object, a JSON list, or a stream of JSON objects, from a
//! file or stdin. Kinds kolo does not use are counted once in
//! [`Snapshot::skipped_kinds`] and otherwise ignored; a document that cannot
//! be read is an error naming its number, its kind and name, and the field.
//!
//! Pods and nodes are checked as they load: each gets its [`PodView`] /
//! [`NodeView`], so a malformed quantity is reported with the document it
//! came from rather than surfacing later inside an algorithm.

mod block_yaml;
#[doc(hidden)]
pub use block_yaml::parse as parse_block_yaml;
mod decode;
mod now;
mod pieces;
mod split;
pub mod summary;
mod tape;
mod warnings;

pub use now::{NowSource, parse_now};

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::thread;

use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kolo_api::crd::{
    ClusterColocationProfile, Device, ElasticQuota, NodeMetric, NodeSLO, PodGroup, PodMigrationJob,
    Reservation,
};

use self::decode::decode;
use self::pieces::{Piece, pieces};
use crate::node::NodeView;
use crate::pod::PodView;

/// An object together with the view kolo's algorithms use.
#[derive(Debug, Clone)]
pub struct Viewed<T, V> {
    /// The object as loaded.
    pub object: T,
    /// kolo's view of it.
    pub view: V,
}

/// Everything kolo reads from a cluster, in load order.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Nodes.
    pub nodes: Vec<Viewed<Node, NodeView>>,
    /// Pods.
    pub pods: Vec<Viewed<Pod, PodView>>,
    /// ConfigMaps (kolo reads `slo-controller-config` and its own).
    pub config_maps: Vec<ConfigMap>,
    /// Namespaces (their labels drive colocation profiles' namespace selectors).
    pub namespaces: Vec<Namespace>,
    /// `scheduling.k8s.io` PriorityClasses (colocation profiles name them).
    pub priority_classes: Vec<PriorityClass>,
    /// `slo.koordinator.sh` NodeMetrics.
    pub node_metrics: Vec<NodeMetric>,
    /// `slo.koordinator.sh` NodeSLOs.
    pub node_slos: Vec<NodeSLO>,
    /// `config.koordinator.sh` ClusterColocationProfiles.
    pub colocation_profiles: Vec<ClusterColocationProfile>,
    /// `scheduling.koordinator.sh` Reservations.
    pub reservations: Vec<Reservation>,
    /// `scheduling.koordinator.sh` PodMigrationJobs.
    pub pod_migration_jobs: Vec<PodMigrationJob>,
    /// `scheduling.koordinator.sh` Devices.
    pub devices: Vec<Device>,
    /// `scheduling.sigs.k8s.io` ElasticQuotas.
    pub elastic_quotas: Vec<ElasticQuota>,
    /// `scheduling.sigs.k8s.io` PodGroups.
    pub pod_groups: Vec<PodGroup>,
    /// PodDisruptionBudgets (`policy/v1`; `policy/v1beta1` ones are read
    /// into the same type, the fields kolo reads are the same).
    pub pod_disruption_budgets: Vec<PodDisruptionBudget>,
    /// PersistentVolumeClaims.
    pub persistent_volume_claims: Vec<PersistentVolumeClaim>,
    /// PersistentVolumes.
    pub persistent_volumes: Vec<PersistentVolume>,
    /// Kinds that were present but that kolo does not use, with how many
    /// objects of each were skipped (`"apps/v1 Deployment" → 3`).
    pub skipped_kinds: BTreeMap<String, usize>,
    /// `"<input>: no Kubernetes object in it"` for every input that held
    /// none (see [`Snapshot::warnings`]).
    pub empty_inputs: Vec<String>,
}

/// Where in the input a document or list item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// 1-based document number in the stream (JSON: 1-based value number).
    pub document: usize,
    /// 1-based item number inside a list document.
    pub item: Option<usize>,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document {}", self.document)?;
        if let Some(item) = self.item {
            write!(f, ", item {item}")?;
        }
        Ok(())
    }
}

/// Why a snapshot could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file (or stdin) could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The path, or `-` for stdin.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file (or stdin) holds more than the limit.
    #[error("reading {path}: larger than the limit of {limit} bytes for a snapshot")]
    TooLarge {
        /// The path, or `-` for stdin.
        path: PathBuf,
        /// The limit, [`MAX_SNAPSHOT_BYTES`].
        limit: u64,
    },
    /// The text is not valid YAML / JSON.
    #[error(transparent)]
    Syntax(Box<SyntaxError>),
    /// A document parsed but is not a valid object of its kind.
    #[error(transparent)]
    Object(Box<ObjectError>),
}

/// Text that is not valid YAML / JSON.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {position}: not valid {format}: {message}")]
pub struct SyntaxError {
    /// The file name, or `<input>`.
    pub source_name: String,
    /// Which document.
    pub position: Position,
    /// `YAML` or `JSON`.
    pub format: &'static str,
    /// The parser's message (with line and column).
    pub message: String,
}

/// A document that parsed but is not a valid object of its kind.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {position} ({kind} {name}): {field}: {message}")]
pub struct ObjectError {
    /// The file name, or `<input>`.
    pub source_name: String,
    /// Which document and item.
    pub position: Position,
    /// The object's kind (`<no kind>` if missing).
    pub kind: String,
    /// `namespace/name` or `name` (`<no name>` if missing).
    pub name: String,
    /// The field path, e.g. `spec.containers[0].resources.requests.cpu`
    /// (`.` for the object itself).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The largest snapshot file (or stdin) kolo reads: 512 MiB. A `kubectl get
/// -o yaml` dump of a 5,000-node cluster with its pods is ~70 MB; a larger
/// input (or `/dev/zero`) is refused before it fills the memory.
pub const MAX_SNAPSHOT_BYTES: u64 = 512 << 20;

/// Reads a file (or stdin for `-`) as text, refusing more than `limit`
/// bytes: a regular file by its size before reading, anything else after
/// `limit + 1` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, SnapshotError> {
    let io = |source| SnapshotError::Io { path: path.to_path_buf(), source };
    let too_large = || SnapshotError::TooLarge { path: path.to_path_buf(), limit };
    let reader: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path).map_err(io)?;
        if file.metadata().is_ok_and(|m| m.is_file() && m.len() > limit) {
            return Err(too_large());
        }
        Box::new(file)
    };
    let mut text = String::new();
    reader.take(limit.saturating_add(1)).read_to_string(&mut text).map_err(io)?;
    if text.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(text)
}

impl Snapshot {
    /// Loads a snapshot from text, detecting JSON (first non-blank character
    /// `{` or `[`) or YAML. `source_name` appears in error messages.
    pub fn parse(text: &str, source_name: &str) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        snapshot.add_text(text, source_name)?;
        Ok(snapshot)
    }

    /// Loads a snapshot from a file, or from stdin when `path` is `-`.
    pub fn load(path: &Path) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        snapshot.add_file(path)?;
        Ok(snapshot)
    }

    /// Adds the objects of a file (or stdin for `-`) to this snapshot. On
    /// error the snapshot is left as it was.
    pub fn add_file(&mut self, path: &Path) -> Result<(), SnapshotError> {
        let text = read_text(path, MAX_SNAPSHOT_BYTES)?;
        self.add_text(&text, &path.display().to_string())
    }

    /// Adds the objects in `text` to this snapshot. On error the snapshot is
    /// left as it was.
    pub fn add_text(&mut self, text: &str, source_name: &str) -> Result<(), SnapshotError> {
        let parts = decode_all(pieces(text, source_name)?, source_name)?;
        let empty = parts.iter().all(|p| p.object_count() == 0 && p.skipped_kinds.is_empty());
        self.append_all(parts);
        if empty {
            self.empty_inputs.push(format!("{source_name}: no Kubernetes object in it"));
        }
        Ok(())
    }

    /// Loads and merges several files (`-` is stdin), in order.
    pub fn load_all(paths: &[impl AsRef<Path>]) -> Result<Snapshot, SnapshotError> {
        let mut snapshot = Snapshot::default();
        for path in paths {
            snapshot.add_file(path.as_ref())?;
        }
        Ok(snapshot)
    }

    /// The newest NodeMetric `status.updateTime`: the time a dump is judged
    /// at when none is given, so it reads as of when it was taken
    /// (LoadAwareScheduling treats metrics older than its expiration, 180 s
    /// by default, as expired, which would make every old dump look stale).
    /// `None` when no NodeMetric has an update time.
    pub fn newest_metric_update(&self) -> Option<crate::clock::Timestamp> {
        self.node_metrics
            .iter()
            .filter_map(|m| m.status.as_ref()?.update_time.as_ref().map(|t| t.0))
            .max()
    }

    /// The number of objects of every kind kolo keeps.
    pub fn object_count(&self) -> usize {
        self.nodes.len()
            + self.pods.len()
            + self.config_maps.len()
            + self.namespaces.len()
            + self.priority_classes.len()
            + self.node_metrics.len()
            + self.node_slos.len()
            + self.colocation_profiles.len()
            + self.reservations.len()
            + self.pod_migration_jobs.len()
            + self.devices.len()
            + self.elastic_quotas.len()
            + self.pod_groups.len()
            + self.pod_disruption_budgets.len()
            + self.persistent_volume_claims.len()
            + self.persistent_volumes.len()
    }

    /// Moves the objects of `parts` (in order) to the end of this
    /// snapshot, growing each list once.
    fn append_all(&mut self, mut parts: Vec<Snapshot>) {
        if self.object_count() == 0 && self.skipped_kinds.is_empty() && !parts.is_empty() {
            // Nothing to keep: the first part becomes the snapshot, saving
            // a copy of its (large) objects.
            let empty_inputs = std::mem::take(&mut self.empty_inputs);
            *self = parts.remove(0);
            self.empty_inputs = empty_inputs;
        }
        macro_rules! append {
            ($($field:ident),*) => {$(
                self.$field.reserve(parts.iter().map(|p| p.$field.len()).sum());
                for part in &mut parts {
                    self.$field.append(&mut part.$field);
                }
            )*};
        }
        append!(
            nodes,
            pods,
            config_maps,
            namespaces,
            priority_classes,
            node_metrics,
            node_slos,
            colocation_profiles,
            reservations,
            pod_migration_jobs,
            devices,
            elastic_quotas,
            pod_groups,
            pod_disruption_budgets,
            persistent_volume_claims,
            persistent_volumes
        );
        for part in parts {
            for (kind, count) in part.skipped_kinds {
                *self.skipped_kinds.entry(kind).or_default() += count;
            }
        }
    }
}

/// Decodes every piece, in parallel when there are many, into one partial
/// snapshot per run of consecutive pieces, in input order. The first error
/// (in input order) wins.
fn decode_all(pieces: Vec<Piece<'_>>, source_name: &str) -> Result<Vec<Snapshot>, SnapshotError> {
    const PIECES_PER_THREAD: usize = 256;
    let decode_run = |run: Vec<Piece<'_>>| {
        let mut part = Snapshot::default();
        let mut scratch = Vec::new();
        for piece in run {
            decode(piece, source_name, &mut scratch, &mut part)?;
        }
        Ok(part)
    };
    let threads = thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = pieces.len().div_ceil(threads).max(PIECES_PER_THREAD);
    if pieces.len() <= chunk {
        return Ok(vec![decode_run(pieces)?]);
    }
    let mut runs: Vec<Vec<Piece>> = Vec::new();
    let mut pieces = pieces.into_iter().peekable();
    while pieces.peek().is_some() {
        runs.push(pieces.by_ref().take(chunk).collect());
    }
    thread::scope(|scope| {
        let handles: Vec<_> =
            runs.into_iter().map(|run| scope.spawn(move || decode_run(run))).collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

#[cfg(test)]
mod tests;
