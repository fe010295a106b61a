//! Skeleton: filled in by the collect work.
