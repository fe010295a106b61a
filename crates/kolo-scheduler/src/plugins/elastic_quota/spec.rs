//! One `ElasticQuota` object read into what the quota tree needs (spec
//! §7.1): min, max, shared weight, parent, lending, the namespaces that map
//! to it. A malformed object is refused with an error naming the quota and
//! the field; nothing of it is used.

use std::collections::BTreeMap;

use super::names;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kolo_api::crd::ElasticQuota;
use kolo_core::resources::{ResourceSet, ResourceVector};

/// Why a quota object (or a change to the tree) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ElasticQuota {quota}: {field}: {message}")]
pub struct QuotaError {
    /// The quota's name.
    pub quota: String,
    /// The offending field (`spec.min`, a label or annotation name...).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl QuotaError {
    /// An error about `field` of `quota`.
    pub fn new(quota: &str, field: &str, message: impl Into<String>) -> QuotaError {
        QuotaError { quota: quota.to_string(), field: field.to_string(), message: message.into() }
    }
}

/// A quota as the tree uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaSpec {
    /// `metadata.name` (quota names are unique across namespaces).
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// The parent's name; [`names::ROOT_QUOTA`] when the label is empty or
    /// absent.
    pub parent: String,
    /// `is-parent: "true"`.
    pub is_parent: bool,
    /// `spec.min` (cpu in milli-cores, the rest in units).
    pub min: ResourceVector,
    /// `spec.max`.
    pub max: ResourceVector,
    /// The shared weight: the annotation, or `max` when it is absent or all
    /// zero.
    pub weight: ResourceVector,
    /// `allow-lent-resource` (only `"false"` turns it off).
    pub lend: bool,
    /// The `namespaces` annotation.
    pub namespaces: Vec<String>,
}

impl QuotaSpec {
    /// Reads and validates one object: quantities parse, nothing is
    /// negative, every min key is in max and min ≤ max, the annotations are
    /// well-formed JSON.
    pub fn from_object(quota: &ElasticQuota) -> Result<QuotaSpec, QuotaError> {
        let meta = &quota.metadata;
        let name = meta.name.clone().unwrap_or_default();
        if name.is_empty() {
            return Err(QuotaError::new("(unnamed)", "metadata.name", "must not be empty"));
        }
        let label = |key: &str| meta.labels.as_ref().and_then(|m| m.get(key)).map(String::as_str);
        let annotation =
            |key: &str| meta.annotations.as_ref().and_then(|m| m.get(key)).map(String::as_str);
        let min = read_list(&name, "spec.min", quota.spec.min.as_ref())?;
        let max = read_list(&name, "spec.max", quota.spec.max.as_ref())?;
        check_min_max(&name, &min, &max)?;
        let weight = match annotation(names::SHARED_WEIGHT) {
            None => max,
            Some(text) => {
                let list: BTreeMap<String, Quantity> = serde_json::from_str(text).map_err(|e| {
                    QuotaError::new(
                        &name,
                        names::SHARED_WEIGHT,
                        format!("not a JSON resource list: {e}"),
                    )
                })?;
                let weight = read_list(&name, names::SHARED_WEIGHT, Some(&list))?;
                if weight.is_zero() { max } else { weight }
            }
        };
        let namespaces = match annotation(names::NAMESPACES) {
            None => Vec::new(),
            Some(text) => serde_json::from_str(text).map_err(|e| {
                QuotaError::new(&name, names::NAMESPACES, format!("not a JSON list of names: {e}"))
            })?,
        };
        let parent = match label(names::PARENT) {
            None | Some("") => names::ROOT_QUOTA.to_string(),
            Some(parent) => parent.to_string(),
        };
        if parent == name {
            return Err(QuotaError::new(&name, names::PARENT, "a quota cannot be its own parent"));
        }
        Ok(QuotaSpec {
            namespace: meta.namespace.clone().unwrap_or_default(),
            parent,
            is_parent: label(names::IS_PARENT) == Some("true"),
            min,
            max,
            weight,
            lend: label(names::ALLOW_LENT_RESOURCE) != Some("false"),
            namespaces,
            name,
        })
    }

    /// The resources `max` names: pod requests and the runtime are masked
    /// to them.
    pub fn max_keys(&self) -> ResourceSet {
        self.max.names()
    }
}

/// A resource list as a vector, refusing malformed and negative amounts.
fn read_list(
    quota: &str,
    field: &str,
    list: Option<&BTreeMap<String, Quantity>>,
) -> Result<ResourceVector, QuotaError> {
    let Some(list) = list else { return Ok(ResourceVector::EMPTY) };
    // `from_resource_list` refuses negative amounts, naming the resource.
    ResourceVector::from_resource_list(list)
        .map_err(|e| QuotaError::new(quota, field, e.to_string()))
}

/// Every min key must be in max, with min ≤ max.
fn check_min_max(
    quota: &str,
    min: &ResourceVector,
    max: &ResourceVector,
) -> Result<(), QuotaError> {
    for (name, amount) in min.iter() {
        match max.get(name) {
            None => {
                return Err(QuotaError::new(
                    quota,
                    "spec.min",
                    format!("{} is not in spec.max", name.as_str()),
                ));
            }
            Some(limit) if amount > limit => {
                return Err(QuotaError::new(
                    quota,
                    "spec.min",
                    format!("{} min {amount} is greater than max {limit}", name.as_str()),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Builds quota objects for tests.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use kolo_api::crd::{ElasticQuota, ElasticQuotaSpec};

    fn list(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
        Some(pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect())
    }

    /// A quota `name` in namespace `ns` with these min and max, labels and
    /// annotations.
    pub fn object(
        name: &str,
        ns: &str,
        min: &[(&str, &str)],
        max: &[(&str, &str)],
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) -> ElasticQuota {
        let mut q = ElasticQuota::new(name, ElasticQuotaSpec { min: list(min), max: list(max) });
        q.metadata.namespace = Some(ns.to_string());
        let map = |pairs: &[(&str, &str)]| {
            Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        q.metadata.labels = map(labels);
        q.metadata.annotations = map(annotations);
        q
    }
}

#[cfg(test)]
mod tests {
    use super::testing::object;
    use super::*;

    #[test]
    fn shared_weight_defaults_to_max() {
        let max = [("cpu", "10"), ("memory", "1Gi")];
        let read = |annotations: &[(&str, &str)]| {
            QuotaSpec::from_object(&object("q", "ns", &[], &max, &[], annotations)).unwrap().weight
        };
        let max_vector = ResourceVector::cpu_memory(10_000, 1 << 30);
        assert_eq!(read(&[]), max_vector);
        assert_eq!(read(&[(names::SHARED_WEIGHT, r#"{"cpu":"0","memory":"0"}"#)]), max_vector);
        assert_eq!(
            read(&[(names::SHARED_WEIGHT, r#"{"cpu":"3"}"#)]),
            ResourceVector::EMPTY.with(kolo_core::resources::ResourceName::Cpu, 3_000)
        );
    }

    #[test]
    fn labels_and_annotations_are_read() {
        let labels = [
            (names::PARENT, "p"),
            (names::IS_PARENT, "true"),
            (names::ALLOW_LENT_RESOURCE, "false"),
        ];
        let annotations = [(names::NAMESPACES, r#"["a","b"]"#)];
        let spec =
            QuotaSpec::from_object(&object("q", "ns", &[], &[], &labels, &annotations)).unwrap();
        assert_eq!((spec.parent.as_str(), spec.is_parent, spec.lend), ("p", true, false));
        assert_eq!(spec.namespaces, ["a", "b"]);
        // Empty parent label: the root; lending is on unless "false".
        let labels = [(names::PARENT, ""), (names::ALLOW_LENT_RESOURCE, "no")];
        let spec = QuotaSpec::from_object(&object("q", "ns", &[], &[], &labels, &[])).unwrap();
        assert_eq!(
            (spec.parent.as_str(), spec.is_parent, spec.lend),
            (names::ROOT_QUOTA, false, true)
        );
    }

    #[test]
    fn malformed_quotas_name_the_quota_and_field() {
        let cases: Vec<(ElasticQuota, &str, &str)> = vec![
            (
                object("q", "ns", &[("cpu", "-1")], &[("cpu", "2")], &[], &[]),
                "spec.min",
                "resource \"cpu\": negative quantity",
            ),
            (
                object("q", "ns", &[], &[("memory", "-1Gi")], &[], &[]),
                "spec.max",
                "resource \"memory\": negative quantity",
            ),
            (
                object("q", "ns", &[("cpu", "3")], &[("cpu", "2")], &[], &[]),
                "spec.min",
                "cpu min 3000 is greater than max 2000",
            ),
            (
                object("q", "ns", &[("memory", "1")], &[("cpu", "2")], &[], &[]),
                "spec.min",
                "memory is not in spec.max",
            ),
            (object("q", "ns", &[], &[("cpu", "lots")], &[], &[]), "spec.max", "cpu"),
            (
                object("q", "ns", &[], &[], &[], &[(names::SHARED_WEIGHT, "{cpu")]),
                names::SHARED_WEIGHT,
                "not a JSON",
            ),
            (
                object("q", "ns", &[], &[], &[], &[(names::NAMESPACES, "a,b")]),
                names::NAMESPACES,
                "not a JSON",
            ),
            (
                object("q", "ns", &[], &[], &[(names::PARENT, "q")], &[]),
                names::PARENT,
                "its own parent",
            ),
        ];
        for (object, field, text) in cases {
            let err = QuotaSpec::from_object(&object).unwrap_err();
            assert_eq!((err.quota.as_str(), err.field.as_str()), ("q", field), "{err}");
            assert!(err.message.contains(text), "{err}");
            assert!(err.to_string().starts_with(&format!("ElasticQuota q: {field}: ")), "{err}");
        }
    }
}
