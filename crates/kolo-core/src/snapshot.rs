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

mod split;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::thread;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kolo_api::crd::{
    ClusterColocationProfile, Device, ElasticQuota, NodeMetric, NodeSLO, PodGroup, PodMigrationJob,
    Reservation,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::node::{NodeView, NodeViewError};
use crate::pod::{PodView, PodViewError};

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
    /// Kinds that were present but that kolo does not use, with how many
    /// objects of each were skipped (`"apps/v1 Deployment" → 3`).
    pub skipped_kinds: BTreeMap<String, usize>,
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
        let io = |source| SnapshotError::Io { path: path.to_path_buf(), source };
        let text = if path == Path::new("-") {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(io)?;
            text
        } else {
            std::fs::read_to_string(path).map_err(io)?
        };
        self.add_text(&text, &path.display().to_string())
    }

    /// Adds the objects in `text` to this snapshot. On error the snapshot is
    /// left as it was.
    pub fn add_text(&mut self, text: &str, source_name: &str) -> Result<(), SnapshotError> {
        let pieces = if looks_like_json(text) {
            json_pieces(text, source_name)?
        } else {
            yaml_pieces(text, source_name)?
        };
        let objects = decode_all(pieces, source_name)?;
        for object in objects {
            self.push(object);
        }
        Ok(())
    }

    /// The number of objects of every kind kolo keeps.
    pub fn object_count(&self) -> usize {
        self.nodes.len()
            + self.pods.len()
            + self.config_maps.len()
            + self.node_metrics.len()
            + self.node_slos.len()
            + self.colocation_profiles.len()
            + self.reservations.len()
            + self.pod_migration_jobs.len()
            + self.devices.len()
            + self.elastic_quotas.len()
            + self.pod_groups.len()
    }

    fn push(&mut self, object: Object) {
        match object {
            Object::Node(v) => self.nodes.push(*v),
            Object::Pod(v) => self.pods.push(*v),
            Object::ConfigMap(o) => self.config_maps.push(*o),
            Object::NodeMetric(o) => self.node_metrics.push(*o),
            Object::NodeSLO(o) => self.node_slos.push(*o),
            Object::ColocationProfile(o) => self.colocation_profiles.push(*o),
            Object::Reservation(o) => self.reservations.push(*o),
            Object::PodMigrationJob(o) => self.pod_migration_jobs.push(*o),
            Object::Device(o) => self.devices.push(*o),
            Object::ElasticQuota(o) => self.elastic_quotas.push(*o),
            Object::PodGroup(o) => self.pod_groups.push(*o),
            Object::Skipped(kind) => *self.skipped_kinds.entry(kind).or_default() += 1,
        }
    }
}

/// One decoded object.
enum Object {
    Node(Box<Viewed<Node, NodeView>>),
    Pod(Box<Viewed<Pod, PodView>>),
    ConfigMap(Box<ConfigMap>),
    NodeMetric(Box<NodeMetric>),
    NodeSLO(Box<NodeSLO>),
    ColocationProfile(Box<ClusterColocationProfile>),
    Reservation(Box<Reservation>),
    PodMigrationJob(Box<PodMigrationJob>),
    Device(Box<Device>),
    ElasticQuota(Box<ElasticQuota>),
    PodGroup(Box<PodGroup>),
    Skipped(String),
}

/// A piece of input still to be decoded, and where it came from.
struct Piece {
    body: Body,
    position: Position,
    /// The kind to assume when the object has none (items of a typed list
    /// such as `PodList` may omit it).
    kind_hint: Option<String>,
}

/// YAML text still to be parsed, or an already-parsed value.
enum Body {
    Yaml(String),
    Value(Value),
}

/// Appends one piece per list item, numbered from 1 inside `document`.
fn push_items(
    out: &mut Vec<Piece>,
    items: impl IntoIterator<Item = Body>,
    document: Position,
    kind_hint: Option<String>,
) {
    out.extend(items.into_iter().enumerate().map(|(i, body)| Piece {
        body,
        position: Position { item: Some(i + 1), ..document },
        kind_hint: kind_hint.clone(),
    }));
}

fn looks_like_json(text: &str) -> bool {
    matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['))
}

/// Splits JSON input into values: a stream of top-level values, each an
/// object, a list object (`items`), or an array of objects.
fn json_pieces(text: &str, source_name: &str) -> Result<Vec<Piece>, SnapshotError> {
    let mut pieces = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for (index, value) in stream.enumerate() {
        let position = Position { document: index + 1, item: None };
        let value = value.map_err(|e| {
            SnapshotError::Syntax(Box::new(SyntaxError {
                source_name: source_name.to_string(),
                position,
                format: "JSON",
                message: e.to_string(),
            }))
        })?;
        explode_value(value, position, &mut pieces);
    }
    Ok(pieces)
}

/// Turns one parsed document into pieces: a list (an array, or an object
/// whose kind ends in `List` and that has `items`) becomes its items.
fn explode_value(value: Value, position: Position, out: &mut Vec<Piece>) {
    match value {
        Value::Array(items) => push_items(out, items.into_iter().map(Body::Value), position, None),
        Value::Object(mut map)
            if map.get("kind").and_then(Value::as_str).is_some_and(is_list_kind)
                && map.get("items").is_some_and(Value::is_array) =>
        {
            let hint = map.get("kind").and_then(Value::as_str).and_then(item_kind_hint);
            if let Some(Value::Array(items)) = map.remove("items") {
                push_items(out, items.into_iter().map(Body::Value), position, hint);
            }
        }
        value => out.push(Piece { body: Body::Value(value), position, kind_hint: None }),
    }
}

fn is_list_kind(kind: &str) -> bool {
    kind.ends_with("List")
}

/// `PodList` items may omit their kind; `List` items never do.
fn item_kind_hint(list_kind: &str) -> Option<String> {
    let kind = list_kind.strip_suffix("List")?;
    (!kind.is_empty()).then(|| kind.to_string())
}

/// Splits YAML input into pieces: one per document, and one per item of a
/// list document when [`split::list_items`] can cut it safely.
fn yaml_pieces(text: &str, source_name: &str) -> Result<Vec<Piece>, SnapshotError> {
    let mut pieces = Vec::new();
    for doc in split::documents(text) {
        let position = Position { document: doc.number, item: None };
        let list_kind = yaml_top_level_kind(doc.text).filter(|k| is_list_kind(k));
        match list_kind.and_then(|kind| Some((kind, split::list_items(doc.text)?))) {
            Some((kind, items)) => {
                let items = items.into_iter().map(Body::Yaml);
                push_items(&mut pieces, items, position, item_kind_hint(kind));
            }
            None => {
                let value = parse_yaml(doc.text, position, source_name)?;
                explode_value(value, position, &mut pieces);
            }
        }
    }
    Ok(pieces)
}

/// The value of a top-level `kind:` line, if the document has one.
fn yaml_top_level_kind(doc: &str) -> Option<&str> {
    doc.lines()
        .find_map(|l| l.strip_prefix("kind:"))
        .map(|k| k.trim().trim_matches(|c| c == '"' || c == '\''))
}

fn parse_yaml(text: &str, position: Position, source_name: &str) -> Result<Value, SnapshotError> {
    serde_saphyr::from_str_with_options(text, yaml_options(text.len())).map_err(|e| {
        SnapshotError::Syntax(Box::new(SyntaxError {
            source_name: source_name.to_string(),
            position,
            format: "YAML",
            message: e.to_string(),
        }))
    })
}

/// serde-saphyr's default budget stops at 250,000 nodes, which a 5,000-node
/// snapshot passes. Node, event and scalar budgets here grow with the input
/// (a YAML node costs at least one byte, so they cannot be exceeded by honest
/// input), while the alias limits, which guard against "billion laughs"
/// expansion, stay at their defaults.
fn yaml_options(len: usize) -> serde_saphyr::Options {
    let len = len.max(1024);
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: len,
            max_events: 4 * len,
            max_total_scalar_bytes: len,
            max_documents: len,
        },
    }
}

/// Decodes every piece, in parallel when there are many, keeping input
/// order. The first error (in input order) wins.
fn decode_all(pieces: Vec<Piece>, source_name: &str) -> Result<Vec<Object>, SnapshotError> {
    const PIECES_PER_THREAD: usize = 256;
    let threads = thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = pieces.len().div_ceil(threads).max(PIECES_PER_THREAD);
    if pieces.len() <= chunk {
        return pieces.into_iter().map(|p| decode(p, source_name)).collect();
    }
    let mut chunks: Vec<Vec<Piece>> = Vec::new();
    let mut pieces = pieces.into_iter().peekable();
    while pieces.peek().is_some() {
        chunks.push(pieces.by_ref().take(chunk).collect());
    }
    thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk.into_iter().map(|p| decode(p, source_name)).collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut out = Vec::new();
        for handle in handles {
            match handle.join() {
                Ok(objects) => out.extend(objects?),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(out)
    })
}

fn decode(piece: Piece, source_name: &str) -> Result<Object, SnapshotError> {
    let Piece { body, position, kind_hint } = piece;
    let value = match body {
        Body::Value(value) => value,
        Body::Yaml(text) => parse_yaml(&text, position, source_name)?,
    };
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = value.get("kind").and_then(Value::as_str).map(str::to_string).or(kind_hint);
    let name = object_name(&value);
    let object_error = |kind: &str, field: String, message: String| {
        SnapshotError::Object(Box::new(ObjectError {
            source_name: source_name.to_string(),
            position,
            kind: kind.to_string(),
            name: name.clone(),
            field,
            message,
        }))
    };
    let Some(kind) = kind else {
        if !value.is_object() {
            return Err(object_error("<no kind>", ".".into(), "not an object".into()));
        }
        return Err(object_error("<no kind>", "kind".into(), "missing".into()));
    };
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    macro_rules! plain {
        ($variant:ident) => {
            Object::$variant(Box::new(
                from_value(value).map_err(|(field, msg)| object_error(&kind, field, msg))?,
            ))
        };
    }
    Ok(match (group, kind.as_str()) {
        ("", "Node") => {
            let node: Node = from_value(value).map_err(|(f, m)| object_error(&kind, f, m))?;
            let view = NodeView::from_node(&node).map_err(|e| {
                let (field, message) = node_view_error(e);
                object_error(&kind, field, message)
            })?;
            Object::Node(Box::new(Viewed { object: node, view }))
        }
        ("", "Pod") => {
            let pod: Pod = from_value(value).map_err(|(f, m)| object_error(&kind, f, m))?;
            let view = PodView::from_pod(&pod).map_err(|e| {
                let (field, message) = pod_view_error(e);
                object_error(&kind, field, message)
            })?;
            Object::Pod(Box::new(Viewed { object: pod, view }))
        }
        ("", "ConfigMap") => plain!(ConfigMap),
        ("slo.koordinator.sh", "NodeMetric") => plain!(NodeMetric),
        ("slo.koordinator.sh", "NodeSLO") => plain!(NodeSLO),
        ("config.koordinator.sh", "ClusterColocationProfile") => plain!(ColocationProfile),
        ("scheduling.koordinator.sh", "Reservation") => plain!(Reservation),
        ("scheduling.koordinator.sh", "PodMigrationJob") => plain!(PodMigrationJob),
        ("scheduling.koordinator.sh", "Device") => plain!(Device),
        ("scheduling.sigs.k8s.io", "ElasticQuota") => plain!(ElasticQuota),
        ("scheduling.sigs.k8s.io", "PodGroup") => plain!(PodGroup),
        _ => Object::Skipped(if api_version.is_empty() {
            kind
        } else {
            format!("{api_version} {kind}")
        }),
    })
}

/// A view error as (field, message); the object is already named by the
/// caller.
fn pod_view_error(error: PodViewError) -> (String, String) {
    match error {
        PodViewError::Resources { field, error, .. } => (field, error.to_string()),
    }
}

/// A view error as (field, message); the object is already named by the
/// caller.
fn node_view_error(error: NodeViewError) -> (String, String) {
    match error {
        NodeViewError::Resources { field, error, .. } => (field.to_string(), error.to_string()),
        NodeViewError::TaintEffect { index, key, effect, .. } => (
            format!("spec.taints[{index}].effect"),
            format!(
                "unknown effect {effect:?} on taint {key:?}, \
                 expected NoSchedule, PreferNoSchedule or NoExecute"
            ),
        ),
    }
}

fn object_name(value: &Value) -> String {
    let meta = value.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let namespace = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str);
    match (namespace, name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_string(),
        (_, None) => "<no name>".to_string(),
    }
}

/// Deserializes with the path of the field that failed.
fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        (path, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests;
