//! Skeleton: filled in by the cgroup work.
