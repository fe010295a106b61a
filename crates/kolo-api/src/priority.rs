//! Koordinator priority classes (SKELETON signatures; implementation follows).
use k8s_openapi::api::core::v1::Pod;

/// A Koordinator priority class: which resource tier a pod uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PriorityClass {
    /// No class.
    None,
    /// `koord-free`.
    Free,
    /// `koord-batch`.
    Batch,
    /// `koord-mid`.
    Mid,
    /// `koord-prod`.
    Prod,
}

/// The pod's priority class "with default" (spec §0.2).
pub fn resolve_priority(_pod: &Pod) -> PriorityClass {
    todo!()
}
