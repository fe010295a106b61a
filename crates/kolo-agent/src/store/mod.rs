//! Skeleton: filled in by the store work.
