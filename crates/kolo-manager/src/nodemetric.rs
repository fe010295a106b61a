//! The NodeMetric spec of each node.
