//! The two-resource amounts every term of the formulas is made of, and the
//! reference's rounding rules (Koordinator spec §0.1).
//!
//! The batch and mid formulas only ever look at `cpu` and `memory`, so a
//! term is a [`CpuMem`] (kolo-core's): CPU in milli-cores, memory in bytes,
//! both `i64`.
//! A resource missing from a Kubernetes list counts as 0. That is exactly
//! what the reference's `quotav1` helpers give here, because every input is
//! non-negative once read (usages and requests are clamped at 0, see
//! the `inputs` module): `Max(a, missing)` is `a = max(a, 0)`, and
//! `Subtract(a, missing)` is `a - 0`.
//!
//! Arithmetic saturates at the `i64` bounds, so a pathological input can
//! distort a number but never wrap it around to the opposite sign.

use serde::Serialize;

pub use kolo_core::CpuMem;

/// A percentage per resource (CPU, memory), as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Percents {
    /// The CPU percentage.
    pub cpu: i64,
    /// The memory percentage.
    pub memory: i64,
}

/// `float64(percent) / 100`, the reference's ratio of a percentage.
pub fn percent_ratio(percent: i64) -> f64 {
    percent as f64 / 100.0
}

/// The reference's `getReserveRatio`: `float64(100 - threshold) / 100`.
/// Negative for a threshold above 100.
pub fn reserve_ratio(threshold_percent: i64) -> f64 {
    100i64.saturating_sub(threshold_percent) as f64 / 100.0
}

/// `int64(float64(amount) * ratio)`: the reference's `MultiplyMilliQuant`
/// (on milli-cores) and `MultiplyQuant` (on bytes) — the product in `f64`,
/// truncated toward zero. Out-of-range products saturate (Rust's `as`),
/// where Go's conversion is implementation-defined.
pub fn multiply_truncate(amount: i64, ratio: f64) -> i64 {
    (amount as f64 * ratio) as i64
}

/// Both resources of `amount` multiplied by their ratio of `percents`,
/// truncated (margin, caps and static reservations are all this shape).
pub fn multiply_percents(amount: CpuMem, percents: Percents) -> CpuMem {
    CpuMem {
        cpu: multiply_truncate(amount.cpu, percent_ratio(percents.cpu)),
        memory: multiply_truncate(amount.memory, percent_ratio(percents.memory)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_matches_the_reference() {
        // 100 cores × (100 − 65)/100: 0.35 is 0.34999999999999997 in f64,
        // and 100000 × that rounds to exactly 35000.0, so 35000.
        assert_eq!(multiply_truncate(100_000, reserve_ratio(65)), 35_000);
        // 120G × 0.35 rounds to exactly 4.2e10 in f64.
        assert_eq!(multiply_truncate(120_000_000_000, reserve_ratio(65)), 42_000_000_000);
        // 1 milli-core × 0.5 truncates to 0; −1 × 0.5 truncates toward 0.
        assert_eq!(multiply_truncate(1, 0.5), 0);
        assert_eq!(multiply_truncate(-1, 0.5), 0);
        // 0.29 × 100 = 28.999999999999996 in f64: truncation gives 28, the
        // reference's rounding quirk, kept on purpose.
        assert_eq!(multiply_truncate(100, 0.29), 28);
        // A threshold above 100 gives a negative ratio: 150 → −0.5.
        assert_eq!(reserve_ratio(150), -0.5);
        assert_eq!(multiply_truncate(100_000, reserve_ratio(150)), -50_000);
        // Saturation instead of wrap-around.
        assert_eq!(multiply_truncate(i64::MAX, 2.0), i64::MAX);
        assert_eq!(multiply_truncate(i64::MAX, -2.0), i64::MIN);
        assert_eq!(reserve_ratio(i64::MIN), (i64::MAX as f64) / 100.0);
    }
}
