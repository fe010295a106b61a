//! Skeleton: filled in by the predictor work.
