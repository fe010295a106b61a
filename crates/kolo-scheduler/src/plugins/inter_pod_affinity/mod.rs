//! InterPodAffinity: `spec.affinity.podAffinity` and `podAntiAffinity`, as
//! kube-scheduler's plugin (v1.2x semantics).
//!
//! * **Filter**: for every required affinity term of the pod, some pod it
//!   selects must run in the node's domain (the nodes sharing the node's
//!   value of the term's `topologyKey`) — unless no pod anywhere is
//!   selected and the pod selects itself (the first of a series); no pod
//!   selected by a required anti-affinity term may run in the domain; and
//!   no existing pod whose required anti-affinity selects the incoming pod
//!   may run in the node's domain of that term (symmetry). A node without
//!   the topology key fails affinity and passes anti-affinity.
//! * **Score**: + / − the weight of each preferred affinity / anti-affinity
//!   term per selected pod in the domain, symmetrically for existing pods'
//!   preferred terms selecting the incoming pod, and `hardPodAffinityWeight`
//!   per existing pod's required affinity term selecting it; min–max
//!   normalized to 0..=100.
//!
//! Terms select pods in their `namespaces`, else the pod's own namespace;
//! `namespaceSelector: {}` selects every namespace. A non-empty
//! `namespaceSelector` (the scheduler does not watch Namespace labels),
//! `matchLabelKeys` and `mismatchLabelKeys` refuse the pod at PreFilter,
//! naming the field.
//!
//! [`terms`] compiles terms, [`decide`] holds the pure counting, filter and
//! score maths, [`plugin`] the wiring and per-node state.

pub mod decide;
pub mod plugin;
pub mod terms;

#[cfg(test)]
mod tests;

pub use plugin::{InterPodAffinity, InterPodAffinityArgs, NAME};
