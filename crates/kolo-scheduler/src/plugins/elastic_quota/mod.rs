//! `ElasticQuota`: hierarchical elastic quotas (spec §7). Each quota has a
//! guaranteed `min` and a `max`; what the cluster has beyond the mins is
//! shared among the quotas that ask for it, by weight, and a pod is
//! scheduled only while its quota's use stays within that share (its
//! runtime).
//!
//! * [`names`]: the labels, annotations and special quota names;
//! * [`spec`]: one `ElasticQuota` object read and validated;
//! * [`tree`]: the tree, pod → quota mapping, Request and Used up the tree;
//! * [`runtime`]: the exact integer runtime computation (pure);
//! * [`check`]: the PreFilter checks and `canPreempt` (pure over a tree);
//! * [`status`]: what the manager's quota controller writes and whom it
//!   revokes (pure);
//! * [`args`]: the plugin's `ElasticQuotaArgs`;
//! * [`plugin`]: the framework adapter.

pub mod args;
pub mod check;
pub mod facts;
pub mod names;
pub mod plugin;
pub mod runtime;
pub mod spec;
pub mod status;
pub mod tree;

pub use args::ElasticQuotaArgs;
pub use plugin::{ElasticQuota, NAME};
pub use spec::{QuotaError, QuotaSpec};
pub use tree::{PodFacts, QuotaTree};
