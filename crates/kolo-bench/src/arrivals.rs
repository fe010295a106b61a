//! When the LS requests of `kolo bench interference` arrive: steadily, or
//! in bursts with the same mean rate.
//!
//! * **steady** — request k arrives at `k / rate`;
//! * **bursty** — requests arrive in bursts of [`BURST`] at the same
//!   instant, and the bursts form a Poisson process of rate `rate /
//!   BURST` (exponentially distributed gaps, mean `BURST / rate`). The
//!   mean rate is the same as steady; the load comes in clumps, so the last
//!   request of a burst waits for the ones before it even on an idle
//!   machine, and some gaps are far shorter than the mean.
//!
//! The gaps come from a fixed seed: every run of a benchmark sees the same
//! arrival times, so runs differ only in what runs beside them.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Requests per burst of the bursty pattern.
pub const BURST: u32 = 5;

/// The seed of the bursty pattern's gaps.
const SEED: u64 = 0x6b6f_6c6f_6275_7273;

/// An arrival pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced arrivals.
    Steady,
    /// Bursts of 5 simultaneous requests, the bursts a Poisson process
    /// with the same mean request rate.
    Bursty,
}

impl Arrivals {
    /// The arrival times (offsets from the start) at `rate` requests per
    /// second, in order, without end.
    pub fn schedule(self, rate: f64) -> Schedule {
        Schedule { arrivals: self, rate, k: 0, burst_at: 0.0, rng: StdRng::seed_from_u64(SEED) }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Steady => "steady",
            Arrivals::Bursty => "bursty",
        }
    }
}

/// The arrival times of one run ([`Arrivals::schedule`]).
#[derive(Debug)]
pub struct Schedule {
    arrivals: Arrivals,
    rate: f64,
    /// Arrivals handed out so far.
    k: u64,
    /// The current burst's time, seconds.
    burst_at: f64,
    rng: StdRng,
}

impl Iterator for Schedule {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let at = match self.arrivals {
            Arrivals::Steady => self.k as f64 / self.rate,
            Arrivals::Bursty => {
                if self.k > 0 && self.k.is_multiple_of(u64::from(BURST)) {
                    // 1 − U is in (0, 1]: its logarithm is finite.
                    let u: f64 = self.rng.random();
                    self.burst_at += -(1.0 - u).ln() * f64::from(BURST) / self.rate;
                }
                self.burst_at
            }
        };
        self.k += 1;
        Some(Duration::from_secs_f64(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_arrivals_are_evenly_spaced() {
        let s: Vec<Duration> = Arrivals::Steady.schedule(200.0).take(3).collect();
        assert_eq!(s, [Duration::ZERO, Duration::from_millis(5), Duration::from_millis(10)]);
    }

    #[test]
    fn bursty_arrivals_come_in_bursts_at_the_same_mean_rate() {
        let s: Vec<Duration> = Arrivals::Bursty.schedule(200.0).take(200_000).collect();
        // Bursts of five at one instant, then a positive gap.
        for chunk in s.chunks(BURST as usize) {
            assert!(chunk.iter().all(|t| *t == chunk[0]), "{chunk:?}");
        }
        assert!(s.windows(2).all(|w| w[0] <= w[1]));
        assert!(s[5] > s[4]);
        // 200,000 requests at 200/s: about 1,000 s (the mean of 40,000
        // exponential gaps is within 2 % of its expectation).
        let span = s.last().unwrap().as_secs_f64();
        assert!((980.0..1020.0).contains(&span), "{span} s");
        // The same seed, the same arrivals.
        let again: Vec<Duration> = Arrivals::Bursty.schedule(200.0).take(100).collect();
        assert_eq!(again, s[..100]);
    }
}
