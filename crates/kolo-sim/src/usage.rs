//! Usage curves: what an LS pod wants at a given second — a daily sine
//! around its mean, times smooth noise.
//!
//! The noise is a pure function of (pod key, time), not a random stream:
//! value noise with one approximately normal knot every `noiseMinutes`,
//! interpolated with a smoothstep. So nodes can be stepped in parallel and
//! in any order and still give the same numbers for a seed.

use std::f64::consts::TAU;

/// Seconds in a day.
pub const DAY: f64 = 86_400.0;

/// splitmix64: a fast, well-mixed 64-bit hash.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// An approximately standard-normal number from a hash (the sum of four
/// uniforms, scaled to unit variance; bounded by ±√12).
pub fn normal_from(hash: u64) -> f64 {
    let mut sum = 0.0;
    for i in 0..4 {
        let bits = (hash >> (16 * i)) & 0xFFFF;
        sum += bits as f64 / 65_535.0 - 0.5;
    }
    // Var of one uniform is 1/12; four of them: 1/3.
    sum * 3f64.sqrt()
}

/// Smooth noise with unit variance at the knots, a pure function of `key`
/// and `t` (seconds) with knots every `period` seconds.
pub fn smooth_noise(key: u64, t: f64, period: f64) -> f64 {
    let x = t / period;
    let k = x.floor();
    let f = x - k;
    let k = k as i64 as u64;
    let a = normal_from(mix(key ^ mix(k)));
    let b = normal_from(mix(key ^ mix(k.wrapping_add(1))));
    let s = f * f * (3.0 - 2.0 * f);
    a + (b - a) * s
}

/// The daily factor `1 + amplitude × cos(2π (t − peak) / day)`: 1 + amplitude
/// at the peak second of the day, 1 − amplitude twelve hours later.
pub fn diurnal(t: f64, peak_second: f64, amplitude: f64) -> f64 {
    1.0 + amplitude * (TAU * (t - peak_second) / DAY).cos()
}

/// One LS pod's usage curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Curve {
    /// Mean CPU over a day, milli.
    pub mean: f64,
    /// Daily swing.
    pub amplitude: f64,
    /// Second of the day of the peak.
    pub peak_second: f64,
    /// Relative noise.
    pub noise: f64,
    /// Noise period, seconds.
    pub noise_period: f64,
    /// Noise key (per pod).
    pub key: u64,
}

impl Curve {
    /// CPU demand at `t`, milli, never negative.
    pub fn cpu(&self, t: f64) -> f64 {
        let n = smooth_noise(self.key, t, self.noise_period);
        (self.mean * diurnal(t, self.peak_second, self.amplitude) * (1.0 + self.noise * n)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn diurnal_cases() {
        // (t, peak, amplitude) → factor
        let cases = [
            (0.0, 0.0, 0.5, 1.5),
            (DAY / 2.0, 0.0, 0.5, 0.5),
            (DAY / 4.0, 0.0, 0.5, 1.0),
            (3600.0, 3600.0, 0.0, 1.0),
        ];
        for (t, peak, a, want) in cases {
            assert!((diurnal(t, peak, a) - want).abs() < 1e-9, "{t} {peak} {a}");
        }
    }

    #[test]
    fn noise_has_roughly_unit_variance() {
        let n = 20_000;
        let values: Vec<f64> = (0..n).map(|k| smooth_noise(42, k as f64 * 300.0, 300.0)).collect();
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((var - 1.0).abs() < 0.1, "{var}");
    }

    proptest! {
        #[test]
        fn curve_is_deterministic_bounded_and_continuous(key in any::<u64>(), t in 0.0f64..(3.0 * DAY)) {
            let c = Curve { mean: 1000.0, amplitude: 0.5, peak_second: 50_000.0, noise: 0.1, noise_period: 300.0, key };
            let v = c.cpu(t);
            prop_assert_eq!(v, c.cpu(t));
            // |noise| ≤ √12, so the value stays within the swing ± 35%.
            prop_assert!(v >= 0.0 && v <= 1000.0 * 1.5 * (1.0 + 0.1 * 12f64.sqrt()) + 1e-9);
            let dv = (c.cpu(t + 1.0) - v).abs();
            prop_assert!(dv < 20.0, "jump {dv}");
        }
    }
}
