//! A profile's `spec.patch`: a strategic-merge patch of the pod, in the
//! subset kolo implements.
//!
//! # What is supported
//!
//! * Objects merge key by key, recursively; a `null` value deletes the key
//!   (JSON merge patch, RFC 7386).
//! * The lists Kubernetes merges by key are merged by that key: an item of
//!   the patch whose key matches an item of the pod is merged into it, other
//!   items are appended in patch order. These are `spec.containers`,
//!   `spec.initContainers`, `spec.ephemeralContainers`, `spec.volumes`,
//!   `spec.imagePullSecrets`, `spec.resourceClaims`, `spec.schedulingGates`
//!   (by `name`), `spec.hostAliases` (by `ip`),
//!   `spec.topologySpreadConstraints` (by `topologyKey`),
//!   `metadata.ownerReferences` (by `uid`), and in each container `env`
//!   (by `name`), `ports` (by `containerPort`), `volumeMounts` (by
//!   `mountPath`) and `volumeDevices` (by `devicePath`).
//! * `metadata.finalizers` is merged as a set (missing entries appended).
//! * Every other list is replaced, as in Kubernetes.
//!
//! # What is not
//!
//! The `$patch`, `$retainKeys`, `$setElementOrder/...` and
//! `$deleteFromPrimitiveList/...` directives, and `ports` keyed by
//! `containerPort` *and* `protocol`. A patch using a directive is refused
//! when the profile is loaded (the profile is then ignored, with a warning
//! naming it), never half-applied.

use serde_json::{Map, Value};

use k8s_openapi::api::core::v1::Pod;

/// Why a patch cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicPatchError {
    /// The patch is not a JSON object.
    #[error("spec.patch: must be a JSON object (a partial Pod), found {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
    /// The patch uses a strategic-merge directive kolo does not implement.
    #[error(
        "spec.patch{path}: the directive {directive:?} is not supported (kolo merges objects, merges the well-known keyed lists by key and replaces other lists; see docs/webhooks.md)"
    )]
    UnsupportedDirective {
        /// JSON path of the object holding the directive.
        path: String,
        /// The directive key.
        directive: String,
    },
    /// An item of a keyed list has no usable merge key.
    #[error("spec.patch{path}: every item must be an object with a {key:?} field to merge by")]
    MissingMergeKey {
        /// JSON path of the list.
        path: String,
        /// The merge key.
        key: &'static str,
    },
    /// The patched pod is not a valid Pod.
    #[error("spec.patch: the patched pod is not a valid Pod: {reason}")]
    InvalidResult {
        /// The decoding error, with the field path.
        reason: String,
    },
}

/// A checked strategic-merge patch of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategicPatch {
    patch: Map<String, Value>,
}

/// One step of a path inside the pod, for looking up merge keys.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step<'a> {
    Key(&'a str),
    Item,
}

/// The merge key of the list at `path`, if it is one Kubernetes merges by key.
fn merge_key(path: &[Step<'_>]) -> Option<ListStrategy> {
    use Step::{Item, Key};
    let key = |k| Some(ListStrategy::ByKey(k));
    match path {
        [Key("spec"), Key("containers" | "initContainers" | "ephemeralContainers")] => key("name"),
        [
            Key("spec"),
            Key("volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"),
        ] => key("name"),
        [Key("spec"), Key("hostAliases")] => key("ip"),
        [Key("spec"), Key("topologySpreadConstraints")] => key("topologyKey"),
        [Key("metadata"), Key("ownerReferences")] => key("uid"),
        [Key("metadata"), Key("finalizers")] => Some(ListStrategy::Set),
        [
            Key("spec"),
            Key("containers" | "initContainers" | "ephemeralContainers"),
            Item,
            Key(field),
        ] => match *field {
            "env" => key("name"),
            "ports" => key("containerPort"),
            "volumeMounts" => key("mountPath"),
            "volumeDevices" => key("devicePath"),
            _ => None,
        },
        _ => None,
    }
}

#[derive(Clone, Copy)]
enum ListStrategy {
    /// Merge items with equal values of this field.
    ByKey(&'static str),
    /// A list of scalars merged as a set.
    Set,
}

impl StrategicPatch {
    /// Checks a raw patch. `None` for a `null` patch (nothing to do).
    pub fn compile(raw: &Value) -> Result<Option<StrategicPatch>, StrategicPatchError> {
        let patch = match raw {
            Value::Null => return Ok(None),
            Value::Object(map) => map,
            other => return Err(StrategicPatchError::NotAnObject { found: type_name(other) }),
        };
        let mut path = Vec::new();
        check(patch, &mut path)?;
        let patch = StrategicPatch { patch: patch.clone() };
        // Catch type errors (`"priority": "high"`) now rather than per pod.
        patch.apply(&Pod::default())?;
        Ok(Some(patch))
    }

    /// The pod with the patch applied.
    pub fn apply(&self, pod: &Pod) -> Result<Pod, StrategicPatchError> {
        let invalid =
            |e: serde_json::Error| StrategicPatchError::InvalidResult { reason: e.to_string() };
        let mut value = serde_json::to_value(pod).map_err(invalid)?;
        let mut path = Vec::new();
        merge_object(&mut value, &self.patch, &mut path);
        serde_path_to_error::deserialize(&value).map_err(|e| StrategicPatchError::InvalidResult {
            reason: format!("{}: {}", e.path(), e.inner()),
        })
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn display_path(path: &[Step<'_>]) -> String {
    path.iter()
        .map(|step| match step {
            Step::Key(k) => format!(".{k}"),
            Step::Item => "[*]".to_string(),
        })
        .collect()
}

/// Refuses directives and keyed-list items without their key.
fn check<'a>(
    object: &'a Map<String, Value>,
    path: &mut Vec<Step<'a>>,
) -> Result<(), StrategicPatchError> {
    for (key, value) in object {
        if key.starts_with('$') {
            return Err(StrategicPatchError::UnsupportedDirective {
                path: display_path(path),
                directive: key.clone(),
            });
        }
        path.push(Step::Key(key));
        match value {
            Value::Object(inner) => check(inner, path)?,
            Value::Array(items) => {
                if let Some(ListStrategy::ByKey(merge_key)) = merge_key(path) {
                    for item in items {
                        let has_key = item
                            .as_object()
                            .and_then(|o| o.get(merge_key))
                            .is_some_and(|k| !k.is_null());
                        if !has_key {
                            return Err(StrategicPatchError::MissingMergeKey {
                                path: display_path(path),
                                key: merge_key,
                            });
                        }
                    }
                }
                path.push(Step::Item);
                for item in items {
                    if let Value::Object(inner) = item {
                        check(inner, path)?;
                    }
                }
                path.pop();
            }
            _ => {}
        }
        path.pop();
    }
    Ok(())
}

/// Merges `patch` into `target` (which becomes an object if it is not one).
fn merge_object<'a>(target: &mut Value, patch: &'a Map<String, Value>, path: &mut Vec<Step<'a>>) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else { return };
    for (key, value) in patch {
        path.push(Step::Key(key));
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(inner) => {
                let slot = target.entry(key.clone()).or_insert(Value::Null);
                merge_object(slot, inner, path);
            }
            Value::Array(items) => match merge_key(path) {
                Some(strategy) => {
                    let slot = target.entry(key.clone()).or_insert(Value::Array(Vec::new()));
                    merge_list(slot, items, strategy, path);
                }
                None => {
                    target.insert(key.clone(), value.clone());
                }
            },
            scalar => {
                target.insert(key.clone(), scalar.clone());
            }
        }
        path.pop();
    }
}

fn merge_list<'a>(
    target: &mut Value,
    items: &'a [Value],
    strategy: ListStrategy,
    path: &mut Vec<Step<'a>>,
) {
    if !target.is_array() {
        *target = Value::Array(Vec::new());
    }
    let Value::Array(existing) = target else { return };
    match strategy {
        ListStrategy::Set => {
            for item in items {
                if !existing.contains(item) {
                    existing.push(item.clone());
                }
            }
        }
        ListStrategy::ByKey(key) => {
            path.push(Step::Item);
            for item in items {
                let Value::Object(patch_item) = item else { continue };
                let wanted = patch_item.get(key);
                let found = existing
                    .iter_mut()
                    .find(|e| e.as_object().and_then(|o| o.get(key)) == wanted && wanted.is_some());
                match found {
                    Some(slot) => merge_object(slot, patch_item, path),
                    None => {
                        let mut fresh = Value::Object(Map::new());
                        merge_object(&mut fresh, patch_item, path);
                        existing.push(fresh);
                    }
                }
            }
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(value: Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    fn apply(patch: Value, to: Value) -> Value {
        let patch = StrategicPatch::compile(&patch).unwrap().unwrap();
        serde_json::to_value(patch.apply(&pod(to)).unwrap()).unwrap()
    }

    #[test]
    fn merge_table() {
        let base = json!({
            "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {
                "containers": [
                    {"name": "main", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                    {"name": "side", "image": "side:1"}
                ],
                "tolerations": [{"key": "t1", "operator": "Exists"}],
                "nodeSelector": {"zone": "a"}
            }
        });
        // (case, patch, JSON pointer, expected value there)
        let cases = [
            (
                "label added",
                json!({"metadata": {"labels": {"c": "3"}}}),
                "/metadata/labels",
                json!({"a": "1", "b": "2", "c": "3"}),
            ),
            (
                "null deletes",
                json!({"metadata": {"labels": {"a": null}}}),
                "/metadata/labels",
                json!({"b": "2"}),
            ),
            (
                "scalar replaced",
                json!({"spec": {"nodeSelector": {"zone": "b"}}}),
                "/spec/nodeSelector/zone",
                json!("b"),
            ),
            (
                "container merged by name",
                json!({"spec": {"containers": [{"name": "side", "image": "side:2"}]}}),
                "/spec/containers",
                json!([
                    {"name": "main", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                    {"name": "side", "image": "side:2"}
                ]),
            ),
            (
                "container appended",
                json!({"spec": {"containers": [{"name": "new", "image": "n:1"}]}}),
                "/spec/containers/2",
                json!({"name": "new", "image": "n:1"}),
            ),
            (
                "env merged by name inside a container",
                json!({"spec": {"containers": [{"name": "main", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}]}}),
                "/spec/containers/0/env",
                json!([{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]),
            ),
            (
                "other lists replaced",
                json!({"spec": {"tolerations": [{"key": "t2", "operator": "Exists"}]}}),
                "/spec/tolerations",
                json!([{"key": "t2", "operator": "Exists"}]),
            ),
            (
                "finalizers merged as a set",
                json!({"metadata": {"finalizers": ["x", "y"]}}),
                "/metadata/finalizers",
                json!(["x", "y"]),
            ),
            (
                "new object created",
                json!({"spec": {"affinity": {"nodeAffinity": {}}}}),
                "/spec/affinity",
                json!({"nodeAffinity": {}}),
            ),
        ];
        for (case, patch, pointer, expected) in cases {
            let got = apply(patch, base.clone());
            assert_eq!(got.pointer(pointer), Some(&expected), "{case}: {got:#}");
        }
    }

    #[test]
    fn applying_twice_is_applying_once() {
        let base = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main"}]}});
        let patch = json!({
            "metadata": {"labels": {"x": "1"}, "finalizers": ["f"]},
            "spec": {"containers": [{"name": "main", "env": [{"name": "A", "value": "1"}]}, {"name": "side"}]}
        });
        let once = apply(patch.clone(), base);
        assert_eq!(apply(patch, once.clone()), once);
    }

    #[test]
    fn refused_patches() {
        let cases = [
            (json!("x"), "spec.patch: must be a JSON object (a partial Pod), found a string"),
            (json!([1]), "spec.patch: must be a JSON object (a partial Pod), found a list"),
            (
                json!({"spec": {"$retainKeys": ["a"]}}),
                "spec.patch.spec: the directive \"$retainKeys\" is not supported",
            ),
            (
                json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
                "spec.patch.spec.containers[*]: the directive \"$patch\" is not supported",
            ),
            (
                json!({"spec": {"containers": [{"image": "x"}]}}),
                "spec.patch.spec.containers: every item must be an object with a \"name\" field to merge by",
            ),
            (
                json!({"spec": {"priority": "high"}}),
                "spec.patch: the patched pod is not a valid Pod: spec.priority: invalid type",
            ),
        ];
        for (patch, expected) in cases {
            let err = StrategicPatch::compile(&patch).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{patch}: {err}");
        }
        assert_eq!(StrategicPatch::compile(&Value::Null), Ok(None));
    }
}
