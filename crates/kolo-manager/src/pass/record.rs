//! What the manager remembers about a node from one pass to the next.

use kolo_core::clock::Timestamp;

/// The pass's bookkeeping for one node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeRecord {
    /// When this manager last wrote the node's batch / mid status
    /// successfully (`None`: never): the update throttle counts from here
    /// ([`update_needed`](crate::noderesource::update_needed)).
    pub last_status_update: Option<Timestamp>,
}

impl NodeRecord {
    /// The node's status was written at `now`. Only a write that succeeded
    /// counts: one that failed is retried by the next pass as if it had
    /// never been decided.
    pub fn status_written(&mut self, now: Timestamp) {
        self.last_status_update = Some(now);
    }
}
