//! resources (skeleton)
