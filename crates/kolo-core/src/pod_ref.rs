//! [`PodRef`]: which pod — its namespace, name and UID — and nothing else.
//!
//! The one way kolo names a pod outside a [`PodView`](crate::pod::PodView):
//! in the scheduler's Events, and as the identity of the pods the agent
//! manages.

use std::fmt;

/// A pod's identity: `metadata.namespace`, `metadata.name`,
/// `metadata.uid`. Displays as `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PodRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (empty when unknown).
    pub uid: String,
}

impl PodRef {
    /// The pod `namespace/name` with `uid`.
    pub fn new(namespace: &str, name: &str, uid: &str) -> PodRef {
        PodRef { namespace: namespace.into(), name: name.into(), uid: uid.into() }
    }

    /// From a `namespace/name` key and a UID; a key without `/` names a pod
    /// of namespace `default`.
    pub fn from_key(key: &str, uid: &str) -> PodRef {
        let (namespace, name) = key.split_once('/').unwrap_or(("default", key));
        PodRef::new(namespace, name, uid)
    }

    /// `namespace/name`, the key NodeMetric's `podsMetric` and
    /// [`PodView::key`](crate::pod::PodView::key) use.
    pub fn key(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_key_and_display() {
        // key, uid → namespace, name, displayed
        let cases = [
            ("prod/web-0", "u1", "prod", "web-0", "prod/web-0"),
            ("web-0", "", "default", "web-0", "default/web-0"),
            ("a/b/c", "u", "a", "b/c", "a/b/c"),
            ("/x", "u", "", "x", "/x"),
        ];
        for (key, uid, namespace, name, shown) in cases {
            let p = PodRef::from_key(key, uid);
            assert_eq!(
                (p.namespace.as_str(), p.name.as_str(), p.uid.as_str()),
                (namespace, name, uid)
            );
            assert_eq!(p.to_string(), shown, "{key}");
            assert_eq!(p.key(), shown, "{key}");
        }
    }
}
