//! PrioritySort: the queue order. Higher koord priority first (the pod's
//! `spec.priority`, or its priority class's default value — spec §0.2),
//! then older pods first.

use std::sync::Arc;

use crate::framework::{ExtensionPoints, Plugin, PodInfo, QueueKey, QueueSort};
use crate::registry::PluginArgsError;
use kolo_core::HasMeta;

/// The plugin's registered name.
pub const NAME: &str = "PrioritySort";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct PrioritySort;

impl PrioritySort {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(PrioritySort))
    }
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).queue_sort().into()
    }
}

impl QueueSort for PrioritySort {
    fn sort_key(&self, pod: &PodInfo) -> QueueKey {
        let view = pod.view();
        // Pods without a creation time (hand-written ones) go after dated
        // ones of the same priority; arrival order settles the rest.
        let created = view.creation_timestamp().map_or(i64::MAX, |t| {
            t.as_second()
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::from(t.subsec_nanosecond()))
        });
        QueueKey::new(-i64::from(view.priority()), created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn key(yaml: &str) -> QueueKey {
        PrioritySort.sort_key(&PodInfo::new(pod_from_yaml(yaml)).unwrap())
    }

    #[test]
    fn priority_then_age() {
        let prod_old = key(
            "metadata: {name: a, creationTimestamp: '2026-01-01T00:00:00Z', labels: {koordinator.sh/priority-class: koord-prod}}",
        );
        let prod_new = key(
            "metadata: {name: b, creationTimestamp: '2026-01-02T00:00:00Z'}\nspec: {priority: 9500, containers: []}",
        );
        let batch = key(
            "metadata: {name: c, creationTimestamp: '2025-01-01T00:00:00Z', labels: {koordinator.sh/priority-class: koord-batch}}",
        );
        // An empty pod is BE, hence koord-batch at its default 5500.
        let empty = key("metadata: {name: d}");
        let explicit = key("metadata: {name: e}\nspec: {priority: 9999, containers: []}");
        assert_eq!(prod_old.priority, -9500);
        assert_eq!(batch.priority, -5500);
        assert_eq!(empty.priority, -5500);
        let mut keys = [batch, empty, prod_new, explicit, prod_old];
        keys.sort();
        assert_eq!(keys, [explicit, prod_old, prod_new, batch, empty]);
    }
}
