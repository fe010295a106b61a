//! Per-pod scratch space shared by the extension points of one scheduling
//! cycle.

use std::any::{Any, TypeId};

/// Data plugins compute once per pod (in PreFilter or PreScore) and read for
/// every node. Keyed by type: each plugin defines its own state type, so
/// plugins cannot read or clobber each other's state by accident.
///
/// Plugins look their state up once per batch of nodes, not once per node,
/// so a linear search over a handful of entries is the fastest map here.
#[derive(Default)]
pub struct CycleState {
    entries: Vec<(TypeId, Box<dyn Any + Send + Sync>)>,
}

impl CycleState {
    /// An empty state.
    pub fn new() -> CycleState {
        CycleState::default()
    }

    /// Stores `value`, replacing an earlier value of the same type.
    pub fn write<T: Any + Send + Sync>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        match self.entries.iter_mut().find(|(t, _)| *t == id) {
            Some(entry) => entry.1 = Box::new(value),
            None => self.entries.push((id, Box::new(value))),
        }
    }

    /// The stored value of type `T`, if any.
    pub fn read<T: Any + Send + Sync>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.entries.iter().find(|(t, _)| *t == id).and_then(|(_, v)| v.downcast_ref())
    }

    /// The stored value of type `T`, or else `compute()`, kept in `slot`
    /// (for a plugin called outside a full cycle, whose PreFilter did not
    /// run). Plugins call it once per batch of nodes.
    pub fn read_or<'a, T: Any + Send + Sync>(
        &'a self,
        slot: &'a mut Option<T>,
        compute: impl FnOnce() -> T,
    ) -> &'a T {
        match self.read::<T>() {
            Some(value) => value,
            None => slot.insert(compute()),
        }
    }

    /// Removes everything (the state is reused from pod to pod).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

impl std::fmt::Debug for CycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleState").field("entries", &self.entries.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_keyed_by_type() {
        #[derive(Debug, PartialEq)]
        struct A(u32);
        #[derive(Debug, PartialEq)]
        struct B(&'static str);
        let mut state = CycleState::new();
        assert_eq!(state.read::<A>(), None);
        state.write(A(1));
        state.write(B("x"));
        state.write(A(2));
        assert_eq!(state.read::<A>(), Some(&A(2)));
        assert_eq!(state.read::<B>(), Some(&B("x")));
        state.clear();
        assert_eq!(state.read::<B>(), None);
    }
}
