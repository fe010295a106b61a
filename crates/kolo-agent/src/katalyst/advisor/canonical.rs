//! The `canonical` provision policy (spec §2.3): a region's
//! non-reclaimed CPU requirement is the sum of its pods' estimates.
//!
//! A pod's estimate, in cores:
//!
//! * reclaim enabled and allowed for the pod: `max(usage × 1.25, load1,
//!   load5)` over the figures measured and > 0; with none, its request; if
//!   that is ≤ 0 too, 4;
//! * otherwise its request — except a dedicated pod, which counts every
//!   CPU of its node outside the reserve (Katalyst's "whole NUMA").

use std::collections::BTreeMap;

use kolo_api::katalyst::KatalystQoSLevel;
use serde::Serialize;

use super::region::{Essentials, Region};
use crate::katalyst::config::KatalystConfig;
use crate::katalyst::dedicated::DedicatedCheckpoint;
use crate::katalyst::pod::KPod;

/// Usage is scaled by this before it becomes an estimate.
pub const USAGE_FACTOR: f64 = 1.25;

/// The estimate when nothing is known.
pub const FALLBACK_CORES: f64 = 4.0;

/// Where an estimate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EstimateSource {
    /// Measured usage or load.
    Usage,
    /// The CPU request.
    Request,
    /// Nothing measured, no request: 4 cores.
    Fallback,
    /// A dedicated pod that reclaimed pods may not share: its whole node.
    WholeNuma,
}

/// One pod's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// Cores.
    pub cores: f64,
    /// Where it came from.
    pub source: EstimateSource,
}

/// A pod's estimate.
pub fn estimate(
    p: &KPod,
    cfg: &KatalystConfig,
    ess: &Essentials,
    dedicated: &DedicatedCheckpoint,
) -> Estimate {
    if cfg.enable_reclaim && p.reclaim_allowed {
        let u = p.usage;
        let measured = [u.cpu.map(|c| c * USAGE_FACTOR), u.load_1min, u.load_5min];
        let best = measured.into_iter().flatten().filter(|v| *v > 0.0).reduce(f64::max);
        return match best {
            Some(cores) => Estimate { cores, source: EstimateSource::Usage },
            None if p.cpu_request_milli > 0 => {
                Estimate { cores: p.cpu_request(), source: EstimateSource::Request }
            }
            None => Estimate { cores: FALLBACK_CORES, source: EstimateSource::Fallback },
        };
    }
    let whole = (p.level == KatalystQoSLevel::DedicatedCores)
        .then(|| dedicated.allocations.get(&p.uid))
        .flatten()
        .and_then(|a| ess.numa_available.get(&a.numa));
    match whole {
        Some(&cpus) => Estimate { cores: cpus as f64, source: EstimateSource::WholeNuma },
        None => Estimate { cores: p.cpu_request(), source: EstimateSource::Request },
    }
}

/// The region's requirement (Σ estimates) and each pod's estimate by UID.
pub fn requirement(
    region: &Region,
    pods: &BTreeMap<&str, &KPod>,
    cfg: &KatalystConfig,
    ess: &Essentials,
    dedicated: &DedicatedCheckpoint,
) -> (f64, BTreeMap<String, Estimate>) {
    let mut each = BTreeMap::new();
    let mut total = 0.0;
    for uid in &region.pods {
        if let Some(p) = pods.get(uid.as_str()) {
            let e = estimate(p, cfg, ess, dedicated);
            total += e.cores;
            each.insert(uid.clone(), e);
        }
    }
    (total, each)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::machine::Machine;
    use crate::katalyst::pod::PodUsage;
    use crate::katalyst::pod::testing::{dedicated, kpod};
    use kolo_core::cpuset::CpuSet;

    #[test]
    fn estimate_table() {
        let m = Machine::uniform(2, 8, true, 0);
        let ess = Essentials::new(&m, &CpuSet::default(), &KatalystConfig::default());
        let on = KatalystConfig::default();
        let off = KatalystConfig { enable_reclaim: false, ..KatalystConfig::default() };
        let usage = |cpu: Option<f64>, l1: Option<f64>, l5: Option<f64>| PodUsage {
            cpu,
            load_1min: l1,
            load_5min: l5,
            ..PodUsage::default()
        };
        let d = dedicated("d", 2_000, false);
        let ded = crate::katalyst::dedicated::allocate(
            &m,
            &CpuSet::default(),
            &DedicatedCheckpoint::default(),
            std::slice::from_ref(&d),
        )
        .checkpoint;
        // (pod, request milli, usage, reclaim allowed, config, expected cores, source)
        let s = kpod("s", KatalystQoSLevel::SharedCores, 0);
        let table = [
            // max(2 × 1.25 = 2.5, 1.5, 3.0) = 3.0
            (
                &s,
                1_000,
                usage(Some(2.0), Some(1.5), Some(3.0)),
                true,
                &on,
                3.0,
                EstimateSource::Usage,
            ),
            // max(2 × 1.25 = 2.5, 1.5) = 2.5
            (&s, 1_000, usage(Some(2.0), Some(1.5), None), true, &on, 2.5, EstimateSource::Usage),
            // zeros do not count: load 0.0 ignored, usage 0.4 × 1.25 = 0.5
            (&s, 1_000, usage(Some(0.4), Some(0.0), None), true, &on, 0.5, EstimateSource::Usage),
            // nothing measured: the request, 1.5
            (&s, 1_500, usage(None, None, Some(0.0)), true, &on, 1.5, EstimateSource::Request),
            // nothing measured, no request: 4
            (&s, 0, usage(None, None, None), true, &on, 4.0, EstimateSource::Fallback),
            // reclaim disabled on the node, or for the pod: the request
            (&s, 1_500, usage(Some(3.0), None, None), true, &off, 1.5, EstimateSource::Request),
            (&s, 1_500, usage(Some(3.0), None, None), false, &on, 1.5, EstimateSource::Request),
            // a dedicated pod that disallows reclaim: its node's 8 CPUs
            (&d, 2_000, usage(Some(0.5), None, None), false, &on, 8.0, EstimateSource::WholeNuma),
        ];
        for (pod, req, u, allowed, cfg, cores, source) in table {
            let mut p = pod.clone();
            p.cpu_request_milli = req;
            p.usage = u;
            p.reclaim_allowed = allowed;
            assert_eq!(
                estimate(&p, cfg, &ess, &ded),
                Estimate { cores, source },
                "{u:?} {allowed}"
            );
        }
    }
}
