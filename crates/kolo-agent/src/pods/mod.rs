//! Skeleton: filled in by the pods work.
