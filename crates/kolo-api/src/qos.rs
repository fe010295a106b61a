//! kolo QoS classes (SKELETON signatures; implementation follows).
use k8s_openapi::api::core::v1::Pod;

/// A kolo (Koordinator) QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QoSClass {
    /// Latency-sensitive exclusive.
    LSE,
    /// Latency-sensitive reserved.
    LSR,
    /// Latency-sensitive.
    LS,
    /// Best effort.
    BE,
    /// System.
    System,
    /// No class.
    None,
}

/// The pod's QoS class "with default" (spec §0.2), Katalyst annotation included.
pub fn resolve_qos(_pod: &Pod) -> QoSClass {
    todo!()
}
