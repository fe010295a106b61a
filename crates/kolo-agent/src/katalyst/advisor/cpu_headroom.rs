//! CPU headroom (spec §2.6): what becomes `reclaimed_millicpu`. Katalyst's
//! default assembler measures the reclaimed pods' CPUs rather than summing
//! region headrooms (§10.6, kept):
//!
//! * per NUMA node `n`, with `R_n` the CPUs reclaimed pods may use on it:
//!   `supply_n = max(|R_n| − Σ_{c ∈ R_n} usage ratio(c), 0) + reclaimed
//!   pods' usage on n` (their own use is added back: it is theirs to keep);
//! * a node a dedicated pod is bound to gets its own supply, rounded up;
//! * the other nodes share one supply computed over their union, divided
//!   evenly and truncated to whole CPUs per node (5.6 over 2 nodes → 2 + 2);
//! * nodes where reclaim is disabled (an exclusive dedicated pod that
//!   disallows it) count 0;
//! * the total is capped by the reclaimed cgroup's CFS quota, if any;
//! * 0 when reclaim is disabled.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::katalyst::config::KatalystConfig;
use crate::katalyst::machine::Machine;
use crate::katalyst::pools::Pools;

/// What was measured for the headroom.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuMeasurements {
    /// Each CPU's busy ratio in [0, 1] over the last interval.
    pub cpu_usage: BTreeMap<u32, f64>,
    /// The reclaimed pods' CPU use per NUMA node, cores.
    pub reclaimed_usage: BTreeMap<u32, f64>,
    /// The reclaimed root cgroup's CFS quota, cores (`None`: unlimited).
    pub reclaimed_quota: Option<f64>,
}

/// The CPU headroom.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuHeadroom {
    /// Per NUMA node, milli-cores.
    pub per_numa: BTreeMap<u32, i64>,
    /// Total: `reclaimed_millicpu`.
    pub millicpu: i64,
}

fn supply(cpus: &kolo_core::cpuset::CpuSet, m: &CpuMeasurements, numas: &[u32]) -> f64 {
    let busy: f64 = cpus.iter().map(|c| m.cpu_usage.get(&c).copied().unwrap_or(0.0)).sum();
    let own: f64 = numas.iter().map(|n| m.reclaimed_usage.get(n).copied().unwrap_or(0.0)).sum();
    (cpus.len() as f64 - busy).max(0.0) + own
}

/// The headroom of `pools`. `disabled`: nodes where reclaim is disabled.
pub fn cpu_headroom(
    cfg: &KatalystConfig,
    machine: &Machine,
    pools: &Pools,
    m: &CpuMeasurements,
    disabled: &BTreeSet<u32>,
) -> CpuHeadroom {
    let mut out = CpuHeadroom::default();
    if !cfg.enable_reclaim {
        return out;
    }
    let reclaimed = pools.reclaimed_cpus();
    let bound: BTreeSet<u32> = pools.dedicated.values().map(|a| a.numa).collect();
    let mut unbound = Vec::new();
    let mut unbound_cpus = kolo_core::cpuset::CpuSet::default();
    for n in &machine.numa {
        let cpus = reclaimed.intersection(&n.cpus);
        if disabled.contains(&n.id) {
            out.per_numa.insert(n.id, 0);
        } else if bound.contains(&n.id) {
            out.per_numa.insert(n.id, supply(&cpus, m, &[n.id]).ceil() as i64 * 1000);
        } else {
            unbound.push(n.id);
            unbound_cpus.union_with(&cpus);
        }
    }
    if !unbound.is_empty() {
        let each = (supply(&unbound_cpus, m, &unbound) / unbound.len() as f64).floor() as i64;
        for n in unbound {
            out.per_numa.insert(n, each * 1000);
        }
    }
    out.millicpu = out.per_numa.values().sum();
    if let Some(q) = m.reclaimed_quota {
        out.millicpu = out.millicpu.min((q * 1000.0).round() as i64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::katalyst::dedicated::DedicatedAllocation;
    use kolo_core::cpuset::CpuSet;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    #[test]
    fn headroom_table() {
        let m = Machine::uniform(2, 8, false, 0);
        let cfg = KatalystConfig::default();
        // Reclaim pool 4-7 (node 0) and 12-15 (node 1).
        let pools = Pools { reclaim: set("4-7,12-15"), ..Pools::default() };
        let busy = |pairs: &[(u32, f64)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
        // SA-4 style: union supply = 8 − (0.6+0.6+0.6+0.6 + 0.5×4 = 4.4) + 2.0 reclaimed
        // use = 5.6 → 5.6 / 2 = 2.8 → 2 per node → 4000m.
        let meas = CpuMeasurements {
            cpu_usage: busy(&[
                (4, 0.6),
                (5, 0.6),
                (6, 0.6),
                (7, 0.6),
                (12, 0.5),
                (13, 0.5),
                (14, 0.5),
                (15, 0.5),
            ]),
            reclaimed_usage: busy(&[(0, 1.0), (1, 1.0)]),
            reclaimed_quota: None,
        };
        let h = cpu_headroom(&cfg, &m, &pools, &meas, &BTreeSet::new());
        assert_eq!(h.per_numa, BTreeMap::from([(0, 2000), (1, 2000)]));
        assert_eq!(h.millicpu, 4000);
        // A dedicated pod bound to node 1 with 2 overlapped CPUs (10-11):
        // node 1: |12-15 ∪ 10-11| = 6 − (4 × 0.5 + 10, 11 idle) = 4 + 1.0 = 5.0 → 5;
        // node 0 alone: 4 − 2.4 + 1.0 = 2.6 → 2.
        let ded = DedicatedAllocation {
            pod: "ns/d".into(),
            numa: 1,
            cpus: set("8-11"),
            exclusive: false,
        };
        let pools2 = Pools {
            reclaim: set("4-7,12-15"),
            reclaim_overlap: set("10-11"),
            dedicated: BTreeMap::from([("uid-d".to_string(), ded)]),
            ..Pools::default()
        };
        let h = cpu_headroom(&cfg, &m, &pools2, &meas, &BTreeSet::new());
        assert_eq!(h.per_numa, BTreeMap::from([(0, 2000), (1, 5000)]));
        // Node 1 disabled: 0 there.
        let h = cpu_headroom(&cfg, &m, &pools2, &meas, &BTreeSet::from([1]));
        assert_eq!(h.millicpu, 2000);
        // A 3-core quota caps 7000m.
        let capped = CpuMeasurements { reclaimed_quota: Some(3.0), ..meas.clone() };
        assert_eq!(cpu_headroom(&cfg, &m, &pools2, &capped, &BTreeSet::new()).millicpu, 3000);
        // Reclaim disabled: 0.
        let off = KatalystConfig { enable_reclaim: false, ..cfg };
        assert_eq!(
            cpu_headroom(&off, &m, &pools2, &meas, &BTreeSet::new()),
            CpuHeadroom::default()
        );
    }
}
