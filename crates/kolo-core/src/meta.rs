//! The object metadata pod and node views share: [`Meta`] (UID, labels,
//! annotations, creation time) read once from `metadata`, and the
//! [`HasMeta`] accessors both [`PodView`](crate::pod::PodView) and
//! [`NodeView`](crate::node::NodeView) get from it.
//!
//! Names stay with each view: a pod's namespace and name are slices of its
//! shared `namespace/name` key, a node has only a name.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

/// The annotation kolo does not keep: `kubectl apply` stores the whole
/// manifest in it (often kilobytes per object), and no algorithm reads it.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A compact, sorted, read-only string map for labels and annotations.
///
/// A boxed slice of boxed strings: 16 bytes inline and no spare capacity,
/// against 24 for a `BTreeMap` plus its node overhead. Look-ups are binary
/// searches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap(Box<[(Box<str>, Box<str>)]>);

impl StringMap {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok().map(|i| &*self.0[i].1)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Copies a Kubernetes map, leaving out the keys `skip` rejects.
    pub(crate) fn from_map(
        map: Option<&BTreeMap<String, String>>,
        skip: impl Fn(&str) -> bool,
    ) -> StringMap {
        let Some(map) = map else {
            return StringMap::default();
        };
        // A BTreeMap iterates in key order, so the slice is already sorted.
        StringMap(
            map.iter()
                .filter(|(k, _)| !skip(k))
                .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
                .collect(),
        )
    }
}

impl<K: Into<Box<str>>, V: Into<Box<str>>> FromIterator<(K, V)> for StringMap {
    /// Later entries for the same key replace earlier ones.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let map: BTreeMap<Box<str>, Box<str>> =
            iter.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        StringMap(map.into_iter().collect())
    }
}

/// The metadata a view keeps of an object, besides its name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub(crate) uid: Box<str>,
    pub(crate) labels: StringMap,
    pub(crate) annotations: StringMap,
    pub(crate) creation_timestamp: Option<Timestamp>,
}

impl Meta {
    /// Reads `metadata`: every label, every annotation but
    /// [`LAST_APPLIED`], the UID (empty if none) and the creation time.
    pub fn from_object_meta(meta: &ObjectMeta) -> Meta {
        Meta {
            uid: meta.uid.as_deref().unwrap_or_default().into(),
            labels: StringMap::from_map(meta.labels.as_ref(), |_| false),
            annotations: StringMap::from_map(meta.annotations.as_ref(), |k| k == LAST_APPLIED),
            creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
        }
    }
}

/// The metadata accessors of a view, written once for pods and nodes.
pub trait HasMeta {
    /// The view's metadata.
    fn meta(&self) -> &Meta;

    /// `metadata.uid` (empty if the object had none).
    fn uid(&self) -> &str {
        &self.meta().uid
    }

    /// `metadata.labels`.
    fn labels(&self) -> &StringMap {
        &self.meta().labels
    }

    /// The value of label `key`.
    fn label(&self, key: &str) -> Option<&str> {
        self.meta().labels.get(key)
    }

    /// `metadata.annotations`, without `last-applied-configuration`.
    fn annotations(&self) -> &StringMap {
        &self.meta().annotations
    }

    /// The value of annotation `key`.
    fn annotation(&self, key: &str) -> Option<&str> {
        self.meta().annotations.get(key)
    }

    /// `metadata.creationTimestamp`.
    fn creation_timestamp(&self) -> Option<Timestamp> {
        self.meta().creation_timestamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Object(Meta);

    impl HasMeta for Object {
        fn meta(&self) -> &Meta {
            &self.0
        }
    }

    #[test]
    fn reads_metadata_without_last_applied() {
        let map = |pairs: &[(&str, &str)]| {
            Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        let at = Timestamp::from_second(1_700_000_000).unwrap();
        let kube = ObjectMeta {
            uid: Some("u-1".into()),
            labels: map(&[("b", "2"), (LAST_APPLIED, "kept as a label")]),
            annotations: map(&[(LAST_APPLIED, "{...}"), ("note", "kept")]),
            creation_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at)),
            ..ObjectMeta::default()
        };
        let o = Object(Meta::from_object_meta(&kube));
        assert_eq!(o.uid(), "u-1");
        assert_eq!(o.labels().len(), 2);
        assert_eq!(o.label(LAST_APPLIED), Some("kept as a label"));
        assert_eq!(o.annotations().iter().collect::<Vec<_>>(), [("note", "kept")]);
        assert_eq!(o.annotation(LAST_APPLIED), None);
        assert_eq!(o.creation_timestamp(), Some(at));

        let empty = Object(Meta::from_object_meta(&ObjectMeta::default()));
        assert_eq!(empty.uid(), "");
        assert!(empty.labels().is_empty() && empty.annotations().is_empty());
        assert_eq!(empty.creation_timestamp(), None);
    }

    #[test]
    fn string_map_sorts_and_last_wins() {
        let m: StringMap = [("b", "2"), ("a", "1"), ("b", "3")].into_iter().collect();
        assert_eq!(m.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "3")]);
        assert!(m.contains_key("a") && !m.contains_key("c"));
        assert_eq!(m.get("b"), Some("3"));
    }
}
