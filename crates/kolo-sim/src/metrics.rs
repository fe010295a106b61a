//! What a run measures: one record per step, a per-node heat map, and the
//! summary computed from them.

use serde::Serialize;

/// Cluster totals over one step. CPU in cores, memory as fractions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct StepRecord {
    /// End of the step, hours from the start.
    pub hour: f64,
    /// CPU used (system + LS + BE) / CPU capacity, in [0, 1].
    pub cpu_utilization: f64,
    /// CPU used by the system, cores.
    pub system_cpu: f64,
    /// CPU used by LS pods, cores.
    pub ls_cpu: f64,
    /// CPU used by BE pods, cores.
    pub be_cpu: f64,
    /// CPU LS pods wanted, cores.
    pub ls_demand: f64,
    /// CPU LS pods wanted but did not get, cores (× step = starved CPU-s).
    pub ls_starved: f64,
    /// Memory used / memory capacity.
    pub memory_utilization: f64,
    /// Σ `kubernetes.io/batch-cpu` allocatable published, cores.
    pub batch_allocatable: f64,
    /// Σ CPU requests of running BE pods, cores.
    pub be_requested: f64,
    /// BE pods running.
    pub be_running: u64,
    /// BE pods waiting (scheduler queue + the job controller's queue).
    pub be_pending: u64,
    /// BE pods evicted by the agent in this step.
    pub evictions: u64,
    /// Pods OOM-killed in this step.
    pub oom_kills: u64,
    /// Nodes over the hot thresholds in the step (`model.hotCpuPercent`,
    /// `model.hotMemoryPercent`).
    pub hot_nodes: u64,
}

/// Per-node CPU utilization averaged over time buckets.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HeatMap {
    /// Node names (rows).
    pub nodes: Vec<String>,
    /// Bucket width, hours.
    pub bucket_hours: f64,
    /// `rows[node][bucket]`, utilization in [0, 1].
    pub rows: Vec<Vec<f32>>,
}

/// A log-scale histogram of values ≥ 1 (slowdown factors), for
/// percentiles without keeping every sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
}

/// Buckets per doubling.
const PER_OCTAVE: f64 = 64.0;
/// Octaves covered (1 … 2^10).
const OCTAVES: usize = 10;

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; (PER_OCTAVE as usize) * OCTAVES + 1] }
    }
}

impl Histogram {
    /// Adds a value (values below 1 count as 1, above the range as the top).
    pub fn add(&mut self, value: f64) {
        let i = (value.max(1.0).log2() * PER_OCTAVE).floor() as usize;
        let last = self.counts.len() - 1;
        self.counts[i.min(last)] += 1;
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// The `q`-quantile (upper edge of its bucket: at most 1.1% above the
    /// true value); 1 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        let total: u64 = self.counts.iter().sum();
        if total == 0 {
            return 1.0;
        }
        let rank = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return 2f64.powf((i + 1) as f64 / PER_OCTAVE);
            }
        }
        2f64.powf(OCTAVES as f64)
    }
}

/// The summary of one policy's run.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The policy.
    pub policy: String,
    /// Nodes.
    pub nodes: usize,
    /// Simulated hours.
    pub hours: f64,
    /// Mean cluster CPU utilization over the steps, [0, 1].
    pub cpu_utilization_avg: f64,
    /// 95th percentile of the per-step cluster CPU utilization.
    pub cpu_utilization_p95: f64,
    /// Mean utilization of LS pods and the system alone (the LS-only level).
    pub ls_only_utilization_avg: f64,
    /// CPU-hours of work of the BE pods that completed.
    pub be_cpu_hours_completed: f64,
    /// CPU-hours BE pods used (completed or not).
    pub be_cpu_hours_used: f64,
    /// BE pods submitted (retries of evicted pods count again).
    pub be_pods_submitted: u64,
    /// BE pods that completed.
    pub be_pods_completed: u64,
    /// BE pods evicted by the agent.
    pub be_pods_evicted: u64,
    /// BE pods OOM-killed.
    pub be_pods_oom_killed: u64,
    /// BE pods running at the end.
    pub be_pods_running: u64,
    /// BE pods still waiting at the end.
    pub be_pods_pending: u64,
    /// BE jobs of which every pod completed.
    pub be_jobs_completed: u64,
    /// LS pods.
    pub ls_pods: u64,
    /// LS pods not placed by the end.
    pub ls_pods_pending: u64,
    /// LS pods evicted or OOM-killed (must be 0).
    pub ls_pods_evicted: u64,
    /// CPU-seconds LS pods wanted.
    pub ls_demand_cpu_seconds: f64,
    /// CPU-seconds LS pods wanted and did not get.
    pub ls_starved_cpu_seconds: f64,
    /// `lsStarvedCpuSeconds / lsDemandCpuSeconds`.
    pub ls_starved_share: f64,
    /// 99th percentile of the LS latency proxy over LS pod-steps.
    pub ls_latency_proxy_p99: f64,
    /// Scheduling cycles run.
    pub scheduling_cycles: u64,
    /// Batch allocatable updates written by the manager.
    pub allocatable_updates: u64,
    /// Hot-node time and the descheduler's figures.
    #[serde(flatten)]
    pub descheduler: crate::descheduler::DeschedulerSummary,
    /// Tenants' quotas and gangs, when the scenario has them.
    #[serde(flatten)]
    pub jobs: crate::jobs::JobsSummary,
}

/// The `q`-quantile of `values` (nearest rank); 0 when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn quantile_cases() {
        let cases: &[(&[f64], f64, f64)] = &[
            (&[], 0.5, 0.0),
            (&[3.0, 1.0, 2.0], 0.5, 2.0),
            (&[1.0, 2.0, 3.0, 4.0], 0.95, 4.0),
            (&[5.0], 0.01, 5.0),
        ];
        for (v, q, want) in cases {
            assert_eq!(quantile(v, *q), *want, "{v:?} {q}");
        }
    }

    proptest! {
        #[test]
        fn histogram_quantile_is_close_above(values in proptest::collection::vec(1.0f64..500.0, 1..300), q in 0.01f64..1.0) {
            let mut h = Histogram::default();
            for v in &values { h.add(*v); }
            let exact = quantile(&values, q);
            let approx = h.quantile(q);
            prop_assert!(approx >= exact * (1.0 - 1e-9));
            prop_assert!(approx <= exact * 2f64.powf(1.0 / PER_OCTAVE) * (1.0 + 1e-9));
        }
    }
}
