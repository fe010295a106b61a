//! Skeleton: filled in by the collect work.

/// Pod and container CPU, memory and PSI from cgroups.
pub mod pod;
