//! The NodeSLO spec of each node.
