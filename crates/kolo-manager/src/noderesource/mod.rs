//! Batch and mid allocatable. (Skeleton: filled in by the noderesource work.)
