//! `DefaultPreemption` (PostFilter): when no node can take a pod, make
//! room for it by evicting pods of lower priority, as kube-scheduler's
//! plugin of that name.
//!
//! * [`decide`]: the pure core — victims on one node
//!   ([`select_victims`]), the node to preempt on ([`pick_one_node`]);
//! * [`budgets`]: PodDisruptionBudgets, and which victims would break them;
//! * [`plugin`]: the framework adapter — who may preempt whom, the
//!   candidate nodes, the fit checks through the framework's
//!   [`PostFilterCluster`](crate::framework::PostFilterCluster).
//!
//! The plugin decides; it evicts nothing. Its [`Nomination`]
//! (node and victims) is data in the cycle's outcome: the scheduler records
//! the nomination (and counts the pod on that node for pods of lower
//! priority until it is scheduled), the cluster driver evicts the victims.
//!
//! [`Nomination`]: crate::report::Nomination

pub mod budgets;
pub mod decide;
pub mod plugin;

pub use budgets::Budgets;
pub use decide::{Candidate, PotentialVictim, Selection, pick_one_node, select_victims};
pub use plugin::{DefaultPreemption, NAME, may_preempt};
