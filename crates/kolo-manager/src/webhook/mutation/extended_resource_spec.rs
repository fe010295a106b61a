//! The `node.koordinator.sh/extended-resource-spec` pod annotation (spec
//! §4.3): each container's batch requests and limits, which the node agent
//! turns into cgroup settings.
//!
//! The format is Koordinator's:
//! `{"containers":{"<name>":{"limits":{...},"requests":{...}}}}`, containers
//! without batch resources omitted, empty maps omitted, `{}` when no
//! container has any. As in the reference only `spec.containers` count
//! (not init containers or the overhead), and the annotation is written only
//! when its content changes (compared as quantities, so `"1k"` equals
//! `"1000"`).
//!
//! kolo differences: the batch aliases (`koordinator.sh/batch-*`, Katalyst's
//! `reclaimed_*`) are recorded under the canonical `kubernetes.io/batch-*`
//! names, the most preferred spelling winning; an unreadable quantity is left
//! out; an annotation that is not valid JSON is replaced rather than failing
//! the admission (the webhook owns this annotation).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KubeQuantity;
use kolo_api::names::{annotation, resource as names};
use kolo_api::quantity::Quantity;
use serde::{Deserialize, Serialize};

/// The annotation's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtendedResourceSpec {
    /// Per container name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub containers: BTreeMap<String, ExtendedResourceContainerSpec>,
}

/// One container's batch resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtendedResourceContainerSpec {
    /// Limits, by canonical resource name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, Quantity>,
    /// Requests, by canonical resource name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, Quantity>,
}

impl ExtendedResourceSpec {
    /// The spec the pod's containers call for.
    pub fn of_pod(pod: &Pod) -> ExtendedResourceSpec {
        let containers = pod
            .spec
            .iter()
            .flat_map(|spec| &spec.containers)
            .filter_map(|c| Some((c.name.clone(), container_spec(c)?)))
            .collect();
        ExtendedResourceSpec { containers }
    }

    /// The annotation value.
    pub fn to_annotation(&self) -> String {
        // Serializing maps of strings and quantities cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn container_spec(container: &Container) -> Option<ExtendedResourceContainerSpec> {
    let resources = container.resources.as_ref()?;
    let spec = ExtendedResourceContainerSpec {
        limits: batch_only(resources.limits.as_ref()),
        requests: batch_only(resources.requests.as_ref()),
    };
    (!spec.limits.is_empty() || !spec.requests.is_empty()).then_some(spec)
}

fn batch_only(list: Option<&BTreeMap<String, KubeQuantity>>) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let Some(list) = list else { return out };
    for aliases in [names::BATCH_CPU_ALIASES, names::BATCH_MEMORY_ALIASES] {
        let found = aliases.iter().find_map(|a| list.get(*a));
        if let Some(quantity) = found.and_then(|q| Quantity::try_from(q).ok()) {
            out.insert(aliases[0].to_string(), quantity);
        }
    }
    out
}

/// Brings the annotation up to date. Returns whether it changed.
pub fn update_annotation(pod: &mut Pod) -> bool {
    let wanted = ExtendedResourceSpec::of_pod(pod);
    let current =
        pod.metadata.annotations.as_ref().and_then(|a| a.get(annotation::EXTENDED_RESOURCE_SPEC));
    let up_to_date = match current {
        None => wanted.containers.is_empty(),
        Some(text) => serde_json::from_str::<ExtendedResourceSpec>(text).is_ok_and(|c| c == wanted),
    };
    if up_to_date {
        return false;
    }
    pod.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(annotation::EXTENDED_RESOURCE_SPEC.to_string(), wanted.to_annotation());
    true
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn pod(annotation: Option<&str>, containers: Value) -> Pod {
        let mut annotations = serde_json::Map::new();
        if let Some(a) = annotation {
            annotations.insert(annotation::EXTENDED_RESOURCE_SPEC.to_string(), json!(a));
        }
        serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"containers": containers}
        }))
        .unwrap()
    }

    fn annotation_of(pod: &Pod) -> Option<&str> {
        pod.metadata
            .annotations
            .as_ref()?
            .get(annotation::EXTENDED_RESOURCE_SPEC)
            .map(String::as_str)
    }

    #[test]
    fn annotation_table() {
        let batch = json!([
            {"name": "main", "resources": {
                "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi", "cpu": "1"},
                "limits": {"kubernetes.io/batch-cpu": "1k"}
            }},
            {"name": "plain", "resources": {"requests": {"cpu": "1"}}}
        ]);
        let expected = r#"{"containers":{"main":{"limits":{"kubernetes.io/batch-cpu":"1k"},"requests":{"kubernetes.io/batch-cpu":"500","kubernetes.io/batch-memory":"1Gi"}}}}"#;
        // (case, existing annotation, containers, changed, resulting annotation)
        let cases = [
            ("written", None, batch.clone(), true, Some(expected)),
            (
                "equal content is not rewritten",
                Some(expected),
                batch.clone(),
                false,
                Some(expected),
            ),
            (
                "equal quantities in another spelling are not rewritten",
                Some(
                    r#"{"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"0.5k","kubernetes.io/batch-memory":"1073741824"},"limits":{"kubernetes.io/batch-cpu":"1000"}}}}"#,
                ),
                batch.clone(),
                false,
                None,
            ),
            (
                "stale content replaced",
                Some(r#"{"containers":{"old":{}}}"#),
                batch.clone(),
                true,
                Some(expected),
            ),
            ("malformed content replaced", Some("not json"), batch.clone(), true, Some(expected)),
            (
                "no batch resources, no annotation",
                None,
                json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]),
                false,
                None,
            ),
            (
                "no batch resources any more",
                Some(expected),
                json!([{"name": "c"}]),
                true,
                Some("{}"),
            ),
            (
                "aliases recorded under canonical names",
                None,
                json!([{"name": "k", "resources": {"requests": {
                    "resource.katalyst.kubewharf.io/reclaimed_millicpu": "2k",
                    "koordinator.sh/batch-memory": "1Gi"
                }}}]),
                true,
                Some(
                    r#"{"containers":{"k":{"requests":{"kubernetes.io/batch-cpu":"2k","kubernetes.io/batch-memory":"1Gi"}}}}"#,
                ),
            ),
            (
                "unreadable quantity left out",
                None,
                json!([{"name": "c", "resources": {"requests": {"kubernetes.io/batch-cpu": "lots"}}}]),
                false,
                None,
            ),
        ];
        for (case, existing, containers, changed, result) in cases {
            let mut p = pod(existing, containers);
            assert_eq!(update_annotation(&mut p), changed, "{case}");
            let result = result.or(existing);
            assert_eq!(annotation_of(&p), result, "{case}");
        }
    }

    #[test]
    fn init_containers_do_not_count() {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [{"name": "i", "resources": {"requests": {"kubernetes.io/batch-cpu": "1"}}}],
                "containers": [{"name": "c"}]
            }
        }))
        .unwrap();
        assert!(!update_annotation(&mut p));
    }
}
