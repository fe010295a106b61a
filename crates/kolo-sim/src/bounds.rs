//! How big a simulation may be: refused up front, with the field and the
//! bound, instead of growing until the process aborts (`durationHours:
//! 1e9`, `offeredLoad: 1e300`, `count: 100000000`, `--hours 1e12`).
//!
//! The bounds are far above any useful run (the built-in scenario is 240
//! nodes, 7,680 CPUs, 8,640 steps and ~90,000 batch pods) and keep a run's
//! memory to a few GB: what grows with a run is one record per step, the
//! nodes, and the pods generated up front.

use crate::scenario::Scenario;

/// One bound: the scenario field (or flag) it limits, and the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The field named in the error.
    pub field: &'static str,
    /// The largest value accepted.
    pub max: f64,
}

/// Most nodes (Σ `cluster.nodeGroups[].count`; `--nodes`): 20 times
/// Kubernetes' 5,000-node scalability limit.
pub const MAX_NODES: Bound = Bound { field: "cluster.nodeGroups.count", max: 100_000.0 };
/// Most CPUs of one node.
pub const MAX_NODE_CPUS: Bound = Bound { field: "cluster.nodeGroups.cpu", max: 4_096.0 };
/// Most memory of one node, GiB (64 TiB).
pub const MAX_NODE_MEMORY_GIB: Bound =
    Bound { field: "cluster.nodeGroups.memoryGib", max: 65_536.0 };
/// Most CPUs of the whole cluster (LS pods are generated per CPU).
pub const MAX_CLUSTER_CPUS: Bound = Bound { field: "cluster.nodeGroups", max: 1_000_000.0 };
/// Most steps (`durationHours` × 3600 / `stepSeconds`; `--hours`,
/// `--step`): a year in 32 s steps.
pub const MAX_STEPS: Bound = Bound { field: "durationHours", max: 1_000_000.0 };
/// Longest step, seconds (`stepSeconds`; `--step`): an hour, longer than
/// every model interval (a step of 2^64 s made the run allocate 40 PB).
pub const MAX_STEP_SECONDS: Bound = Bound { field: "stepSeconds", max: 3_600.0 };
/// Largest `batch.offeredLoad` (a multiple of the cluster's CPU).
pub const MAX_OFFERED_LOAD: Bound = Bound { field: "batch.offeredLoad", max: 100.0 };
/// Most pods of one batch job (`batch.maxTasks`).
pub const MAX_TASKS: Bound = Bound { field: "batch.maxTasks", max: 10_000.0 };
/// Most batch pods expected over the run (generated up front):
/// `offeredLoad` × cluster CPU × duration / the mean work of a job × its
/// mean pods.
pub const MAX_BATCH_PODS: Bound = Bound { field: "batch.offeredLoad", max: 5_000_000.0 };

/// Checks the scenario's size against the bounds above; returns the field
/// and why. Call it after the per-field checks (the numbers are finite).
pub fn check(scenario: &Scenario) -> Result<(), (&'static str, String)> {
    let over = |bound: Bound, value: f64, what: &str| {
        if value <= bound.max {
            Ok(())
        } else {
            Err((
                bound.field,
                format!("{what} {} is above kolo sim's bound of {}", short(value), bound.max),
            ))
        }
    };
    let groups = &scenario.cluster.node_groups;
    let nodes: f64 = groups.iter().map(|g| g.count as f64).sum();
    over(MAX_NODES, nodes, "nodes")?;
    for g in groups {
        over(MAX_NODE_CPUS, f64::from(g.cpu), &format!("group {}: cpu", g.name))?;
        over(MAX_NODE_MEMORY_GIB, g.memory_gib, &format!("group {}: memoryGib", g.name))?;
    }
    let cpus: f64 = groups.iter().map(|g| g.count as f64 * f64::from(g.cpu)).sum();
    over(MAX_CLUSTER_CPUS, cpus, "cluster CPUs")?;
    over(MAX_STEP_SECONDS, scenario.step_seconds as f64, "stepSeconds")?;
    let steps = scenario.duration_hours * 3600.0 / scenario.step_seconds as f64;
    over(MAX_STEPS, steps, "steps (durationHours × 3600 / stepSeconds)")?;
    over(MAX_OFFERED_LOAD, scenario.batch.offered_load, "offeredLoad")?;
    over(MAX_TASKS, f64::from(scenario.batch.max_tasks), "maxTasks")?;
    let pods = crate::workload::expected_batch_pods(scenario, cpus * 1000.0);
    over(MAX_BATCH_PODS, pods.round(), "expected batch pods")
}

/// `value` as people read it: exponent notation when it is huge.
fn short(value: f64) -> String {
    if value.abs() >= 1e15 { format!("{value:e}") } else { format!("{value}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_scenarios_are_refused_naming_the_field() {
        let base = Scenario::builtin();
        assert_eq!(check(&base), Ok(()), "the built-in scenario is within bounds");
        // (change, the field refused)
        type Change = fn(&mut Scenario);
        let cases: [(Change, &str); 9] = [
            (|s| s.step_seconds = u64::MAX, "stepSeconds"),
            (|s| s.duration_hours = 1e9, "durationHours"),
            (|s| s.batch.offered_load = 1e300, "batch.offeredLoad"),
            (|s| s.batch.offered_load = 90.0, "batch.offeredLoad"), // pods, not the load
            (|s| s.cluster.node_groups[0].count = 100_000_000, "cluster.nodeGroups.count"),
            (|s| s.cluster.node_groups[0].cpu = 1_000_000, "cluster.nodeGroups.cpu"),
            (|s| s.cluster.node_groups[0].memory_gib = 1e12, "cluster.nodeGroups.memoryGib"),
            (|s| s.cluster.node_groups[0].count = 90_000, "cluster.nodeGroups"),
            (|s| s.batch.max_tasks = u32::MAX, "batch.maxTasks"),
        ];
        for (change, field) in cases {
            let mut s = base.clone();
            change(&mut s);
            let (got, why) = check(&s).expect_err(field);
            assert_eq!(got, field, "{why}");
            assert!(why.contains("bound"), "{why}");
        }
    }
}
