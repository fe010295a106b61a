//! # kolo-descheduler
//!
//! The decisions of kolo's descheduler, as pure functions of (cluster
//! state, configuration, time), shaped like `kolo_scheduler::Scheduler`:
//! a round object holds what the descheduler remembers between rounds
//! (anomaly detectors, migration limiter windows), takes a [`Cluster`] and
//! the time, and returns a plan of [`Action`]s for a driver to carry out.
//!
//! * [`cluster`]: the state a round reads (nodes, pods, usage reports,
//!   PodMigrationJobs, Reservations, workloads);
//! * [`config`]: the `DeschedulerConfiguration` file (profiles, plugins,
//!   args under Koordinator's JSON names);
//! * [`evictor`]: the narrow interface a Balance plugin evicts through;
//! * [`pod_sort`]: the multi-key pod order shared by LowNodeLoad and the
//!   migration arbitration (spec §9.3);
//! * [`low_node_load`]: the LowNodeLoad Balance plugin (spec §9);
//! * [`evictor_filter`]: which pods may be evicted at all;
//! * [`migration`]: the PodMigrationJob controller (spec §10);
//! * [`plan`]: the actions a round asks of its driver;
//! * [`descheduler`]: the round object both drivers (kolo-kube, kolo-sim)
//!   and `kolo deschedule --snapshot` use;
//! * [`whatif`]: `kolo deschedule --snapshot`'s report (table and JSON).
//!
//! Nothing here does I/O or reads a clock.

pub mod cluster;
pub mod config;
pub mod descheduler;
pub mod evictor;
pub mod evictor_filter;
pub mod low_node_load;
pub mod migration;
pub mod namespaces;
pub mod plan;
pub mod pod_sort;
pub mod whatif;

pub use cluster::{Cluster, Workload};
pub use descheduler::Descheduler;
pub use evictor::{EvictionRequest, Evictor};
pub use plan::{Action, Event, ObjectKey};
