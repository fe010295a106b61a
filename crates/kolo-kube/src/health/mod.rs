//! One `/healthz`, `/readyz` and `/metrics` endpoint per process, which
//! every component registers with: the scheduler, the manager and its
//! admission webhooks, and the node agent.
//!
//! A process makes one [`Health`] and serves it ([`serve`] on a tokio
//! runtime it already runs, [`serve_on_thread`] for a component whose loop
//! is a plain thread, like the agent's; [`router`] to add the endpoints to
//! another server, like the webhook's HTTPS one). Each component then adds
//! its readiness ([`Health::add_readiness`]) and its metrics
//! ([`Health::add_metrics`]: a function that appends OpenMetrics text, so
//! collectors that build their text at each scrape fit as well as a
//! prometheus-client `Registry`).
//!
//! * `/healthz` answers 200 while the process serves at all;
//! * `/readyz` answers 200 once the component says it is ready
//!   ([`Health::set_ready`], e.g. its caches synced) and every registered
//!   readiness check passes, else 503 with the reasons;
//! * `/metrics` is the OpenMetrics text of the component's own counters
//!   ([`Health::actions`], [`Health::leader`]) followed by every registered
//!   source, then the process's own CPU, memory, threads and file
//!   descriptors ([`process`]), with one `# EOF` at the end.

pub mod process;
mod server;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

pub use self::server::{router, serve, serve_on_thread, serve_router_on_thread};

/// The labels of [`Health::actions`]: what was done, and how it ended.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// e.g. `bind`, `patch_node_status`, `create_nodemetric`, `evict`.
    pub action: String,
    /// `ok` or `error`.
    pub result: String,
}

/// A readiness check: `Ok` when ready, else why not (`/readyz` says it).
type ReadinessCheck = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// A metrics source: appends OpenMetrics text (a trailing `# EOF` line,
/// which prometheus-client's `encode` writes, is dropped).
type MetricsSource = Box<dyn Fn(&mut String) + Send + Sync>;

/// The OpenMetrics end-of-exposition line.
const EOF: &str = "# EOF\n";

/// A process's readiness and metrics, shared with its HTTP endpoints.
pub struct Health {
    component: &'static str,
    ready: AtomicBool,
    /// API writes by action and result.
    pub actions: Family<ActionLabels, Counter>,
    /// 1 while this instance holds its leader Lease (always 1 without
    /// leader election).
    pub leader: Gauge,
    registry: Registry,
    checks: RwLock<Vec<ReadinessCheck>>,
    sources: RwLock<Vec<MetricsSource>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("component", &self.component)
            .field("ready", &self.is_ready())
            .finish_non_exhaustive()
    }
}

impl Health {
    /// The health of `component` (its own metrics' prefix is
    /// `kolo_<component>`, a `-` in the name written `_`: a metric name
    /// allows no `-`), not ready yet, with no other check or source.
    pub fn new(component: &'static str) -> Arc<Health> {
        let mut registry = Registry::with_prefix(format!("kolo_{}", component.replace('-', "_")));
        let actions = Family::<ActionLabels, Counter>::default();
        let leader = Gauge::default();
        registry.register("actions", "API writes by action and result", actions.clone());
        registry.register("leader", "1 while this instance is the leader", leader.clone());
        Arc::new(Health {
            component,
            ready: AtomicBool::new(false),
            actions,
            leader,
            registry,
            checks: RwLock::new(Vec::new()),
            sources: RwLock::new(Vec::new()),
        })
    }

    /// The component's name.
    pub fn component(&self) -> &'static str {
        self.component
    }

    /// Marks the component ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether the component said it is ready ([`Health::set_ready`]; the
    /// registered checks are not asked: see [`Health::readiness`]).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Adds a readiness check, asked at each `/readyz`: `Ok` when ready,
    /// else why not.
    pub fn add_readiness(&self, check: impl Fn() -> Result<(), String> + Send + Sync + 'static) {
        self.checks.write().unwrap_or_else(PoisonError::into_inner).push(Box::new(check));
    }

    /// Adds a metrics source, asked at each `/metrics`: it appends its
    /// metric families in OpenMetrics text (a prometheus-client
    /// `encode_registry`, or a whole `encode` whose `# EOF` is dropped).
    /// Sources are encoded in the order they were added, after the
    /// component's own metrics; their names must not clash.
    pub fn add_metrics(&self, source: impl Fn(&mut String) + Send + Sync + 'static) {
        self.sources.write().unwrap_or_else(PoisonError::into_inner).push(Box::new(source));
    }

    /// `Ok` when the component said it is ready and every check passes,
    /// else every reason why not.
    pub fn readiness(&self) -> Result<(), Vec<String>> {
        let mut reasons = Vec::new();
        if !self.is_ready() {
            reasons.push(format!("{}: caches not synced yet", self.component));
        }
        let checks = self.checks.read().unwrap_or_else(PoisonError::into_inner);
        reasons.extend(checks.iter().filter_map(|check| check().err()));
        if reasons.is_empty() { Ok(()) } else { Err(reasons) }
    }

    /// Adds a prometheus-client registry as a metrics source.
    pub fn add_registry(&self, registry: Registry) {
        self.add_metrics(move |text| {
            // Writing to a String cannot fail.
            let _ = prometheus_client::encoding::text::encode_registry(text, &registry);
        });
    }

    /// Counts one API write.
    pub fn count<T, E>(&self, action: &str, result: &Result<T, E>) {
        let result = if result.is_ok() { "ok" } else { "error" };
        self.actions
            .get_or_create(&ActionLabels { action: action.into(), result: result.into() })
            .inc();
    }

    /// Every metric in OpenMetrics text format: the component's own, then
    /// each source's, then `# EOF`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode_registry(&mut text, &self.registry);
        let sources = self.sources.read().unwrap_or_else(PoisonError::into_inner);
        for source in sources.iter() {
            source(&mut text);
            if text.ends_with(EOF) {
                text.truncate(text.len() - EOF.len());
            }
        }
        process::encode(&mut text);
        text.push_str(EOF);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_the_component_and_every_check_say_so() {
        let health = Health::new("test");
        let gate = Arc::new(AtomicBool::new(false));
        let check = Arc::clone(&gate);
        health.add_readiness(move || {
            if check.load(Ordering::Relaxed) { Ok(()) } else { Err("gate closed".into()) }
        });
        assert_eq!(
            health.readiness(),
            Err(vec!["test: caches not synced yet".to_string(), "gate closed".to_string()])
        );
        health.set_ready(true);
        assert_eq!(health.readiness(), Err(vec!["gate closed".to_string()]));
        assert!(health.is_ready(), "is_ready is the component's own word");
        gate.store(true, Ordering::Relaxed);
        assert_eq!(health.readiness(), Ok(()));
    }

    #[test]
    fn a_dash_in_the_component_is_no_dash_in_a_metric_name() {
        let text = Health::new("runtime-proxy").encode();
        assert!(text.contains("\nkolo_runtime_proxy_leader 0\n"), "{text}");
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let valid = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
            assert!(valid, "{name} is not a metric name");
        }
    }

    #[test]
    fn sources_follow_the_own_metrics_with_one_eof() {
        let health = Health::new("test");
        health.count("bind", &Ok::<(), ()>(()));
        health.add_metrics(|text: &mut String| {
            text.push_str("# TYPE first gauge\nfirst 1\n# EOF\n");
        });
        health.add_metrics(|text: &mut String| text.push_str("# TYPE second gauge\nsecond 2\n"));
        let text = health.encode();
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
        assert!(text.contains("second 2\n# HELP process_cpu_seconds "), "then the process: {text}");
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} in {text}"));
        assert!(at(r#"kolo_test_actions_total{action="bind",result="ok"} 1"#) < at("first 1"));
        assert!(at("first 1\n# TYPE second") < at("second 2"), "{text}");
    }
}
