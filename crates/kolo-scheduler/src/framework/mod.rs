//! The scheduling framework: the types every plugin sees and the extension
//! points it can implement. The framework knows no plugin: plugins are
//! found by name in a [`Registry`](crate::registry::Registry) and enabled
//! per profile.

mod cycle_state;
mod events;
mod extension_points;
mod facts;
mod interface;
mod node_info;
mod node_overlay;
mod node_set;
mod objects;
mod per_node;
mod pod_info;
mod queueing_hint;
mod status;

pub use cycle_state::CycleState;
pub use events::{ClusterEvent, EventKinds};
pub use extension_points::{ExtensionPoints, ExtensionPointsOf};
pub use facts::{Facts, ReportFacts};
pub use interface::{
    Bind, BindOutcome, ClusterEventHandler, CycleContext, Filter, MAX_NODE_SCORE, MIN_NODE_SCORE,
    NodeVerdict, Permit, PermitOutcome, Plugin, PostFilter, PostFilterCluster, PostFilterOutcome,
    PreBind, PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome, PreemptionGuard, QueueKey,
    QueueSort, Rejected, Reserve, Score, ScoreSink, WaitingVerdict, default_normalize, filter_each,
    score_each,
};
pub use node_info::{NodeId, NodeInfo};
pub use node_overlay::NodeOverlay;
pub use node_set::NodeSet;
pub use objects::{ObjectEvent, ObjectKind, ObjectRef, SchedulingObject};
pub use per_node::PerNode;
pub use pod_info::{DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, PodInfo};
pub use queueing_hint::{NodeScopedHints, QueueingHint, QueueingHints};
pub use status::{Code, Detail, Rejection, Verdict};
