//! The `kolo` binary.
fn main() {}
