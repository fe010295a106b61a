//! A watcher's events as plain applies and deletes.
//!
//! kube-runtime's watcher relists after a watch is lost (an API server
//! restart, a `410 Gone`): `Init`, the current objects as `InitApply`, then
//! `InitDone`. Objects deleted while the watch was down never get a
//! `Delete`; they are simply missing from the relist. [`Mirror`] remembers
//! which keys it has passed on and, at `InitDone`, emits a delete for each
//! one the relist did not contain, so a consumer that only understands
//! "apply" and "delete" (the scheduler's cache) neither loses deletes nor
//! sees duplicates it cannot absorb (an apply of an unchanged object is a
//! no-op for it).

use std::collections::HashSet;

use kube::ResourceExt;
use kube::runtime::watcher::Event;

/// One change to pass on.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<K> {
    /// Added or updated.
    Apply(K),
    /// Deleted; the key is `namespace/name` (or `name` when cluster-scoped).
    Delete(String),
    /// A (re)list finished: every current object has been applied.
    Synced,
}

/// The key of an object, as [`Change::Delete`] names it.
pub fn key<K: ResourceExt>(object: &K) -> String {
    match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// The keys passed on so far, and the relist in progress.
#[derive(Debug, Default)]
pub struct Mirror {
    known: HashSet<String>,
    listing: Option<HashSet<String>>,
}

impl Mirror {
    /// A mirror that has passed nothing on yet.
    pub fn new() -> Mirror {
        Mirror::default()
    }

    /// The changes one watcher event stands for.
    pub fn handle<K: ResourceExt>(&mut self, event: Event<K>) -> Vec<Change<K>> {
        match event {
            Event::Init => {
                self.listing = Some(HashSet::new());
                Vec::new()
            }
            Event::InitApply(object) => {
                let k = key(&object);
                self.listing.get_or_insert_with(HashSet::new).insert(k.clone());
                self.known.insert(k);
                vec![Change::Apply(object)]
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let mut gone: Vec<String> =
                    self.known.iter().filter(|k| !listed.contains(*k)).cloned().collect();
                gone.sort();
                self.known = listed;
                let mut changes: Vec<Change<K>> = gone.into_iter().map(Change::Delete).collect();
                changes.push(Change::Synced);
                changes
            }
            Event::Apply(object) => {
                self.known.insert(key(&object));
                vec![Change::Apply(object)]
            }
            Event::Delete(object) => {
                let k = key(&object);
                self.known.remove(&k);
                vec![Change::Delete(k)]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn cm(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn describe(changes: Vec<Change<ConfigMap>>) -> Vec<String> {
        changes
            .into_iter()
            .map(|c| match c {
                Change::Apply(o) => format!("apply {}", key(&o)),
                Change::Delete(k) => format!("delete {k}"),
                Change::Synced => "synced".into(),
            })
            .collect()
    }

    #[test]
    fn relists_turn_missing_objects_into_deletes() {
        // (event, changes it must produce), in order, through two relists.
        let steps: Vec<(Event<ConfigMap>, Vec<&str>)> = vec![
            (Event::Init, vec![]),
            (Event::InitApply(cm("a")), vec!["apply ns/a"]),
            (Event::InitApply(cm("b")), vec!["apply ns/b"]),
            (Event::InitDone, vec!["synced"]),
            (Event::Apply(cm("c")), vec!["apply ns/c"]),
            (Event::Delete(cm("a")), vec!["delete ns/a"]),
            // The watch was lost; b was deleted meanwhile, d created.
            (Event::Init, vec![]),
            (Event::InitApply(cm("c")), vec!["apply ns/c"]),
            (Event::InitApply(cm("d")), vec!["apply ns/d"]),
            (Event::InitDone, vec!["delete ns/b", "synced"]),
            (Event::Init, vec![]),
            (Event::InitDone, vec!["delete ns/c", "delete ns/d", "synced"]),
        ];
        let mut mirror = Mirror::new();
        for (i, (event, want)) in steps.into_iter().enumerate() {
            assert_eq!(describe(mirror.handle(event)), want, "step {i}");
        }
    }
}
