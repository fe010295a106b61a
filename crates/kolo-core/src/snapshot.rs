//! snapshot (skeleton)
