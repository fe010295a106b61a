//! NodeSLO keys (skeleton).

/// Placeholder.
pub struct SloKeys;
/// Placeholder.
pub struct NodeStrategies;
