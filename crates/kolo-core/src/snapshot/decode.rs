//! Decoding one piece into a typed object (and its view), or an error that
//! names the document, the object and the field.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kolo_api::crd::{
    ClusterColocationProfile, Device, ElasticQuota, NodeMetric, NodeSLO, PodGroup, PodMigrationJob,
    Reservation,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::pieces::{Body, Piece, parse_yaml};
use super::{ObjectError, SnapshotError, Viewed, block_yaml};
use crate::node::{NodeView, NodeViewError};
use crate::pod::{PodView, PodViewError};

/// One decoded object.
pub(super) enum Object {
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
    /// A kind kolo does not use: `apiVersion kind`.
    Skipped(String),
}

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
    /// A value parsed from this YAML text (kept to explain errors).
    Yaml(Value, &'a str),
    Value(Value),
}

impl Source<'_> {
    /// Deserializes into `T`; on failure, the path of the field that failed
    /// and the message.
    fn typed<T: DeserializeOwned>(self) -> Result<T, (String, String)> {
        let with_path = |e: serde_path_to_error::Error<serde_json::Error>| {
            (e.path().to_string(), e.into_inner().to_string())
        };
        match self {
            // Path tracking costs a third of the decoding time, so it runs
            // only to explain an error (here and for YAML below).
            Source::Json(text) => serde_json::from_str(text).or_else(|_| {
                serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                    .map_err(with_path)
            }),
            Source::Yaml(value, text) => serde_json::from_value(value).or_else(|e| {
                // The text parsed once already, so it parses again.
                let again = block_yaml::parse(text)
                    .or_else(|| serde_saphyr::from_str(text).ok())
                    .ok_or_else(|| (".".to_string(), e.to_string()))?;
                serde_path_to_error::deserialize(again).map_err(with_path)
            }),
            Source::Value(value) => serde_path_to_error::deserialize(value).map_err(with_path),
        }
    }
}

/// Decodes one piece.
pub(super) fn decode(piece: Piece<'_>, source_name: &str) -> Result<Object, SnapshotError> {
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
    let (value, yaml_text) = match body {
        Body::Json(text) => {
            if !text.starts_with('{') {
                let header = Header::default();
                return Err(object_error(&header, ".".into(), "not an object".into()));
            }
            let header = serde_json::from_str::<Header>(text)
                .map_err(|e| object_error(&Header::default(), ".".into(), e.to_string()))?;
            return decode_typed(header, kind_hint, Source::Json(text), &object_error);
        }
        Body::Yaml(text) => {
            let value = match block_yaml::parse(&text) {
                Some(value) => value,
                None => parse_yaml(&text, position, source_name)?,
            };
            (value, Some(text))
        }
        Body::Value(value) => (value, None),
    };
    if !value.is_object() {
        return Err(object_error(&Header::default(), ".".into(), "not an object".into()));
    }
    let header = Header::of_value(&value);
    let source = match &yaml_text {
        Some(text) => Source::Yaml(value, text),
        None => Source::Value(value),
    };
    decode_typed(header, kind_hint, source, &object_error)
}

fn decode_typed(
    mut header: Header<'_>,
    kind_hint: Option<String>,
    source: Source<'_>,
    object_error: &dyn Fn(&Header, String, String) -> SnapshotError,
) -> Result<Object, SnapshotError> {
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
    Ok(match (group, kind) {
        ("", "Node") => {
            let node: Node = typed!();
            let view = NodeView::from_node(&node).map_err(|e| {
                let (field, message) = node_view_error(e);
                object_error(&header, field, message)
            })?;
            Object::Node(Box::new(Viewed { object: node, view }))
        }
        ("", "Pod") => {
            let pod: Pod = typed!();
            let view = PodView::from_pod(&pod).map_err(|e| {
                let (field, message) = pod_view_error(e);
                object_error(&header, field, message)
            })?;
            Object::Pod(Box::new(Viewed { object: pod, view }))
        }
        ("", "ConfigMap") => Object::ConfigMap(Box::new(typed!())),
        ("slo.koordinator.sh", "NodeMetric") => Object::NodeMetric(Box::new(typed!())),
        ("slo.koordinator.sh", "NodeSLO") => Object::NodeSLO(Box::new(typed!())),
        ("config.koordinator.sh", "ClusterColocationProfile") => {
            Object::ColocationProfile(Box::new(typed!()))
        }
        ("scheduling.koordinator.sh", "Reservation") => Object::Reservation(Box::new(typed!())),
        ("scheduling.koordinator.sh", "PodMigrationJob") => {
            Object::PodMigrationJob(Box::new(typed!()))
        }
        ("scheduling.koordinator.sh", "Device") => Object::Device(Box::new(typed!())),
        ("scheduling.sigs.k8s.io", "ElasticQuota") => Object::ElasticQuota(Box::new(typed!())),
        ("scheduling.sigs.k8s.io", "PodGroup") => Object::PodGroup(Box::new(typed!())),
        _ if api_version.is_empty() => Object::Skipped(kind.to_string()),
        _ => Object::Skipped(format!("{api_version} {kind}")),
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
