//! What-if runs of the manager's decisions on a cluster snapshot: nothing is
//! written anywhere. The `kolo noderesource` and `kolo nodeslo` commands are
//! thin wiring around these.

pub mod admission;
mod config_source;
pub mod noderesource;
pub mod nodeslo;

pub use self::config_source::{
    FindConfigError, FoundConfig, NodeSelection, UnknownNode, find_config,
};
