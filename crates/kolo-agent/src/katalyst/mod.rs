//! Katalyst's QoS model on the node, decision side (spec `katalyst.md`
//! §1–§5; `docs/katalyst.md`): CPU **pools** for system, dedicated,
//! shared and reclaimed cores, sized by a resource **advisor**, the
//! reclaimed resources it finds, the **eviction manager**, and the order
//! of cpuset writes that moves pods between pools safely.
//!
//! Like the strategies of [`crate::qos`], everything here is a pure
//! function of data: the pods, the machine, what was measured, the
//! previous cycle's state and the time, passed in. The act side (writing
//! cgroups, the CNR, persisting the checkpoint) is not here.
//!
//! A node runs this model when its [`NodePolicy`] is
//! [`NodePolicy::Katalyst`].

pub mod advisor;
pub mod cnr;
pub mod config;
pub mod cpuset_order;
pub mod dedicated;
pub mod eviction;
pub mod machine;
pub mod node_policy;
pub mod pod;
pub mod pools;
pub mod report;

pub use config::KatalystConfig;
pub use machine::Machine;
pub use node_policy::NodePolicy;
pub use pod::KPod;
