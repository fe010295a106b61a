//! A plugin's own state per node, indexed by [`NodeId`].

use super::NodeId;

/// A plugin's state for each node it has seen, in a vector indexed by node
/// id: a Filter or Score lookup is an array access. Slots are created on
/// first use and emptied when the node goes away.
#[derive(Debug)]
pub struct PerNode<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for PerNode<T> {
    fn default() -> PerNode<T> {
        PerNode { slots: Vec::new() }
    }
}

impl<T> PerNode<T> {
    /// No node yet.
    pub fn new() -> PerNode<T> {
        PerNode::default()
    }

    /// The node's state, if it has any.
    pub fn get(&self, id: NodeId) -> Option<&T> {
        self.slots.get(id.index()).and_then(Option::as_ref)
    }

    /// The node's state, mutably, if it has any.
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut T> {
        self.slots.get_mut(id.index()).and_then(Option::as_mut)
    }

    /// The node's state, created with `create` if it has none.
    pub fn get_or_insert_with(&mut self, id: NodeId, create: impl FnOnce() -> T) -> &mut T {
        let i = id.index();
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i].get_or_insert_with(create)
    }

    /// Forgets the node's state.
    pub fn remove(&mut self, id: NodeId) {
        if let Some(slot) = self.slots.get_mut(id.index()) {
            *slot = None;
        }
    }

    /// Every slot by node id (`None` for nodes without state), for passes
    /// over all nodes (in parallel, say).
    pub fn slots_mut(&mut self) -> &mut [Option<T>] {
        &mut self.slots
    }
}
