//! Machine-readable outputs: `summary.json` and one CSV per policy with a
//! row per step.

use serde::Serialize;

use super::PolicyRun;
use crate::metrics::{StepRecord, Summary};

/// `summary.json`: the scenario's name and each policy's summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryFile<'a> {
    /// The scenario.
    pub scenario: &'a str,
    /// The seed.
    pub seed: u64,
    /// Per policy.
    pub policies: Vec<PolicySummary<'a>>,
}

/// One policy in `summary.json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySummary<'a> {
    /// The deterministic summary.
    #[serde(flatten)]
    pub summary: &'a Summary,
    /// Wall time, seconds (varies from run to run).
    pub wall_seconds: f64,
    /// Scheduling decisions per second of wall time.
    pub decisions_per_second: f64,
}

/// The summary file's JSON.
pub fn summary_json(scenario: &str, seed: u64, runs: &[PolicyRun]) -> String {
    let file = SummaryFile {
        scenario,
        seed,
        policies: runs
            .iter()
            .map(|r| PolicySummary {
                summary: &r.result.summary,
                wall_seconds: r.wall_seconds,
                decisions_per_second: r.decisions_per_second(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&file).unwrap_or_default()
}

/// The header of the per-step CSV.
pub const CSV_HEADER: &str = "hour,cpu_utilization,system_cpu,ls_cpu,be_cpu,ls_demand,ls_starved,memory_utilization,batch_allocatable,be_requested,be_running,be_pending,evictions,oom_kills,hot_nodes";

/// One CSV row per step.
pub fn steps_csv(steps: &[StepRecord]) -> String {
    let mut out = String::with_capacity(steps.len() * 100 + CSV_HEADER.len() + 1);
    out.push_str(CSV_HEADER);
    out.push('\n');
    for s in steps {
        out.push_str(&format!(
            "{:.5},{:.5},{:.3},{:.3},{:.3},{:.3},{:.3},{:.5},{:.3},{:.3},{},{},{},{},{}\n",
            s.hour,
            s.cpu_utilization,
            s.system_cpu,
            s.ls_cpu,
            s.be_cpu,
            s.ls_demand,
            s.ls_starved,
            s.memory_utilization,
            s.batch_allocatable,
            s.be_requested,
            s.be_running,
            s.be_pending,
            s.evictions,
            s.oom_kills,
            s.hot_nodes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_one_row_per_step_and_matching_columns() {
        let steps = vec![StepRecord::default(); 3];
        let csv = steps_csv(&steps);
        let lines: Vec<_> = csv.lines().collect();
        assert_eq!(lines.len(), 4);
        let columns = CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == columns));
    }
}
