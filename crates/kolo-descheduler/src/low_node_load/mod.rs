//! LowNodeLoad (spec §9): moves pods off nodes whose measured usage is over
//! their high thresholds to nodes under their low thresholds.
//!
//! (Being written: the round, thresholds, anomaly detector and candidate
//! selection land in this module.)

pub mod report;

pub use report::{
    CandidateReport, CandidateVerdict, NodeClass, NodeReport, PoolReport, ResourceUsage,
};
