//! NodeMetric status builder. (Skeleton.)
