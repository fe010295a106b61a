//! Decoding one piece into a typed object (and its view), added to a
//! snapshot, or an error that names the document, the object and the field.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::pieces::{Body, Piece, parse_yaml};
use super::tape::{Event, NodeDeserializer, Tape};
use super::{ObjectError, Snapshot, SnapshotError, Viewed, block_yaml};
use crate::node::{NodeView, NodeViewError};
use crate::pod::{PodView, PodViewError};

/// What identifies an object, read before its body is decoded.
#[derive(Default, Deserialize)]
struct Header<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<HeaderMetadata<'a>>,
}

#[derive(Default, Deserialize)]
struct HeaderMetadata<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
}

impl Header<'_> {
    /// Copies the header out of a value (the value then moves on to the
    /// typed decoder).
    fn of_value(value: &Value) -> Header<'static> {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| Cow::Owned(s.to_string()));
        let meta = value.get("metadata");
        Header {
            api_version: text(value.get("apiVersion")),
            kind: text(value.get("kind")),
            metadata: Some(HeaderMetadata {
                name: text(meta.and_then(|m| m.get("name"))),
                namespace: text(meta.and_then(|m| m.get("namespace"))),
            }),
        }
    }

    /// Reads the header of the mapping at `at` of a tape.
    fn of_tape<'t>(tape: &'t Tape<'_>, at: usize) -> Header<'t> {
        let text = |at: Option<usize>| at.and_then(|at| tape.str_at(at)).map(Cow::Borrowed);
        let meta = tape.get(at, "metadata");
        Header {
            api_version: text(tape.get(at, "apiVersion")),
            kind: text(tape.get(at, "kind")),
            metadata: Some(HeaderMetadata {
                name: text(meta.and_then(|m| tape.get(m, "name"))),
                namespace: text(meta.and_then(|m| tape.get(m, "namespace"))),
            }),
        }
    }

    /// `namespace/name`, `name` or `<no name>`.
    fn object_name(&self) -> String {
        let meta = self.metadata.as_ref();
        match (meta.and_then(|m| m.namespace.as_deref()), meta.and_then(|m| m.name.as_deref())) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (None, Some(name)) => name.to_string(),
            (_, None) => "<no name>".to_string(),
        }
    }
}

/// The body of one object, ready for typed deserialization.
enum Source<'a> {
    Json(&'a str),
    /// A node of a tape read by the block-YAML fast path.
    Tape(NodeDeserializer<'a>),
    /// A value serde-saphyr parsed (YAML outside the fast path's subset).
    Value(Value),
}

impl Source<'_> {
    /// Deserializes into `T`; on failure, the path of the field that failed
    /// and the message.
    fn typed<T: DeserializeOwned>(self) -> Result<T, (String, String)> {
        let with_path = |e: serde_path_to_error::Error<serde_json::Error>| {
            (e.path().to_string(), e.into_inner().to_string())
        };
        let result = match self {
            // Path tracking costs a third of the decoding time, so it runs
            // only to explain an error (here and for YAML below).
            Source::Json(text) => serde_json::from_str(text).or_else(|_| {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                    .map_err(with_path)
            }),
            Source::Tape(node) => T::deserialize(node).or_else(|_| {
                serde_path_to_error::deserialize(node)
                    .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
            }),
            Source::Value(value) => serde_path_to_error::deserialize(value).map_err(with_path),
        };
        result.map_err(|(path, message)| name_missing_field(path, message))
    }
}

/// A missing required field as serde reports it (at the path of the object
/// that lacks it, `.` for the object itself: "`.`: missing field `spec`")
/// becomes an error at the field's own path ("`spec`: required field is
/// missing"), like every other field error. Other errors are kept.
fn name_missing_field(path: String, message: String) -> (String, String) {
    let Some(rest) = message.strip_prefix("missing field `") else { return (path, message) };
    let Some((field, location)) = rest.split_once('`') else { return (path, message) };
    let path = if path == "." { field.to_string() } else { format!("{path}.{field}") };
    (path, format!("required field is missing{location}"))
}

/// Decodes one piece into `into`. `scratch` is a tape buffer reused from
/// piece to piece: a fresh multi-kilobyte buffer per object made the
/// allocator consolidate its free lists every time, a fifth of the load time.
pub(super) fn decode<'a>(
    piece: Piece<'a>,
    source_name: &str,
    scratch: &mut Vec<Event<'a>>,
    into: &mut Snapshot,
) -> Result<(), SnapshotError> {
    let Piece { body, position, kind_hint } = piece;
    let object_error = |header: &Header, field: String, message: String| {
        SnapshotError::Object(Box::new(ObjectError {
            source_name: source_name.to_string(),
            position,
            kind: header.kind.as_deref().unwrap_or("<no kind>").to_string(),
            name: header.object_name(),
            field,
            message,
        }))
    };
    let not_an_object = || object_error(&Header::default(), ".".into(), "not an object".into());
    let (text, item) = match body {
        Body::Json(text) => {
            if !text.starts_with('{') {
                return Err(not_an_object());
            }
            let header = serde_json::from_str::<Header>(text)
                .map_err(|e| object_error(&Header::default(), ".".into(), e.to_string()))?;
            return decode_typed(header, kind_hint, Source::Json(text), &object_error, into);
        }
        Body::YamlItem(text) => (text, true),
        Body::YamlDoc(text) => (text, false),
        Body::Value(value) => return decode_value(value, kind_hint, &object_error, into),
    };
    if let Some(tape) = block_yaml::parse_tape_reusing(text, std::mem::take(scratch)) {
        // An item's text is a sequence of that one item.
        let root = usize::from(item);
        let result = if item && tape.len_at(0) != Some(1) || !tape.is_map_at(root) {
            Err(not_an_object())
        } else {
            let header = Header::of_tape(&tape, root);
            decode_typed(header, kind_hint, Source::Tape(tape.node(root)), &object_error, into)
        };
        *scratch = tape.into_buffer();
        return result;
    }
    let value = match parse_yaml(text, position, source_name)? {
        Value::Array(mut one) if item && one.len() == 1 => one.remove(0),
        value => value,
    };
    decode_value(value, kind_hint, &object_error, into)
}

fn decode_value(
    value: Value,
    kind_hint: Option<String>,
    object_error: &dyn Fn(&Header, String, String) -> SnapshotError,
    into: &mut Snapshot,
) -> Result<(), SnapshotError> {
    if !value.is_object() {
        return Err(object_error(&Header::default(), ".".into(), "not an object".into()));
    }
    let header = Header::of_value(&value);
    decode_typed(header, kind_hint, Source::Value(value), object_error, into)
}

fn decode_typed(
    mut header: Header<'_>,
    kind_hint: Option<String>,
    source: Source<'_>,
    object_error: &dyn Fn(&Header, String, String) -> SnapshotError,
    into: &mut Snapshot,
) -> Result<(), SnapshotError> {
    if header.kind.is_none() {
        header.kind = kind_hint.map(Cow::Owned);
    }
    let Some(kind) = header.kind.as_deref() else {
        return Err(object_error(&header, "kind".into(), "missing".into()));
    };
    let api_version = header.api_version.as_deref().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    macro_rules! typed {
        () => {
            source.typed().map_err(|(field, message)| object_error(&header, field, message))?
        };
    }
    match (group, kind) {
        ("", "Node") => {
            let node: Node = typed!();
            let view = NodeView::from_node(&node).map_err(|e| {
                let (field, message) = node_view_error(e);
                object_error(&header, field, message)
            })?;
            into.nodes.push(Viewed { object: node, view });
        }
        ("", "Pod") => {
            let pod: Pod = typed!();
            let view = PodView::from_pod(&pod).map_err(|e| {
                let (field, message) = pod_view_error(e);
                object_error(&header, field, message)
            })?;
            into.pods.push(Viewed { object: pod, view });
        }
        ("", "ConfigMap") => into.config_maps.push(typed!()),
        ("", "Namespace") => into.namespaces.push(typed!()),
        ("scheduling.k8s.io", "PriorityClass") => into.priority_classes.push(typed!()),
        ("slo.koordinator.sh", "NodeMetric") => into.node_metrics.push(typed!()),
        ("slo.koordinator.sh", "NodeSLO") => into.node_slos.push(typed!()),
        ("config.koordinator.sh", "ClusterColocationProfile") => {
            into.colocation_profiles.push(typed!());
        }
        ("scheduling.koordinator.sh", "Reservation") => into.reservations.push(typed!()),
        ("scheduling.koordinator.sh", "PodMigrationJob") => {
            into.pod_migration_jobs.push(typed!());
        }
        ("scheduling.koordinator.sh", "Device") => into.devices.push(typed!()),
        ("scheduling.sigs.k8s.io", "ElasticQuota") => into.elastic_quotas.push(typed!()),
        ("scheduling.sigs.k8s.io", "PodGroup") => into.pod_groups.push(typed!()),
        ("", "PersistentVolumeClaim") => into.persistent_volume_claims.push(typed!()),
        ("", "PersistentVolume") => into.persistent_volumes.push(typed!()),
        ("policy", "PodDisruptionBudget") if api_version == "policy/v1" => {
            into.pod_disruption_budgets.push(typed!());
        }
        ("policy", "PodDisruptionBudget") => {
            // `policy/v1beta1` (Kubernetes before 1.21): the same fields,
            // read as `policy/v1`.
            let mut value: Value = typed!();
            value["apiVersion"] = "policy/v1".into();
            let budget = serde_path_to_error::deserialize(value)
                .map_err(|e| object_error(&header, e.path().to_string(), e.inner().to_string()))?;
            into.pod_disruption_budgets.push(budget);
        }
        _ => {
            let skipped = if api_version.is_empty() {
                kind.to_string()
            } else {
                format!("{api_version} {kind}")
            };
            *into.skipped_kinds.entry(skipped).or_default() += 1;
        }
    }
    Ok(())
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
