//! pod (skeleton)
