//! Last-good store (skeleton).

/// Placeholder.
pub struct SloConfig;
/// Placeholder.
pub struct SloConfigStore;
/// Placeholder.
pub struct ConfigStatus;
