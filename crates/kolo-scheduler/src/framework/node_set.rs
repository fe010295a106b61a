//! A set of nodes by [`NodeId`]: one bit per id.

use super::NodeId;

/// A set of node ids, one bit each: the nodes a plugin rejected a pod on,
/// or the nodes a round of cluster events was about. Ids are small and
/// dense (the cache hands them out in order), so a 5,000-node set is 625
/// bytes and testing whether two sets meet is a few dozen word operations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeSet {
    words: Vec<u64>,
}

impl NodeSet {
    /// The empty set.
    pub fn new() -> NodeSet {
        NodeSet::default()
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: NodeId) {
        let (word, bit) = (id.index() / 64, id.index() % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << bit;
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: NodeId) -> bool {
        let (word, bit) = (id.index() / 64, id.index() % 64);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Whether the two sets share a node.
    pub fn intersects(&self, other: &NodeSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Empties the set (keeping its memory).
    pub fn clear(&mut self) {
        self.words.clear();
    }
}

impl FromIterator<NodeId> for NodeSet {
    fn from_iter<I: IntoIterator<Item = NodeId>>(ids: I) -> NodeSet {
        let mut set = NodeSet::new();
        for id in ids {
            set.insert(id);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Membership and intersection agree with a plain list of ids.
        #[test]
        fn agrees_with_a_list(a in proptest::collection::vec(0u32..300, 0..20),
                              b in proptest::collection::vec(0u32..300, 0..20),
                              probe in 0u32..400) {
            let set_a: NodeSet = a.iter().map(|&i| NodeId(i)).collect();
            let set_b: NodeSet = b.iter().map(|&i| NodeId(i)).collect();
            prop_assert_eq!(set_a.contains(NodeId(probe)), a.contains(&probe));
            prop_assert_eq!(set_a.intersects(&set_b), a.iter().any(|i| b.contains(i)));
            prop_assert_eq!(set_a.is_empty(), a.is_empty());
        }
    }
}
