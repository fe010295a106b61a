//! One model: a CPU and a memory histogram and when they were last updated.

use kolo_core::clock::Timestamp;

use super::histogram::{DecayingHistogram, HistogramOptions};
use kolo_core::CpuMem;

use super::{Prediction, PredictorConfig};

/// A CPU histogram (cores) and a memory histogram (bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// CPU usage, cores.
    pub cpu: DecayingHistogram,
    /// Memory usage, bytes.
    pub memory: DecayingHistogram,
    /// When a sample was last added (or, after a restore, the checkpoint's
    /// figure).
    pub last_updated: Timestamp,
}

impl Model {
    /// An empty model with the reference's bucket layouts and the configured
    /// half-lives.
    pub fn new(config: &PredictorConfig, now: Timestamp) -> Self {
        Model {
            cpu: DecayingHistogram::new(HistogramOptions::cpu(), config.cpu_half_life),
            memory: DecayingHistogram::new(HistogramOptions::memory(), config.memory_half_life),
            last_updated: now,
        }
    }

    /// Adds one sample of weight 1 at `now`.
    pub fn add(&mut self, cpu_cores: f64, memory_bytes: f64, now: Timestamp) {
        let t = now.as_millisecond();
        self.cpu.add_sample(cpu_cores, 1.0, t);
        self.memory.add_sample(memory_bytes, 1.0, t);
        self.last_updated = now;
    }

    /// p60 / p90 / p95 / p98 / max: CPU as `int(cores × 1000)` (truncated,
    /// as the reference), memory as `int(bytes)`.
    pub fn prediction(&self) -> Prediction {
        let at = |p: f64| {
            CpuMem::new((self.cpu.percentile(p) * 1000.0) as i64, self.memory.percentile(p) as i64)
        };
        Prediction { p60: at(0.6), p90: at(0.9), p95: at(0.95), p98: at(0.98), max: at(1.0) }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.cpu.heap_bytes() + self.memory.heap_bytes()
    }
}
