//! Decaying histograms with exponential buckets (spec §4.2; the reference
//! ports them from the Kubernetes VPA recommender).
//!
//! * Buckets: bucket 0 is `[0, first)`, bucket `b` starts at
//!   `first · (ratio^b − 1) / (ratio − 1)`; the last bucket is open-ended.
//!   `numBuckets = ceil(log_ratio(max · (ratio − 1) / first + 1)) + 1`.
//! * Decay: a sample at time `t` weighs `w · 2^((t − ref) / halfLife)`, so
//!   relative to a newer sample an old one loses half its weight every
//!   half-life. When `t` passes `ref + 100 · halfLife` the reference moves
//!   to `t` rounded to a multiple of the half-life and every weight is
//!   rescaled by `2^((old − new) / halfLife)`.
//! * Percentile `p`: walk buckets from the smallest non-empty one,
//!   accumulating weight until it reaches `p · total`; the answer is the
//!   **end** of that bucket (the start of the next), or the start of the
//!   last bucket when it is the last one. An empty histogram answers 0.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The reference's minimal sample weight × 0.001: the weight below which a
/// bucket counts as empty.
pub const EPSILON: f64 = 0.0001;
/// Bucket growth ratio of both histograms.
pub const RATIO: f64 = 1.05;
/// Decay exponent at which the reference timestamp is moved.
const MAX_DECAY_EXPONENT: i64 = 100;

/// Bucket layout of an exponential histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramOptions {
    num_buckets: usize,
    first_bucket_size: f64,
    ratio: f64,
    epsilon: f64,
}

/// Invalid histogram parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HistogramError {
    /// A parameter out of range.
    #[error(
        "invalid exponential histogram: max {max}, first bucket {first}, ratio {ratio}, epsilon {epsilon} (need max > 0, first > 0, ratio > 1, epsilon > 0)"
    )]
    InvalidOptions {
        /// Largest value.
        max: f64,
        /// Size of the first bucket.
        first: f64,
        /// Growth ratio.
        ratio: f64,
        /// Empty-bucket threshold.
        epsilon: f64,
    },
}

impl HistogramOptions {
    /// Exponential buckets from 0 to at least `max`, the first `first` wide,
    /// each `ratio` times wider than the previous.
    pub fn exponential(
        max: f64,
        first: f64,
        ratio: f64,
        epsilon: f64,
    ) -> Result<Self, HistogramError> {
        let valid = max > 0.0 && first > 0.0 && ratio > 1.0 && epsilon > 0.0;
        let n = ((max * (ratio - 1.0) / first + 1.0).ln() / ratio.ln()).ceil() + 1.0;
        if !valid || !n.is_finite() || n > 1e6 {
            return Err(HistogramError::InvalidOptions { max, first, ratio, epsilon });
        }
        Ok(HistogramOptions { num_buckets: n as usize, first_bucket_size: first, ratio, epsilon })
    }

    /// CPU, in cores: up to 1024 cores, first bucket 0.025, 158 buckets.
    pub fn cpu() -> Self {
        HistogramOptions::exponential(1024.0, 0.025, RATIO, EPSILON)
            .unwrap_or_else(|_| unreachable!("valid constants"))
    }

    /// Memory, in bytes: up to 2^41, first bucket 5 MiB, 205 buckets.
    pub fn memory() -> Self {
        HistogramOptions::exponential((1u64 << 41) as f64, (5u64 << 20) as f64, RATIO, EPSILON)
            .unwrap_or_else(|_| unreachable!("valid constants"))
    }

    /// Number of buckets.
    pub fn num_buckets(&self) -> usize {
        self.num_buckets
    }

    /// Weight below which a bucket counts as empty.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The bucket holding `value` (values below the first bucket's end,
    /// negative values and NaN go to bucket 0; values past the last start to
    /// the last bucket).
    pub fn find_bucket(&self, value: f64) -> usize {
        if value.is_nan() || value < self.first_bucket_size {
            return 0;
        }
        let b = ((value * (self.ratio - 1.0) / self.first_bucket_size + 1.0).ln() / self.ratio.ln())
            as usize;
        b.min(self.num_buckets - 1)
    }

    /// Where bucket `b` starts: `first · (ratio^b − 1) / (ratio − 1)`.
    pub fn bucket_start(&self, b: usize) -> f64 {
        if b == 0 {
            return 0.0;
        }
        self.first_bucket_size * (self.ratio.powf(b as f64) - 1.0) / (self.ratio - 1.0)
    }
}

/// A histogram whose samples lose half their weight every half-life.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayingHistogram {
    options: HistogramOptions,
    half_life_ms: i64,
    /// Unix ms the decay counts from; `None` before the first sample.
    reference_ms: Option<i64>,
    weights: Box<[f64]>,
    total: f64,
    min_bucket: usize,
    max_bucket: usize,
}

impl DecayingHistogram {
    /// An empty histogram.
    pub fn new(options: HistogramOptions, half_life: Duration) -> Self {
        let n = options.num_buckets;
        DecayingHistogram {
            options,
            half_life_ms: i64::try_from(half_life.as_millis()).unwrap_or(i64::MAX).max(1),
            reference_ms: None,
            weights: vec![0.0; n].into_boxed_slice(),
            total: 0.0,
            min_bucket: n - 1,
            max_bucket: 0,
        }
    }

    /// The bucket layout.
    pub fn options(&self) -> &HistogramOptions {
        &self.options
    }

    /// The half-life.
    pub fn half_life(&self) -> Duration {
        Duration::from_millis(self.half_life_ms as u64)
    }

    /// Adds `value` with `weight` (negative weights count as 0) at `at_ms`
    /// (Unix ms).
    pub fn add_sample(&mut self, value: f64, weight: f64, at_ms: i64) {
        let factor = self.decay_factor(at_ms);
        let weight = if weight > 0.0 { weight * factor } else { 0.0 };
        let b = self.options.find_bucket(value);
        self.weights[b] += weight;
        self.total += weight;
        if self.weights[b] >= self.options.epsilon {
            self.min_bucket = self.min_bucket.min(b);
            self.max_bucket = self.max_bucket.max(b);
        }
    }

    /// `2^((t − ref) / halfLife)`, moving the reference first when the
    /// exponent would pass 100.
    fn decay_factor(&mut self, at_ms: i64) -> f64 {
        let reference = match self.reference_ms {
            Some(r) if at_ms <= r.saturating_add(self.half_life_ms * MAX_DECAY_EXPONENT) => r,
            _ => self.shift_reference(at_ms),
        };
        ((at_ms - reference) as f64 / self.half_life_ms as f64).exp2()
    }

    /// Moves the reference to `at_ms` rounded to the nearest multiple of the
    /// half-life (halves round up, like Go's `Time.Round`; multiples counted
    /// from the Unix epoch, which Go's year-1 origin is a whole number of
    /// days before) and rescales the weights.
    fn shift_reference(&mut self, at_ms: i64) -> i64 {
        let hl = self.half_life_ms;
        let rem = at_ms.rem_euclid(hl);
        let new_ref = if rem * 2 >= hl { at_ms - rem + hl } else { at_ms - rem };
        if let Some(old) = self.reference_ms {
            let exponent = ((old - new_ref) as f64 / hl as f64).round();
            self.scale(exponent.clamp(-2000.0, 2000.0).exp2());
        }
        self.reference_ms = Some(new_ref);
        new_ref
    }

    /// Multiplies every weight by `factor`; buckets that fall below epsilon
    /// stop counting.
    pub fn scale(&mut self, factor: f64) {
        self.weights.iter_mut().for_each(|w| *w *= factor);
        self.total *= factor;
        let last = self.options.num_buckets - 1;
        while self.weights[self.min_bucket] < self.options.epsilon && self.min_bucket < last {
            self.min_bucket += 1;
        }
        while self.weights[self.max_bucket] < self.options.epsilon && self.max_bucket > 0 {
            self.max_bucket -= 1;
        }
    }

    /// Whether no bucket holds at least epsilon.
    pub fn is_empty(&self) -> bool {
        self.weights[self.min_bucket] < self.options.epsilon
    }

    /// The sum of the (decayed) weights.
    pub fn total_weight(&self) -> f64 {
        self.total
    }

    /// The reference time of the decay, Unix ms.
    pub fn reference_ms(&self) -> Option<i64> {
        self.reference_ms
    }

    /// The percentile `p` in `[0, 1]`: the end of the bucket where the
    /// running weight reaches `p · total` (see the module documentation).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let threshold = p * self.total;
        let mut partial = 0.0;
        let mut b = self.min_bucket;
        while b < self.max_bucket {
            partial += self.weights[b];
            if partial >= threshold {
                break;
            }
            b += 1;
        }
        if b < self.options.num_buckets - 1 {
            self.options.bucket_start(b + 1)
        } else {
            self.options.bucket_start(b)
        }
    }

    /// The state to checkpoint: non-zero buckets only.
    pub fn to_state(&self) -> HistogramState {
        HistogramState {
            reference_ms: self.reference_ms,
            total_weight: self.total,
            buckets: self
                .weights
                .iter()
                .enumerate()
                .filter(|(_, w)| **w > 0.0)
                .map(|(b, w)| (b as u32, *w))
                .collect(),
        }
    }

    /// A histogram restored from a checkpointed state; `None` if the state
    /// does not fit this layout (bucket out of range, negative or non-finite
    /// weight).
    pub fn from_state(
        options: HistogramOptions,
        half_life: Duration,
        state: &HistogramState,
    ) -> Option<Self> {
        let mut h = DecayingHistogram::new(options, half_life);
        if !state.total_weight.is_finite() || state.total_weight < 0.0 {
            return None;
        }
        for &(b, w) in &state.buckets {
            let b = usize::try_from(b).ok().filter(|b| *b < options.num_buckets)?;
            if !w.is_finite() || w < 0.0 {
                return None;
            }
            h.weights[b] = w;
        }
        h.total = state.total_weight;
        h.reference_ms = state.reference_ms;
        let eps = options.epsilon;
        h.min_bucket = h.weights.iter().position(|w| *w >= eps).unwrap_or(options.num_buckets - 1);
        h.max_bucket = h.weights.iter().rposition(|w| *w >= eps).unwrap_or(0);
        Some(h)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.weights.len() * size_of::<f64>()
    }
}

/// A histogram's checkpointed state (exact weights, unlike the reference's
/// VPA checkpoints that normalise them to integers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistogramState {
    /// Reference time of the decay, Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_ms: Option<i64>,
    /// Sum of the weights.
    pub total_weight: f64,
    /// `(bucket, weight)` of every non-zero bucket.
    pub buckets: Vec<(u32, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: i64 = 3_600_000;
    const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z, a multiple of 12 h

    fn cpu() -> DecayingHistogram {
        DecayingHistogram::new(HistogramOptions::cpu(), Duration::from_secs(12 * 3600))
    }

    #[test]
    fn bucket_counts_match_the_reference() {
        assert_eq!(HistogramOptions::cpu().num_buckets(), 158);
        assert_eq!(HistogramOptions::memory().num_buckets(), 205);
        assert!(HistogramOptions::exponential(1.0, 0.0, 1.05, 1e-4).is_err());
        assert!(HistogramOptions::exponential(1.0, 1.0, 1.0, 1e-4).is_err());
    }

    #[test]
    fn bucket_index_and_start_formulas() {
        let o = HistogramOptions::cpu();
        assert_eq!(o.bucket_start(0), 0.0);
        assert!((o.bucket_start(1) - 0.025).abs() < 1e-15);
        // start(2) = 0.025 · (1.05² − 1) / 0.05 = 0.025 · 2.05
        assert!((o.bucket_start(2) - 0.05125).abs() < 1e-15);
        // The last bucket starts at or beyond 1024 cores ...
        assert!(o.bucket_start(157) >= 1024.0);
        // ... and the one before it below.
        assert!(o.bucket_start(156) < 1024.0);
        assert_eq!(o.find_bucket(0.0), 0);
        assert_eq!(o.find_bucket(0.0249), 0);
        assert_eq!(o.find_bucket(-3.0), 0);
        assert_eq!(o.find_bucket(f64::NAN), 0);
        assert_eq!(o.find_bucket(0.026), 1);
        assert_eq!(o.find_bucket(1e9), 157);
        // Every bucket's start (nudged up past rounding) maps to that bucket.
        for b in 1..157 {
            let start = o.bucket_start(b);
            assert_eq!(o.find_bucket(start * (1.0 + 1e-12)), b, "bucket {b}");
            assert_eq!(o.find_bucket(o.bucket_start(b + 1) * (1.0 - 1e-12)), b, "bucket {b}");
        }
        let m = HistogramOptions::memory();
        assert_eq!(m.find_bucket((5u64 << 20) as f64 - 1.0), 0);
        assert_eq!(m.find_bucket((5u64 << 20) as f64 + 1.0), 1);
        assert_eq!(m.find_bucket((1u64 << 41) as f64 * 2.0), 204);
    }

    #[test]
    fn percentile_returns_the_end_of_the_bucket() {
        let mut h = cpu();
        assert_eq!(h.percentile(0.5), 0.0, "empty → 0");
        assert!(h.is_empty());
        let o = *h.options();
        h.add_sample(1.0, 1.0, T0);
        let b = o.find_bucket(1.0);
        assert_eq!(h.percentile(0.0), o.bucket_start(b + 1));
        assert_eq!(h.percentile(0.95), o.bucket_start(b + 1));
        assert_eq!(h.percentile(1.0), o.bucket_start(b + 1));
        // Nine small samples and one large: p90 is the small bucket's end,
        // p95 and max the large one's.
        let mut h = cpu();
        for _ in 0..9 {
            h.add_sample(0.1, 1.0, T0);
        }
        h.add_sample(2.0, 1.0, T0);
        assert_eq!(h.percentile(0.9), o.bucket_start(o.find_bucket(0.1) + 1));
        assert_eq!(h.percentile(0.95), o.bucket_start(o.find_bucket(2.0) + 1));
        assert_eq!(h.percentile(1.0), o.bucket_start(o.find_bucket(2.0) + 1));
        // A value in the last bucket answers that bucket's start.
        let mut h = cpu();
        h.add_sample(5000.0, 1.0, T0);
        assert_eq!(h.percentile(0.5), o.bucket_start(157));
    }

    #[test]
    fn a_sample_one_half_life_old_weighs_half() {
        let mut h = cpu();
        h.add_sample(0.1, 1.0, T0);
        h.add_sample(2.0, 1.0, T0 + 12 * HOUR_MS);
        // Weights 1 and 2: total 3; 0.1's bucket holds a third.
        assert!((h.total_weight() - 3.0).abs() < 1e-12);
        let o = *h.options();
        assert_eq!(h.percentile(0.33), o.bucket_start(o.find_bucket(0.1) + 1));
        assert_eq!(h.percentile(0.34), o.bucket_start(o.find_bucket(2.0) + 1));
        // Memory: 24 h half-life.
        let mut m = DecayingHistogram::new(HistogramOptions::memory(), Duration::from_secs(86_400));
        m.add_sample(1e9, 1.0, T0);
        m.add_sample(1e9, 1.0, T0 + 24 * HOUR_MS);
        assert!((m.total_weight() - 3.0).abs() < 1e-12);
    }

    #[test]
    fn reference_is_rounded_to_the_half_life() {
        let mut h = cpu();
        h.add_sample(1.0, 1.0, T0 + 5 * HOUR_MS);
        assert_eq!(h.reference_ms(), Some(T0));
        assert!((h.total_weight() - (5.0f64 / 12.0).exp2()).abs() < 1e-12);
        let mut h = cpu();
        h.add_sample(1.0, 1.0, T0 + 6 * HOUR_MS); // exactly half: rounds up
        assert_eq!(h.reference_ms(), Some(T0 + 12 * HOUR_MS));
    }

    #[test]
    fn rescale_after_100_half_lives() {
        let mut h = cpu();
        h.add_sample(0.1, 1.0, T0);
        h.add_sample(2.0, 1.0, T0 + 100 * 12 * HOUR_MS); // exactly at the limit: no shift
        assert_eq!(h.reference_ms(), Some(T0));
        assert!((h.total_weight() - (1.0 + 2f64.powi(100))).abs() / 2f64.powi(100) < 1e-12);
        // One more half-life: the reference moves and weights are rescaled
        // by 2^-101; the 0.1 sample drops below epsilon and stops counting.
        let later = T0 + 101 * 12 * HOUR_MS;
        h.add_sample(2.0, 1.0, later);
        assert_eq!(h.reference_ms(), Some(later));
        assert!((h.total_weight() - (0.5 + 1.0)).abs() < 1e-9, "{}", h.total_weight());
        let o = *h.options();
        assert_eq!(h.percentile(0.0), o.bucket_start(o.find_bucket(2.0) + 1));
    }

    #[test]
    fn state_round_trip() {
        let mut h = cpu();
        for i in 0..100 {
            h.add_sample(f64::from(i) * 0.07, 1.0, T0 + i64::from(i) * 60_000);
        }
        let state = h.to_state();
        let json = serde_json::to_string(&state).unwrap();
        let back: HistogramState = serde_json::from_str(&json).unwrap();
        let r = DecayingHistogram::from_state(*h.options(), h.half_life(), &back).unwrap();
        for p in [0.0, 0.5, 0.6, 0.9, 0.95, 0.98, 1.0] {
            assert_eq!(r.percentile(p), h.percentile(p));
        }
        assert!((r.total_weight() - h.total_weight()).abs() <= 1e-12 * h.total_weight());
        assert_eq!(r.reference_ms(), h.reference_ms());
        // A state from another layout is refused.
        let bad =
            HistogramState { reference_ms: None, total_weight: 1.0, buckets: vec![(158, 1.0)] };
        assert!(DecayingHistogram::from_state(*h.options(), h.half_life(), &bad).is_none());
        let bad =
            HistogramState { reference_ms: None, total_weight: 1.0, buckets: vec![(1, -1.0)] };
        assert!(DecayingHistogram::from_state(*h.options(), h.half_life(), &bad).is_none());
    }
}
