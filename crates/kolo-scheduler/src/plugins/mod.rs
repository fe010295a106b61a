//! The in-tree plugins, one module each.

pub mod load_aware;
pub mod node_numa_resource;
