//! clock (skeleton)
