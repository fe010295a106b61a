//! The node agent's cluster side: everything it reads from or writes to the
//! API server, for its own node only.
//!
//! * [`nodemetric`]: writes the NodeMetric `status` the agent computed;
//! * [`nodeslo`]: watches the node's NodeSLO;
//! * [`eviction`]: evicts pods through the Eviction API.

pub mod eviction;
pub mod nodemetric;
pub mod nodeslo;

pub use eviction::{ApiEvictor, EvictionVersion, evict};
pub use nodemetric::NodeMetricWriter;
pub use nodeslo::watch_node_slo;
