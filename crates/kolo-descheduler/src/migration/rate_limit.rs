//! The eviction rate limit (`evictQPS`, `evictBurst`): a token bucket on
//! the time the caller passes in, as Go's `rate.Limiter` (it starts full).

use kolo_core::clock::Timestamp;

/// A token bucket: `burst` tokens, refilled at `qps` per second.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Option<Timestamp>,
}

impl TokenBucket {
    /// A full bucket. `qps` must be positive and finite and `burst` ≥ 1
    /// (the args validation guarantees both); other values are clamped.
    pub fn new(qps: f64, burst: u32) -> TokenBucket {
        let qps = if qps.is_finite() && qps > 0.0 { qps } else { f64::MIN_POSITIVE };
        let burst = f64::from(burst.max(1));
        TokenBucket { qps, burst, tokens: burst, last: None }
    }

    /// Takes one token at `now` if there is one. Time going backwards
    /// refills nothing.
    pub fn try_take(&mut self, now: Timestamp) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether a token is there at `now` (takes none).
    pub fn available(&mut self, now: Timestamp) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(last) = self.last {
            let elapsed = now.as_nanosecond() - last.as_nanosecond();
            if elapsed > 0 {
                let added = elapsed as f64 / 1e9 * self.qps;
                self.tokens = (self.tokens + added).min(self.burst);
                self.last = Some(now);
            }
        } else {
            self.last = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: i64) -> Timestamp {
        Timestamp::from_millisecond(n).unwrap()
    }

    #[test]
    fn starts_full_then_refills_at_qps() {
        // 10 per second, burst 1: one now, the next 100 ms later.
        let mut b = TokenBucket::new(10.0, 1);
        assert!(b.try_take(ms(0)));
        assert!(!b.try_take(ms(0)));
        assert!(!b.try_take(ms(99)));
        assert!(b.try_take(ms(100)));
        // Burst 3 at 1/s: three at once, then one per second; an idle
        // minute refills only to 3.
        let mut b = TokenBucket::new(1.0, 3);
        assert!((0..3).all(|_| b.try_take(ms(0))));
        assert!(!b.try_take(ms(500)));
        assert!(b.try_take(ms(1000)));
        assert_eq!((0..5).filter(|_| b.try_take(ms(61_000))).count(), 3);
        // Time going backwards gives nothing.
        assert!(!b.try_take(ms(30_000)));
    }
}
