//! node (skeleton)
