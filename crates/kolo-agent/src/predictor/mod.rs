//! The peak predictor (spec §4): decaying histograms of CPU and memory per
//! pod, per priority class, for the node and for the system, trained every
//! minute from the metric store; the two prodReclaimable predictors built on
//! them; checkpoints so a restart keeps the history.
//!
//! * [`histogram`]: exponential buckets, decaying weights, percentiles.
//! * [`Model`] and [`PredictServer`]: the models, training, GC.
//! * [`reclaimable`]: prodReclaimable / prodPeak (pure).
//! * [`checkpoint`]: one versioned JSON file, written atomically.
//!
//! Time is always passed in; nothing here reads the clock.

pub mod checkpoint;
pub mod histogram;
mod model;
pub mod reclaimable;
mod server;

use std::time::Duration;

use kolo_api::PriorityClass;
use kolo_core::CpuMem;

pub use model::Model;
pub use server::{PredictServer, RestoreReport, TrainingReport, TrainingSamples, training_samples};

/// What a model predicts: percentiles of its histograms (the reference's
/// `GetPrediction`). CPU as `int(cores × 1000)`, memory as `int(bytes)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prediction {
    /// 60th percentile.
    pub p60: CpuMem,
    /// 90th percentile.
    pub p90: CpuMem,
    /// 95th percentile (prodReclaimable uses its CPU).
    pub p95: CpuMem,
    /// 98th percentile (prodReclaimable uses its memory).
    pub p98: CpuMem,
    /// The maximum (percentile 1.0).
    pub max: CpuMem,
}

/// A node-level model: the node, one priority class, or the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeItem {
    /// The whole node (`__node__`).
    Node,
    /// The sum of the pods of one priority class (with default),
    /// `__node-<class>__` (`__node-__` for no class).
    Priority(PriorityClass),
    /// Node minus all pods (`__node-sys__`).
    System,
}

impl NodeItem {
    /// The priority classes that get a model (the reference's
    /// `KnownPriorityClasses`).
    pub const PRIORITY_CLASSES: [PriorityClass; 5] = [
        PriorityClass::Prod,
        PriorityClass::Mid,
        PriorityClass::Batch,
        PriorityClass::Free,
        PriorityClass::None,
    ];

    /// Every node-level model.
    pub const ALL: [NodeItem; 7] = [
        NodeItem::Node,
        NodeItem::Priority(PriorityClass::Prod),
        NodeItem::Priority(PriorityClass::Mid),
        NodeItem::Priority(PriorityClass::Batch),
        NodeItem::Priority(PriorityClass::Free),
        NodeItem::Priority(PriorityClass::None),
        NodeItem::System,
    ];

    /// Position in [`NodeItem::ALL`].
    pub fn index(self) -> usize {
        match self {
            NodeItem::Node => 0,
            NodeItem::Priority(PriorityClass::Prod) => 1,
            NodeItem::Priority(PriorityClass::Mid) => 2,
            NodeItem::Priority(PriorityClass::Batch) => 3,
            NodeItem::Priority(PriorityClass::Free) => 4,
            NodeItem::Priority(PriorityClass::None) => 5,
            NodeItem::System => 6,
        }
    }

    /// The reference's model UID: `__node__`, `__node-koord-prod__`,
    /// `__node-__`, `__node-sys__`.
    pub fn uid(self) -> String {
        match self {
            NodeItem::Node => "__node__".to_string(),
            NodeItem::Priority(class) => format!("__node-{}__", class.as_str()),
            NodeItem::System => "__node-sys__".to_string(),
        }
    }

    /// The item a model UID names, if any (pod UIDs name none).
    pub fn from_uid(uid: &str) -> Option<NodeItem> {
        NodeItem::ALL.into_iter().find(|item| item.uid() == uid)
    }
}

/// Where predictions come from ([`PredictServer`], or a table in tests).
pub trait Predictions {
    /// The prediction of a pod's model.
    fn pod(&self, uid: &str) -> Option<Prediction>;
    /// The prediction of a node-level model.
    fn item(&self, item: NodeItem) -> Option<Prediction>;
}

/// Predictor settings (spec §4.1 defaults).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredictorConfig {
    /// CPU histogram half-life (12 h).
    pub cpu_half_life: Duration,
    /// Memory histogram half-life (24 h).
    pub memory_half_life: Duration,
    /// Training interval (1 min); also the window of each training sample.
    pub training_interval: Duration,
    /// A model not updated for this long is dropped (30 min).
    pub model_expiration: Duration,
    /// Interval between two checkpoints (10 min).
    pub checkpoint_interval: Duration,
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            cpu_half_life: Duration::from_secs(12 * 3600),
            memory_half_life: Duration::from_secs(24 * 3600),
            training_interval: Duration::from_secs(60),
            model_expiration: Duration::from_secs(30 * 60),
            checkpoint_interval: Duration::from_secs(10 * 60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_item_uids() {
        let uids: Vec<String> = NodeItem::ALL.iter().map(|i| i.uid()).collect();
        assert_eq!(
            uids,
            [
                "__node__",
                "__node-koord-prod__",
                "__node-koord-mid__",
                "__node-koord-batch__",
                "__node-koord-free__",
                "__node-__",
                "__node-sys__"
            ]
        );
        for (i, item) in NodeItem::ALL.into_iter().enumerate() {
            assert_eq!(item.index(), i);
            assert_eq!(NodeItem::from_uid(&item.uid()), Some(item));
        }
        assert_eq!(NodeItem::from_uid("0d4c6a9e-3b1f-4c1e-9d55-1f2e3a4b5c6d"), None);
    }
}
