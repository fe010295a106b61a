//! A node's usage over the aggregation windows a policy reads, one sample
//! per step, for the NodeMetric's `aggregatedNodeUsages`: avg, p50, p90,
//! p95 and p99 of node CPU and memory over each window (the agent reports
//! 5, 10 and 30 minutes).
//!
//! Only kept, and only for the windows, that a policy's
//! LoadAwareScheduling reads ([`crate::policy::Policy::aggregated_windows`], of the windows of the node's NodeMetric spec):
//! the report then lacks the windows no component reads, which changes no
//! decision, and a thousand nodes sorting three windows every report would
//! cost seconds of a 1,000-node day.
//!
//! The statistics are the agent's own: its windows ([`agent_windows`]),
//! its percentile rule
//! ([`percentile_index`]) over `f32` samples, and its cold-start rule (a
//! window is reported empty until its samples span
//! [`COLD_START_RATIO`] of it). The difference is the sampling: the agent
//! samples every second, the model every step (10 s by default), so a
//! spike shorter than a step is averaged into it and the high percentiles
//! come out lower than a real node's.

use std::collections::VecDeque;
use std::time::Duration;

use kolo_agent::nodemetric::{COLD_START_RATIO, DEFAULT_AGGREGATE_DURATIONS};
use kolo_agent::store::percentile_index;
use kolo_api::crd::{AggregationType, parse_go_duration};
use kolo_core::CpuMem;
use kolo_core::resources::ResourceVector;
use kolo_core::usage_report::AggregatedNodeUsage;

use crate::objects::reported_amounts;

/// The statistics of each window, in the agent's order.
const STATISTICS: [(AggregationType, Option<f32>); 5] = [
    (AggregationType::Avg, None),
    (AggregationType::P50, Some(0.5)),
    (AggregationType::P90, Some(0.9)),
    (AggregationType::P95, Some(0.95)),
    (AggregationType::P99, Some(0.99)),
];

/// The windows the agent reports ([`DEFAULT_AGGREGATE_DURATIONS`]): 5,
/// 10 and 30 minutes.
pub fn agent_windows() -> Vec<Duration> {
    DEFAULT_AGGREGATE_DURATIONS.iter().filter_map(|d| parse_go_duration(d)).collect()
}

/// The last samples of one node.
#[derive(Debug, Clone)]
pub struct UsageHistory {
    step_seconds: u64,
    windows: Vec<Duration>,
    /// (CPU cores, memory bytes) at the end of each step, newest last.
    samples: VecDeque<(f32, f32)>,
    /// Samples kept: the longest window's.
    keep: usize,
    scratch: Vec<f32>,
}

impl UsageHistory {
    /// An empty history of `windows` for steps of `step_seconds` (at
    /// least 1).
    pub fn new(step_seconds: u64, windows: &[Duration]) -> UsageHistory {
        let step_seconds = step_seconds.max(1);
        let windows = windows.to_vec();
        let longest = windows.iter().max().copied().unwrap_or_default();
        let keep = samples_in(longest, step_seconds);
        UsageHistory {
            step_seconds,
            windows,
            samples: VecDeque::with_capacity(keep),
            keep,
            scratch: Vec::with_capacity(keep),
        }
    }

    /// Records the node's usage at the end of a step.
    pub fn push(&mut self, cpu_cores: f64, memory_bytes: f64) {
        if self.samples.len() == self.keep {
            self.samples.pop_front();
        }
        self.samples.push_back((cpu_cores as f32, memory_bytes as f32));
    }

    /// `aggregatedNodeUsages` now: for each window, the five statistics,
    /// empty while the window is not yet covered.
    pub fn aggregated(&mut self) -> Vec<AggregatedNodeUsage> {
        let mut out = Vec::with_capacity(self.windows.len() * STATISTICS.len());
        for &window in &self.windows {
            let n = samples_in(window, self.step_seconds).min(self.samples.len());
            let span = n.saturating_sub(1) as u64 * self.step_seconds;
            let covered = n > 0 && span as f64 >= window.as_secs_f64() * COLD_START_RATIO;
            let recent = self.samples.range(self.samples.len() - n..);
            let cpu = covered.then(|| stats(recent.clone().map(|s| s.0), &mut self.scratch));
            let memory = covered.then(|| stats(recent.map(|s| s.1), &mut self.scratch));
            for (i, (statistic, _)) in STATISTICS.iter().enumerate() {
                let usage = match (cpu, memory) {
                    (Some(c), Some(m)) => {
                        let CpuMem { cpu, memory } =
                            reported_amounts(f64::from(c[i]), f64::from(m[i]));
                        ResourceVector::cpu_memory(cpu, memory)
                    }
                    _ => ResourceVector::EMPTY,
                };
                out.push(AggregatedNodeUsage { duration: window, statistic: *statistic, usage });
            }
        }
        out
    }
}

/// Samples a window of `window` holds at one per `step_seconds`, both
/// ends included (as the agent's `[now − window, now]`).
fn samples_in(window: Duration, step_seconds: u64) -> usize {
    (window.as_secs() / step_seconds) as usize + 1
}

/// The [`STATISTICS`] of `values` (not empty): avg (summed in `f64`, as the
/// agent does) and the percentiles of the sorted values.
fn stats(values: impl Iterator<Item = f32>, scratch: &mut Vec<f32>) -> [f32; 5] {
    scratch.clear();
    scratch.extend(values);
    let sum: f64 = scratch.iter().map(|v| f64::from(*v)).sum();
    let avg = (sum / scratch.len() as f64) as f32;
    scratch.sort_unstable_by(f32::total_cmp);
    STATISTICS.map(|(_, p)| match p {
        None => avg,
        Some(p) => scratch[percentile_index(scratch.len(), p)],
    })
}

#[cfg(test)]
mod tests {
    use kolo_agent::nodemetric::{CollectPolicy, StatusInputs, build_status};
    use kolo_agent::sample::NodeSample;
    use kolo_agent::store::MetricStore;
    use kolo_api::crd::NodeMetric;
    use kolo_core::clock::Timestamp;
    use kolo_core::resources::ResourceName;
    use kolo_core::usage_report::NodeUsageReport;

    use super::*;

    /// A day-shaped series with spikes: every value distinct, unsorted.
    fn usage(k: u64) -> (f64, f64) {
        let t = k as f64;
        let cpu = 2.0 + 1.5 * (t / 17.0).sin() + if k.is_multiple_of(7) { 3.0 } else { 0.0 };
        let memory = 8e9 + 1e9 * (t / 23.0).cos() + (k % 5) as f64 * 1.25e8;
        (cpu, memory)
    }

    /// The history's windows equal what the agent reports for the same
    /// samples: its store, its NodeMetric, read back as the scheduler
    /// reads it. CPU to the milli-core; memory within the agent's KiB
    /// rounding.
    #[test]
    fn matches_the_agents_aggregation() {
        let step = 10;
        let end = Timestamp::from_second(1_800_000_000).unwrap();
        // Steps of samples → windows the agent reports filled (5m needs
        // 150 s, 10m 300 s, 30m 900 s).
        for (steps, filled) in [(5_u64, 0), (20, 1), (31, 2), (60, 2), (91, 3), (200, 3)] {
            let mut history = UsageHistory::new(step, &agent_windows());
            let mut store = MetricStore::default();
            for k in 0..steps {
                let (cpu, memory) = usage(k);
                history.push(cpu, memory);
                let at = end - Duration::from_secs((steps - 1 - k) * step);
                store.record_node(&NodeSample {
                    at,
                    cpu_cores: cpu,
                    memory_bytes: memory as u64,
                    memory_with_cache_bytes: memory as u64,
                });
            }
            let policy = CollectPolicy::default();
            let inputs =
                StatusInputs { store: &store, pods: &[], policy: &policy, prod: None, now: end };
            let mut metric = NodeMetric::new("n", Default::default());
            metric.status = Some(build_status(&inputs, &mut Vec::new()));
            let agent = NodeUsageReport::read(&metric).aggregated_node_usages;
            let ours = history.aggregated();
            assert_eq!(ours.len(), agent.len(), "{steps} steps");
            let agent_filled =
                agent.iter().filter(|a| a.usage.get(ResourceName::Cpu).is_some()).count();
            assert_eq!(agent_filled, filled * 5, "{steps} steps: the agent's filled windows");
            for (o, a) in ours.iter().zip(&agent) {
                let at = format!("{steps} steps, {:?} {:?}", a.duration, a.statistic);
                assert_eq!((o.duration, o.statistic), (a.duration, a.statistic), "{at}");
                assert_eq!(o.usage.get(ResourceName::Cpu), a.usage.get(ResourceName::Cpu), "{at}");
                let memory = |v: &ResourceVector| v.get(ResourceName::Memory);
                match (memory(&o.usage), memory(&a.usage)) {
                    (Some(x), Some(y)) => assert!((x - y).abs() <= 1024, "{at}: {x} vs {y}"),
                    (x, y) => assert_eq!(x, y, "{at}"),
                }
            }
        }
    }

    #[test]
    fn windows_fill_after_half_their_length() {
        // 10 s steps: 5m is covered from 150 s of samples (16 samples), 10m
        // from 300 s (31), 30m from 900 s (91).
        assert_eq!(agent_windows().len(), 3, "every agent window parses");
        let mut history = UsageHistory::new(10, &agent_windows());
        let filled = |h: &mut UsageHistory| -> Vec<bool> {
            h.aggregated().chunks(5).map(|c| c[0].usage.get(ResourceName::Cpu).is_some()).collect()
        };
        assert_eq!(filled(&mut history), [false, false, false], "no samples");
        for (samples, want) in [
            (15, [false, false, false]),
            (16, [true, false, false]),
            (31, [true, true, false]),
            (90, [true, true, false]),
            (91, [true, true, true]),
            (500, [true, true, true]),
        ] {
            while history.samples.len() < samples.min(history.keep) {
                history.push(1.0, 1.0);
            }
            assert_eq!(filled(&mut history), want, "{samples} samples");
        }
        assert_eq!(history.samples.len(), 181, "30 min of 10 s steps, both ends");
    }

    #[test]
    fn only_the_windows_asked_for() {
        let five = Duration::from_secs(300);
        let mut history = UsageHistory::new(10, &[five]);
        for k in 0..500 {
            history.push(usage(k).0, usage(k).1);
        }
        assert_eq!(history.samples.len(), 31, "5 min of 10 s steps, both ends");
        let got = history.aggregated();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|u| u.duration == five && u.usage.get(ResourceName::Cpu).is_some()));
        // The same as the 5m entries of a history of every window.
        let mut all = UsageHistory::new(10, &agent_windows());
        for k in 0..500 {
            all.push(usage(k).0, usage(k).1);
        }
        assert_eq!(got, all.aggregated()[..5]);
    }

    #[test]
    fn percentiles_pick_the_agents_index() {
        // 10 samples 1..=10 over the 5m window: p50 index 4 (5), p90 index
        // 8 (9), p95 int(9.5) − 1 = 8 (9), p99 8 (9); avg 5.5.
        let mut history = UsageHistory::new(30, &agent_windows());
        for v in [7.0, 1.0, 10.0, 3.0, 5.0, 2.0, 9.0, 4.0, 8.0, 6.0] {
            history.push(v, v * 1e9);
        }
        let five = &history.aggregated()[..5];
        let cpu: Vec<i64> = five.iter().map(|u| u.usage.get(ResourceName::Cpu).unwrap()).collect();
        assert_eq!(cpu, [5500, 5000, 9000, 9000, 9000]);
    }
}
