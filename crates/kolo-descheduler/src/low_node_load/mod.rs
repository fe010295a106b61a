//! LowNodeLoad (spec §9): moves pods off nodes whose measured usage is over
//! their high thresholds to nodes under their low thresholds.
//!
//! [`LowNodeLoad`] holds what the plugin remembers between rounds (the
//! anomaly detectors); [`LowNodeLoad::balance`] runs one round over a
//! [`Cluster`] at a given time, evicting through an [`Evictor`], and
//! returns per pool what it saw and chose.
//!
//! * [`args`]: configuration, defaults, validation, node pools;
//! * `usage`, [`thresholds`], `classify`: steps 3–5;
//! * [`anomaly`]: the detectors of step 7;
//! * [`score`]: node and pod usage scores and the candidate order;
//! * [`fit`]: node fit of a candidate against a target;
//! * `evict`: the eviction passes of §9.3;
//! * [`report`]: what a round reports.

pub mod anomaly;
pub mod args;
mod classify;
mod evict;
mod filter;
pub mod fit;
pub mod report;
mod round;
pub mod score;
pub mod thresholds;
mod usage;

use std::collections::HashSet;

use kolo_core::clock::Timestamp;

use crate::cluster::Cluster;
use crate::evictor::Evictor;

pub use args::{AnomalyCondition, Error, LowNodeLoadArgs, NodePool, NodePoolArgs};
pub use report::{
    CandidateReport, CandidateVerdict, NodeClass, NodeReport, PoolReport, ResourceUsage,
};

/// The plugin's name.
pub const NAME: &str = "LowNodeLoad";

/// The plugin, with its detectors.
#[derive(Debug, Clone)]
pub struct LowNodeLoad {
    args: LowNodeLoadArgs,
    pools: Vec<NodePool>,
    filter: filter::PodFilter,
    detectors: anomaly::Detectors,
    prod_detectors: anomaly::Detectors,
}

impl LowNodeLoad {
    /// The plugin with `args` (defaulted and validated here too).
    pub fn new(args: LowNodeLoadArgs) -> Result<LowNodeLoad, Error> {
        let args = args.defaulted();
        args.validate()?;
        let pools = args.pools()?;
        let filter = filter::PodFilter::new(&args)?;
        Ok(LowNodeLoad {
            args,
            pools,
            filter,
            detectors: anomaly::Detectors::default(),
            prod_detectors: anomaly::Detectors::default(),
        })
    }

    /// The (defaulted) args.
    pub fn args(&self) -> &LowNodeLoadArgs {
        &self.args
    }

    /// The pools, in processing order.
    pub fn pools(&self) -> &[NodePool] {
        &self.pools
    }

    /// The node-usage detectors (for inspection).
    pub fn detectors(&self) -> &anomaly::Detectors {
        &self.detectors
    }

    /// One Balance round at `now`: each pool in turn (nodes a pool already
    /// processed as sources are left out of later pools). Nothing when
    /// paused. In a dry run the evictor is never called; the report still
    /// lists the pods that would have been evicted.
    pub fn balance(
        &mut self,
        cluster: &Cluster,
        evictor: &mut dyn Evictor,
        now: Timestamp,
    ) -> Vec<PoolReport> {
        if self.args.paused {
            return Vec::new();
        }
        let ttl = self.args.detector_cache_timeout.unwrap_or(args::DEFAULT_DETECTOR_CACHE_TIMEOUT);
        self.detectors.expire(ttl, now);
        self.prod_detectors.expire(ttl, now);
        let mut processed = HashSet::new();
        (0..self.pools.len())
            .map(|i| self.run_pool(i, cluster, evictor, now, &mut processed))
            .collect()
    }
}

#[cfg(test)]
mod tests;
