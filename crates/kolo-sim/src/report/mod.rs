//! Reports of a run: the terminal table ([`table`]), the per-step CSV and
//! the summary JSON ([`data`]), and the self-contained HTML page with plots
//! ([`html`], [`plots`]). Everything here returns strings; the CLI writes
//! them.

pub mod data;
pub mod html;
pub mod plots;
pub mod story;
pub mod table;

use crate::engine::RunResult;

/// One policy's run with what only the CLI knows (wall time).
#[derive(Debug, Clone)]
pub struct PolicyRun {
    /// The run.
    pub result: RunResult,
    /// What the policy is.
    pub description: String,
    /// Its kind (what the report's story compares).
    pub kind: crate::policy::PolicyKind,
    /// Wall time of the run, seconds.
    pub wall_seconds: f64,
}

impl PolicyRun {
    /// Scheduling cycles per second of wall time.
    pub fn decisions_per_second(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.result.summary.scheduling_cycles as f64 / self.wall_seconds
        } else {
            0.0
        }
    }
}
