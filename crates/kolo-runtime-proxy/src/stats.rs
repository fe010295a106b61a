//! What the proxy counts, as Prometheus metrics.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How a pre hook ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelValue)]
pub enum HookOutcome {
    /// The hook changed the request.
    Changed,
    /// The hook answered with no change.
    Unchanged,
    /// The hook failed and the call went on (policy Ignore).
    Ignored,
    /// The pod asked not to be hooked
    /// (`runtimeproxy.koordinator.sh/skip-hookserver: "true"`).
    Skipped,
    /// The hook failed and so did the call (policy Fail).
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: HookOutcome,
}

/// The proxy's counters.
#[derive(Debug)]
pub struct ProxyStats {
    /// CRI calls sent to the runtime.
    pub forwarded: Counter,
    /// CRI calls that could not reach the runtime.
    pub upstream_errors: Counter,
    hooks: Family<OutcomeLabels, Counter>,
    /// How long pre hooks took (answered or failed), seconds.
    pub hook_seconds: Histogram,
}

impl Default for ProxyStats {
    fn default() -> ProxyStats {
        ProxyStats {
            forwarded: Counter::default(),
            upstream_errors: Counter::default(),
            hooks: Family::default(),
            // 50 µs to ~0.8 s: a hook answered from memory to one that
            // hits the timeout.
            hook_seconds: Histogram::new(exponential_buckets(50e-6, 2.0, 15)),
        }
    }
}

impl ProxyStats {
    /// Counts one pre hook.
    pub fn hook(&self, outcome: HookOutcome) {
        self.hooks.get_or_create(&OutcomeLabels { outcome }).inc();
    }

    /// How many pre hooks ended with `outcome`.
    pub fn hooks(&self, outcome: HookOutcome) -> u64 {
        self.hooks.get_or_create(&OutcomeLabels { outcome }).get()
    }

    /// Registers the counters (`kolo_runtime_proxy_*`).
    pub fn register(&self, registry: &mut Registry) {
        let sub = registry.sub_registry_with_prefix("kolo_runtime_proxy");
        sub.register("calls", "CRI calls forwarded to the runtime", self.forwarded.clone());
        sub.register(
            "upstream_errors",
            "CRI calls that could not reach the runtime",
            self.upstream_errors.clone(),
        );
        sub.register("hooks", "Pre hooks by outcome", self.hooks.clone());
        sub.register(
            "hook_seconds",
            "How long pre hooks took, failed ones included",
            self.hook_seconds.clone(),
        );
    }
}

/// Lets a repeated warning through at most once per interval, counting
/// the ones it held back: with the hook server down, every pod and
/// container start would otherwise log one.
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl Throttle {
    /// A throttle letting one through per `every`.
    pub fn new(every: Duration) -> Throttle {
        Throttle { every, state: Mutex::new((None, 0)) }
    }

    /// `Some(held back since the last one)` when this one may be logged.
    pub fn allow(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (last, held) = &mut *state;
        if last.is_some_and(|l| now.duration_since(l) < self.every) {
            *held += 1;
            return None;
        }
        *last = Some(now);
        Some(std::mem::take(held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_lets_one_through_per_interval_and_counts_the_rest() {
        let t = Throttle::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(t.allow(t0), Some(0));
        assert_eq!(t.allow(t0 + Duration::from_secs(1)), None);
        assert_eq!(t.allow(t0 + Duration::from_secs(9)), None);
        assert_eq!(t.allow(t0 + Duration::from_secs(10)), Some(2));
        assert_eq!(t.allow(t0 + Duration::from_secs(11)), None);
    }
}
