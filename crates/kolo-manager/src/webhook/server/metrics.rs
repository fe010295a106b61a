//! The server's Prometheus metrics (`/metrics`, OpenMetrics text format).
//!
//! | metric | labels | meaning |
//! | --- | --- | --- |
//! | `kolo_webhook_requests_total` | `webhook`, `outcome` | requests answered, by outcome |
//! | `kolo_webhook_request_duration_seconds` | `webhook` | time from the request's arrival to its answer (histogram) |
//! | `kolo_webhook_handler_failures_total` | `webhook`, `reason` | decisions that failed and were answered "allowed, unchanged" |
//! | `kolo_webhook_connection_errors_total` | `stage` | connections dropped before or while serving HTTP |
//!
//! `outcome` is one of `unchanged`, `patched`, `allowed`, `denied` (the
//! decision's answer), `ignored` (not a pod, a sub-resource, or no object:
//! allowed without a decision), `failed_open` (the decision panicked,
//! timed out or the pod could not be decoded: allowed, unchanged),
//! `bad_request` (not an AdmissionReview: HTTP 400) and `too_large` (body
//! over the limit: HTTP 413).

use std::fmt::Write as _;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Declares a label-value enum with its Prometheus spelling.
macro_rules! label_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// The label value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl EncodeLabelValue for $name {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                encoder.write_str(self.as_str())
            }
        }
    };
}

label_enum! {
    /// Which webhook a request went to.
    pub enum WebhookKind {
        /// `/mutate-pod`.
        Mutate => "mutate",
        /// `/validate-pod`.
        Validate => "validate",
    }
}

label_enum! {
    /// How a request was answered.
    pub enum Outcome {
        /// Mutation: allowed without a patch.
        Unchanged => "unchanged",
        /// Mutation: allowed with a patch.
        Patched => "patched",
        /// Validation: allowed.
        Allowed => "allowed",
        /// Denied by the decision.
        Denied => "denied",
        /// Not for the webhook (not a pod, a sub-resource, no object):
        /// allowed without a decision.
        Ignored => "ignored",
        /// The decision failed (panic, timeout, undecodable pod): allowed,
        /// unchanged.
        FailedOpen => "failed_open",
        /// Not a readable AdmissionReview: HTTP 400.
        BadRequest => "bad_request",
        /// Body over the size limit: HTTP 413.
        TooLarge => "too_large",
    }
}

label_enum! {
    /// Why a decision failed.
    pub enum FailureReason {
        /// The decision panicked.
        Panic => "panic",
        /// The decision did not finish within the per-request timeout.
        Timeout => "timeout",
        /// `request.object` is not a pod the webhook can read.
        UndecodablePod => "undecodable_pod",
    }
}

label_enum! {
    /// Where a connection failed.
    pub enum ConnectionStage {
        /// The TLS handshake failed or timed out.
        TlsHandshake => "tls_handshake",
        /// HTTP serving failed (malformed HTTP, reset connection).
        Http => "http",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    webhook: WebhookKind,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookLabels {
    webhook: WebhookKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct FailureLabels {
    webhook: WebhookKind,
    reason: FailureReason,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ConnectionLabels {
    stage: ConnectionStage,
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
            "Time from an admission request's arrival to its answer",
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
        for webhook in [WebhookKind::Mutate, WebhookKind::Validate] {
            for outcome in [
                Outcome::Unchanged,
                Outcome::Patched,
                Outcome::Allowed,
                Outcome::Denied,
                Outcome::Ignored,
                Outcome::FailedOpen,
                Outcome::BadRequest,
                Outcome::TooLarge,
            ] {
                let _ = requests.get_or_create(&RequestLabels { webhook, outcome });
            }
            for reason in
                [FailureReason::Panic, FailureReason::Timeout, FailureReason::UndecodablePod]
            {
                let _ = failures.get_or_create(&FailureLabels { webhook, reason });
            }
        }
        for stage in [ConnectionStage::TlsHandshake, ConnectionStage::Http] {
            let _ = connection_errors.get_or_create(&ConnectionLabels { stage });
        }
        WebhookMetrics { registry, requests, duration, failures, connection_errors }
    }

    /// Counts an answered request and its duration.
    pub fn observe_request(&self, webhook: WebhookKind, outcome: Outcome, elapsed: Duration) {
        self.requests.get_or_create(&RequestLabels { webhook, outcome }).inc();
        self.duration.get_or_create(&WebhookLabels { webhook }).observe(elapsed.as_secs_f64());
    }

    /// Counts a failed decision.
    pub fn observe_failure(&self, webhook: WebhookKind, reason: FailureReason) {
        self.failures.get_or_create(&FailureLabels { webhook, reason }).inc();
    }

    /// Counts a failed connection.
    pub fn observe_connection_error(&self, stage: ConnectionStage) {
        self.connection_errors.get_or_create(&ConnectionLabels { stage }).inc();
    }

    /// How many requests were answered with `outcome`.
    pub fn requests(&self, webhook: WebhookKind, outcome: Outcome) -> u64 {
        self.requests.get_or_create(&RequestLabels { webhook, outcome }).get()
    }

    /// How many decisions failed for `reason`.
    pub fn failures(&self, webhook: WebhookKind, reason: FailureReason) -> u64 {
        self.failures.get_or_create(&FailureLabels { webhook, reason }).get()
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
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
        let text = metrics.encode();
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
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
