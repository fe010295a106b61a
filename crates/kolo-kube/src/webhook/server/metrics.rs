//! The server's Prometheus metrics (OpenMetrics text format), served by
//! the process's health endpoint ([`super::Webhook::with_health`]).
//!
//! | metric | labels | meaning |
//! | --- | --- | --- |
//! | `kolo_webhook_requests_total` | `webhook`, `outcome` | requests answered, by outcome |
//! | `kolo_webhook_request_duration_seconds` | `webhook` | time from the whole request body read to its answer (histogram; a slow upload is not counted) |
//! | `kolo_webhook_handler_failures_total` | `webhook`, `reason` | decisions that failed and were answered "allowed, unchanged" |
//! | `kolo_webhook_connection_errors_total` | `stage` | connections dropped before or while serving HTTP |
//!
//! `outcome` is one of `unchanged`, `patched`, `allowed`, `denied` (the
//! decision's answer), `ignored` (not a pod, a sub-resource, or no object:
//! allowed without a decision), `failed_open` (the decision panicked,
//! timed out or the pod could not be decoded: allowed, unchanged),
//! `bad_request` (not an AdmissionReview: HTTP 400) and `too_large` (body
//! over the limit: HTTP 413).

use std::time::Duration;

use kolo_manager::webhook::answer::{FailureReason, Outcome, WebhookKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Where a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionStage {
    /// The TLS handshake failed or timed out.
    TlsHandshake,
    /// HTTP serving failed (malformed HTTP, reset connection).
    Http,
}

impl ConnectionStage {
    /// Every stage.
    pub const ALL: [ConnectionStage; 2] = [ConnectionStage::TlsHandshake, ConnectionStage::Http];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionStage::TlsHandshake => "tls_handshake",
            ConnectionStage::Http => "http",
        }
    }
}

// The label sets hold the label values ([`WebhookKind::as_str`] and the
// like): the kinds are kolo-manager's, and a series key is only ever built
// from them.

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    webhook: &'static str,
    outcome: &'static str,
}

impl RequestLabels {
    fn new(webhook: WebhookKind, outcome: Outcome) -> RequestLabels {
        RequestLabels { webhook: webhook.as_str(), outcome: outcome.as_str() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookLabels {
    webhook: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FailureLabels {
    webhook: &'static str,
    reason: &'static str,
}

impl FailureLabels {
    fn new(webhook: WebhookKind, reason: FailureReason) -> FailureLabels {
        FailureLabels { webhook: webhook.as_str(), reason: reason.as_str() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ConnectionLabels {
    stage: &'static str,
}

type HistogramFamily = Family<WebhookLabels, Histogram, fn() -> Histogram>;

/// The webhook server's metrics and their registry.
#[derive(Debug)]
pub struct WebhookMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: HistogramFamily,
    failures: Family<FailureLabels, Counter>,
    connection_errors: Family<ConnectionLabels, Counter>,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        WebhookMetrics::new()
    }
}

fn duration_histogram() -> Histogram {
    // 25 µs .. ~0.8 s: the decision itself takes microseconds; the top
    // buckets catch timeouts.
    Histogram::new(exponential_buckets(25e-6, 2.0, 16))
}

impl WebhookMetrics {
    /// Registers every metric, all at zero.
    pub fn new() -> WebhookMetrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "kolo_webhook_requests",
            "Admission requests answered, by webhook and outcome",
            requests.clone(),
        );
        let duration: HistogramFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "kolo_webhook_request_duration_seconds",
            "Time from an admission request's whole body read to its answer",
            duration.clone(),
        );
        let failures = Family::<FailureLabels, Counter>::default();
        registry.register(
            "kolo_webhook_handler_failures",
            "Decisions that failed (answered allowed and unchanged), by reason",
            failures.clone(),
        );
        let connection_errors = Family::<ConnectionLabels, Counter>::default();
        registry.register(
            "kolo_webhook_connection_errors",
            "Connections that failed, by stage",
            connection_errors.clone(),
        );
        // Every counter series exists from the start, at zero, so that
        // rates and alerts on them work before the first event.
        for &webhook in WebhookKind::ALL {
            for &outcome in Outcome::ALL {
                let _ = requests.get_or_create(&RequestLabels::new(webhook, outcome));
            }
            for &reason in FailureReason::ALL {
                let _ = failures.get_or_create(&FailureLabels::new(webhook, reason));
            }
        }
        for stage in ConnectionStage::ALL {
            let _ = connection_errors.get_or_create(&ConnectionLabels { stage: stage.as_str() });
        }
        WebhookMetrics { registry, requests, duration, failures, connection_errors }
    }

    /// Counts an answered request and its duration.
    pub fn observe_request(&self, webhook: WebhookKind, outcome: Outcome, elapsed: Duration) {
        self.requests.get_or_create(&RequestLabels::new(webhook, outcome)).inc();
        let labels = WebhookLabels { webhook: webhook.as_str() };
        self.duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// Counts a failed decision.
    pub fn observe_failure(&self, webhook: WebhookKind, reason: FailureReason) {
        self.failures.get_or_create(&FailureLabels::new(webhook, reason)).inc();
    }

    /// Counts a failed connection.
    pub fn observe_connection_error(&self, stage: ConnectionStage) {
        self.connection_errors.get_or_create(&ConnectionLabels { stage: stage.as_str() }).inc();
    }

    /// How many requests were answered with `outcome`.
    pub fn requests(&self, webhook: WebhookKind, outcome: Outcome) -> u64 {
        self.requests.get_or_create(&RequestLabels::new(webhook, outcome)).get()
    }

    /// How many decisions failed for `reason`.
    pub fn failures(&self, webhook: WebhookKind, reason: FailureReason) -> u64 {
        self.failures.get_or_create(&FailureLabels::new(webhook, reason)).get()
    }

    /// Appends the metric families in OpenMetrics text format, without
    /// the closing `# EOF` (the process's [`crate::health::Health`] writes
    /// it after every source).
    pub fn encode_into(&self, text: &mut String) {
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode_registry(text, &self.registry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_show_in_the_text_format() {
        let metrics = WebhookMetrics::new();
        metrics.observe_request(WebhookKind::Mutate, Outcome::Patched, Duration::from_micros(80));
        metrics.observe_failure(WebhookKind::Validate, FailureReason::Timeout);
        let mut text = String::new();
        metrics.encode_into(&mut text);
        assert!(
            text.contains(r#"kolo_webhook_requests_total{webhook="mutate",outcome="patched"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"kolo_webhook_handler_failures_total{webhook="validate",reason="timeout"} 1"#
            ),
            "{text}"
        );
        // 80 µs falls in the 100 µs bucket (25, 50, 100, ...).
        assert!(
            text.contains(
                r#"kolo_webhook_request_duration_seconds_bucket{le="0.0001",webhook="mutate"} 1"#
            ) || text.contains(
                r#"kolo_webhook_request_duration_seconds_bucket{webhook="mutate",le="0.0001"} 1"#
            ),
            "{text}"
        );
        assert_eq!(metrics.requests(WebhookKind::Mutate, Outcome::Patched), 1);
        // Series that saw no event are there at zero.
        assert!(
            text.contains(
                r#"kolo_webhook_handler_failures_total{webhook="mutate",reason="panic"} 0"#
            ),
            "{text}"
        );
    }
}
