//! What the proxy counts, as Prometheus metrics.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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
    /// The hook failed and so did the call (policy Fail).
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: HookOutcome,
}

/// The proxy's counters.
#[derive(Debug, Default)]
pub struct ProxyStats {
    /// CRI calls sent to the runtime.
    pub forwarded: Counter,
    /// CRI calls that could not reach the runtime.
    pub upstream_errors: Counter,
    hooks: Family<OutcomeLabels, Counter>,
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
    }
}
