//! The RFC 6902 JSON Patch the API server applies to the request's pod.
//!
//! Both pods are serialized through the same `k8s-openapi` `Pod` type and
//! diffed, so representation differences between the raw request JSON and
//! the typed pod (field order, empty objects the type drops) never turn into
//! patch operations: only what mutation changed does. Keys are escaped as
//! JSON pointers require (`koordinator.sh/qosClass` is
//! `/metadata/labels/koordinator.sh~1qosClass`).

use k8s_openapi::api::core::v1::Pod;

/// Why a patch could not be built.
#[derive(Debug, thiserror::Error)]
#[error("serializing the pod for the JSON patch: {0}")]
pub struct PatchError(#[from] serde_json::Error);

/// The patch that turns `original` into `mutated`.
pub fn json_patch(original: &Pod, mutated: &Pod) -> Result<json_patch::Patch, PatchError> {
    let original = serde_json::to_value(original)?;
    let mutated = serde_json::to_value(mutated)?;
    Ok(json_patch::diff(&original, &mutated))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_changes_become_operations_and_keys_are_escaped() {
        let original: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        }))
        .unwrap();
        let mut mutated = original.clone();
        mutated
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("koordinator.sh/qosClass".into(), "BE".into());
        let patch = json_patch(&original, &mutated).unwrap();
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/koordinator.sh~1qosClass", "value": "BE"}])
        );
        assert!(json_patch(&original, &original).unwrap().0.is_empty());
    }

    /// The request JSON may carry `{}` / `null` fields the typed pod drops;
    /// the patch still applies to the raw JSON.
    #[test]
    fn applies_to_the_raw_request_json() {
        let raw = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": null, "labels": {}},
            "spec": {"containers": [{"name": "c", "resources": {}}], "nodeSelector": null}
        });
        let original: Pod = serde_json::from_value(raw.clone()).unwrap();
        let mut mutated = original.clone();
        mutated.spec.as_mut().unwrap().scheduler_name = Some("kolo-scheduler".into());
        mutated.metadata.labels.get_or_insert_default().insert("a".into(), "b".into());
        let patch = json_patch(&original, &mutated).unwrap();
        let mut doc = raw;
        json_patch::patch(&mut doc, &patch).unwrap();
        let patched: Pod = serde_json::from_value(doc).unwrap();
        assert_eq!(patched, mutated);
    }
}
