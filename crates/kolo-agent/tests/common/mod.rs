//! The real-cgroup sandbox lives in the library (`kolo_agent::sandbox`) so
//! `kolo bench agent-overhead` and the CLI tests use it too.

pub use kolo_agent::sandbox::*;
