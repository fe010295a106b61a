//! Thresholds (spec §9.2 steps 2 and 4): the pool's percentages completed
//! over its threshold resources, and each node's amounts from its raw
//! allocatable, absolute or as deviations from the pool's mean usage.

use kolo_core::resources::{ResourceName, ResourceVector};

use super::args::NodePool;

/// The four percentages of one resource.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percents {
    /// Low.
    pub low: f64,
    /// High.
    pub high: f64,
    /// Prod low.
    pub prod_low: f64,
    /// Prod high.
    pub prod_high: f64,
}

/// A pool's completed percentages.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolPercents {
    /// The threshold resources, sorted by name: every resource of the four
    /// maps, plus `memory`.
    pub resources: Vec<ResourceName>,
    /// Per resource, aligned with `resources`.
    pub percents: Vec<Percents>,
    /// Deviation mode.
    pub deviation: bool,
}

impl PoolPercents {
    /// Step 2: a missing entry is 100 % (0 % in deviation mode, which
    /// means "the whole allocatable").
    pub fn complete(pool: &NodePool) -> PoolPercents {
        let mut resources: Vec<ResourceName> = pool
            .low
            .keys()
            .chain(pool.high.keys())
            .chain(pool.prod_low.keys())
            .chain(pool.prod_high.keys())
            .copied()
            .chain([ResourceName::Memory])
            .collect();
        resources.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        resources.dedup();
        let missing = if pool.deviation { 0.0 } else { 100.0 };
        let get =
            |m: &std::collections::BTreeMap<ResourceName, f64>, r| *m.get(r).unwrap_or(&missing);
        let percents = resources
            .iter()
            .map(|r| Percents {
                low: get(&pool.low, r),
                high: get(&pool.high, r),
                prod_low: get(&pool.prod_low, r),
                prod_high: get(&pool.prod_high, r),
            })
            .collect();
        PoolPercents { resources, percents, deviation: pool.deviation }
    }
}

/// A node's thresholds, in the resources' units, over the threshold
/// resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeThresholds {
    /// Low.
    pub low: ResourceVector,
    /// High.
    pub high: ResourceVector,
    /// Prod low.
    pub prod_low: ResourceVector,
    /// Prod high.
    pub prod_high: ResourceVector,
}

/// `percent` of `allocatable`, truncated (Koordinator's
/// `int64(percent * 0.01 * allocatable)`); saturates on absurd inputs.
pub fn amount(percent: f64, allocatable: i64) -> i64 {
    (percent * 0.01 * allocatable as f64) as i64
}

/// `used` as a percentage of `allocatable` (0 for no allocatable).
pub fn percent_of(used: i64, allocatable: i64) -> f64 {
    if allocatable == 0 { 0.0 } else { 100.0 * used as f64 / allocatable as f64 }
}

/// The mean usage percentages of a pool's nodes (deviation mode).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Averages {
    /// Node usage, aligned with the pool's resources.
    pub node: Vec<f64>,
    /// Prod usage.
    pub prod: Vec<f64>,
}

impl Averages {
    /// Means over `nodes` (allocatable, usage, prod usage): a node with no
    /// allocatable of a resource adds 0 but still counts in the divisor.
    pub fn of<'a>(
        resources: &[ResourceName],
        nodes: impl ExactSizeIterator<
            Item = (&'a ResourceVector, &'a ResourceVector, &'a ResourceVector),
        >,
    ) -> Averages {
        let count = nodes.len();
        let mut out =
            Averages { node: vec![0.0; resources.len()], prod: vec![0.0; resources.len()] };
        for (alloc, usage, prod) in nodes {
            for (i, &r) in resources.iter().enumerate() {
                let a = alloc.value(r);
                out.node[i] += percent_of(usage.value(r), a);
                out.prod[i] += percent_of(prod.value(r), a);
            }
        }
        if count > 0 {
            for v in out.node.iter_mut().chain(out.prod.iter_mut()) {
                *v /= count as f64;
            }
        }
        out
    }
}

/// The effective (low, high) percentages of one resource: as configured,
/// or in deviation mode the mean minus low and plus high clamped to
/// [0, 100] — `None` when the low percent is 0 (thresholds are the whole
/// allocatable).
pub fn effective(low: f64, high: f64, mean: Option<f64>) -> Option<(f64, f64)> {
    match mean {
        None => Some((low, high)),
        Some(_) if low == 0.0 => None,
        Some(m) => Some(((m - low).clamp(0.0, 100.0), (m + high).clamp(0.0, 100.0))),
    }
}

impl NodeThresholds {
    /// Step 4 for one node with raw allocatable `alloc`; `averages` is
    /// `Some` in deviation mode.
    pub fn of(
        pool: &PoolPercents,
        alloc: &ResourceVector,
        averages: Option<&Averages>,
    ) -> NodeThresholds {
        let mut t = NodeThresholds::default();
        for (i, (&r, p)) in pool.resources.iter().zip(&pool.percents).enumerate() {
            let a = alloc.value(r);
            let pair = |low, high, mean| match effective(low, high, mean) {
                None => (a, a),
                Some((l, h)) => (amount(l, a), amount(h, a)),
            };
            let (low, high) = pair(p.low, p.high, averages.map(|m| m.node[i]));
            let (prod_low, prod_high) = pair(p.prod_low, p.prod_high, averages.map(|m| m.prod[i]));
            t.low.set(r, low);
            t.high.set(r, high);
            t.prod_low.set(r, prod_low);
            t.prod_high.set(r, prod_high);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::low_node_load::args::LowNodeLoadArgs;
    use ResourceName::{Cpu, Memory};

    const GI: i64 = 1 << 30;

    fn pool(json: serde_json::Value) -> PoolPercents {
        let args = LowNodeLoadArgs::from_value(json).unwrap();
        PoolPercents::complete(&args.pools().unwrap()[0])
    }

    #[test]
    fn completion_adds_memory_and_fills_missing_entries() {
        let p =
            pool(serde_json::json!({"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 60}}));
        assert_eq!(p.resources, [Cpu, Memory]);
        assert_eq!(
            p.percents[0],
            Percents { low: 30.0, high: 60.0, prod_low: 100.0, prod_high: 100.0 }
        );
        assert_eq!(
            p.percents[1],
            Percents { low: 100.0, high: 100.0, prod_low: 100.0, prod_high: 100.0 }
        );
        let d = pool(serde_json::json!({"useDeviationThresholds": true,
            "lowThresholds": {"cpu": 10}, "highThresholds": {"cpu": 10}}));
        assert_eq!(d.percents[1], Percents { low: 0.0, high: 0.0, prod_low: 0.0, prod_high: 0.0 });
    }

    #[test]
    fn absolute_thresholds_truncate_percent_of_allocatable() {
        let p = pool(serde_json::json!({"lowThresholds": {"cpu": 33, "memory": 50},
            "highThresholds": {"cpu": 66.6, "memory": 80}}));
        // 4 cores, 10 GiB: cpu 33% = 1320m; 66.6 × 0.01 × 4000 is
        // 2663.99… in float64, truncated to 2663m (as Koordinator does);
        // memory 50% = 5 GiB, 80% = 8 GiB.
        let t = NodeThresholds::of(&p, &ResourceVector::cpu_memory(4000, 10 * GI), None);
        assert_eq!((t.low.cpu(), t.high.cpu()), (1320, 2663));
        assert_eq!((t.low.memory(), t.high.memory()), (5 * GI, 8 * GI));
        assert_eq!((t.prod_low.cpu(), t.prod_high.cpu()), (4000, 4000), "missing prod = 100%");
        assert_eq!(amount(33.3, 3), 0, "int(0.999) truncates");
    }

    #[test]
    fn deviation_thresholds_use_the_mean_and_clamp() {
        let p = pool(serde_json::json!({"useDeviationThresholds": true,
            "lowThresholds": {"cpu": 10, "memory": 0}, "highThresholds": {"cpu": 15, "memory": 5}}));
        // Three nodes: cpu 50% and 20% of 4 cores, and one with no cpu
        // allocatable (adds 0, still counted): mean cpu = (50+20+0)/3 = 23.33%.
        let allocs = [
            ResourceVector::cpu_memory(4000, 8 * GI),
            ResourceVector::cpu_memory(4000, 8 * GI),
            ResourceVector::cpu_memory(0, 8 * GI),
        ];
        let usages = [
            ResourceVector::cpu_memory(2000, 2 * GI),
            ResourceVector::cpu_memory(800, 0),
            ResourceVector::cpu_memory(500, 0),
        ];
        let prods = [ResourceVector::EMPTY; 3];
        let avg = Averages::of(
            &p.resources,
            allocs.iter().zip(&usages).zip(&prods).map(|((a, u), p)| (a, u, p)),
        );
        assert!((avg.node[0] - 70.0 / 3.0).abs() < 1e-9, "{:?}", avg.node);
        let t = NodeThresholds::of(&p, &allocs[0], Some(&avg));
        // low = 13.33% of 4000 = 533, high = 38.33% = 1533.
        assert_eq!((t.low.cpu(), t.high.cpu()), (533, 1533));
        // memory low percent 0: low = high = allocatable.
        assert_eq!((t.low.memory(), t.high.memory()), (8 * GI, 8 * GI));
        assert_eq!(effective(30.0, 90.0, Some(20.0)), Some((0.0, 100.0)), "clamped to [0, 100]");
        assert_eq!(effective(0.0, 90.0, Some(20.0)), None);
    }
}
