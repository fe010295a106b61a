//! The admission webhook HTTPS server: the act side of [`mutate_pod`] and
//! [`validate_pod`].
//!
//! HTTP/1.1 over TLS (rustls), served by hyper with an axum router:
//!
//! | path | method | answer |
//! | --- | --- | --- |
//! | `/mutate-pod` | POST | AdmissionReview with a JSON Patch (ClusterColocationProfile mutation) |
//! | `/validate-pod` | POST | AdmissionReview allowing or denying the pod (QoS validation) |
//! | `/healthz`, `/readyz`, `/metrics` | GET | the process's [`Health`] endpoints, when [`Webhook::with_health`] gave one |
//!
//! [`Webhook::with_health`] registers the webhooks' metrics ([`metrics`])
//! and readiness (an [`AdmissionState`] has been provided) with the
//! process's one health endpoint, so they show on its plain-HTTP port as
//! well as here.
//!
//! The server only carries the decisions: the AdmissionReview is decoded
//! ([`kolo_manager::webhook::review`]), decided
//! ([`kolo_manager::webhook::mutate_pod`] and `validate_pod`, through an
//! [`AdmissionHandler`]) and answered ([`kolo_manager::webhook::answer`])
//! by kolo-manager's pure code.
//!
//! **Fail safe.** Every decision runs on tokio's blocking pool under a
//! timeout ([`Limits::decision_timeout`]). If it panics, times out, or the
//! pod in the request cannot be decoded, the answer is "allowed,
//! unchanged" with a warning for the client, an error in the log and a
//! count in `kolo_webhook_handler_failures_total`: a bug in kolo must not
//! stop pods from being created. Validation fails open the same way (the
//! webhook configurations use `failurePolicy: Ignore`, which is the API
//! server's own answer when the webhook is unreachable). A decision that
//! timed out keeps its blocking thread until it returns; it cannot be
//! cancelled.
//!
//! **Bad requests.** A body over [`Limits::max_body_bytes`] gets HTTP 413;
//! a body that is not an AdmissionReview (not JSON, wrong `apiVersion` /
//! `kind`, no `request`, no `uid`) gets HTTP 400 with the reason. The API
//! server treats both as a failed call and applies the webhook's
//! `failurePolicy`. Requests the webhooks do not handle (sub-resources,
//! objects other than pods, DELETE / CONNECT) are allowed unchanged without
//! asking the decision.
//!
//! [`mutate_pod`]: kolo_manager::webhook::mutate_pod
//! [`validate_pod`]: kolo_manager::webhook::validate_pod

pub mod bounds;
pub mod metrics;
pub mod state;
pub mod tls;

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use kolo_manager::webhook::answer::{self, Answer, FailureReason, Outcome, WebhookKind};
use kolo_manager::webhook::review::{self, Review};
use kolo_manager::webhook::{AdmissionState, MutateOutcome, PodAdmission, ValidateOutcome};
use rand::SeedableRng as _;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use self::metrics::{ConnectionStage, WebhookMetrics};
use self::state::SharedState;
use crate::health::{self, Health};

/// The API server's own limit on a request body (3 MiB): no legitimate
/// AdmissionReview is larger.
pub const DEFAULT_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How long a decision may take before the request is answered "allowed,
/// unchanged". Decisions take microseconds; this stays below the smallest
/// `timeoutSeconds` a webhook configuration can set (1 s).
pub const DEFAULT_DECISION_TIMEOUT: Duration = Duration::from_millis(500);

/// The decisions the server asks. [`KoloDecisions`] is the real one; tests
/// inject failing ones to check the fail-safe paths.
pub trait AdmissionHandler: Send + Sync + 'static {
    /// The mutating webhook's decision.
    fn mutate(&self, state: &AdmissionState, request: &PodAdmission) -> MutateOutcome;
    /// The validating webhook's decision.
    fn validate(&self, state: &AdmissionState, request: &PodAdmission) -> ValidateOutcome;
}

/// kolo's decisions: [`kolo_manager::webhook::mutate_pod`] (with a random
/// source seeded from the OS for each request, for profiles'
/// `probability`) and [`kolo_manager::webhook::validate_pod`].
#[derive(Debug, Clone, Copy, Default)]
pub struct KoloDecisions;

impl AdmissionHandler for KoloDecisions {
    fn mutate(&self, state: &AdmissionState, request: &PodAdmission) -> MutateOutcome {
        let mut random = rand::rngs::StdRng::from_os_rng();
        kolo_manager::webhook::mutate_pod(state, request, &mut random)
    }

    fn validate(&self, _state: &AdmissionState, request: &PodAdmission) -> ValidateOutcome {
        kolo_manager::webhook::validate_pod(request)
    }
}

/// The server's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted request body; larger ones get HTTP 413.
    pub max_body_bytes: usize,
    /// How long a decision may run (see the module docs).
    pub decision_timeout: Duration,
    /// How long a client has to complete the TLS handshake.
    pub handshake_timeout: Duration,
    /// How long a graceful shutdown waits for open connections to finish
    /// their requests.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            decision_timeout: DEFAULT_DECISION_TIMEOUT,
            handshake_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// The webhooks: the state they decide with, the decisions, the metrics,
/// the limits and the health endpoint they registered with.
/// [`Webhook::router`] serves them over any transport; [`WebhookServer`]
/// serves them over TLS.
#[derive(Clone)]
pub struct Webhook {
    state: SharedState,
    handler: Arc<dyn AdmissionHandler>,
    metrics: Arc<WebhookMetrics>,
    limits: Limits,
    health: Option<Arc<Health>>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Webhook {
    /// kolo's decisions on `state`, default limits, fresh metrics.
    pub fn new(state: SharedState) -> Webhook {
        Webhook {
            state,
            handler: Arc::new(KoloDecisions),
            metrics: Arc::new(WebhookMetrics::new()),
            limits: Limits::default(),
            health: None,
        }
    }

    /// Uses `handler` instead of kolo's decisions.
    pub fn with_handler(mut self, handler: Arc<dyn AdmissionHandler>) -> Webhook {
        self.handler = handler;
        self
    }

    /// Uses `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Webhook {
        self.limits = limits;
        self
    }

    /// Registers the webhooks' metrics and readiness (ready once an
    /// admission state has been provided) with the process's `health`, and
    /// serves its `/healthz`, `/readyz` and `/metrics` beside the webhooks.
    /// Call it once per `health`.
    pub fn with_health(mut self, health: Arc<Health>) -> Webhook {
        let metrics = Arc::clone(&self.metrics);
        health.add_metrics(move |text: &mut String| metrics.encode_into(text));
        let state = self.state.clone();
        health.add_readiness(move || state.readiness());
        self.health = Some(health);
        self
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The metrics (shared with the server).
    pub fn metrics(&self) -> Arc<WebhookMetrics> {
        Arc::clone(&self.metrics)
    }

    /// The state (shared with the server: replacing it changes what the
    /// next requests are decided with).
    pub fn state(&self) -> SharedState {
        self.state.clone()
    }

    /// The HTTP routes (see the module docs).
    pub fn router(&self) -> Router {
        let app = Arc::new(self.clone());
        let admission = Router::new()
            .route(
                "/mutate-pod",
                post(|State(app): State<Arc<Webhook>>, request: Request| async move {
                    app.admit(WebhookKind::Mutate, request).await
                }),
            )
            .route(
                "/validate-pod",
                post(|State(app): State<Arc<Webhook>>, request: Request| async move {
                    app.admit(WebhookKind::Validate, request).await
                }),
            )
            .with_state(app);
        match &self.health {
            Some(health) => admission.merge(health::router(Arc::clone(health))),
            None => admission,
        }
    }

    /// Reads the body, then answers; the request-duration histogram times
    /// the answer only, from the moment the whole body is in: a client
    /// that sends its body slowly does not count as decision time. A
    /// request refused while reading its body counts with a duration of 0.
    async fn admit(&self, webhook: WebhookKind, request: Request) -> Response {
        let body = match read_body(request, self.limits.max_body_bytes).await {
            Ok(body) => body,
            Err(error) => {
                let (outcome, response) = refuse_body(webhook, error);
                self.metrics.observe_request(webhook, outcome, Duration::ZERO);
                return response;
            }
        };
        let start = Instant::now();
        let (outcome, response) = self.answer(webhook, body).await;
        self.metrics.observe_request(webhook, outcome, start.elapsed());
        response
    }

    async fn answer(&self, webhook: WebhookKind, body: Bytes) -> (Outcome, Response) {
        let review = match review::decode_review(&body) {
            Ok(review) => review,
            Err(error) => {
                tracing::warn!(webhook = webhook.as_str(), %error, "bad admission request");
                return (
                    Outcome::BadRequest,
                    (StatusCode::BAD_REQUEST, format!("{error}\n")).into_response(),
                );
            }
        };
        drop(body);
        if let Some(skip) = review::skip_reason(&review.request) {
            tracing::debug!(
                webhook = webhook.as_str(),
                uid = %review.request.uid,
                ?skip,
                "allowed without a decision"
            );
            return json_answer(answer::skipped(&review));
        }

        let (api_version, uid) = (review.api_version, review.request.uid.clone());
        let state = self.state.current();
        let handler = Arc::clone(&self.handler);
        let task = tokio::task::spawn_blocking(move || decide(webhook, &*handler, &state, &review));
        let failure = match tokio::time::timeout(self.limits.decision_timeout, task).await {
            Ok(Ok(Ok(answer))) => {
                tracing::debug!(webhook = webhook.as_str(), %uid, outcome = ?answer.outcome, "answered");
                return json_answer(answer);
            }
            Ok(Ok(Err(message))) => {
                tracing::error!(
                    webhook = webhook.as_str(),
                    %uid,
                    "cannot read the pod, allowing it unchanged: {message}"
                );
                FailureReason::UndecodablePod
            }
            Ok(Err(join_error)) => {
                let message = if join_error.is_panic() {
                    panic_message(join_error.into_panic())
                } else {
                    "the decision task was cancelled".to_string()
                };
                tracing::error!(
                    webhook = webhook.as_str(),
                    %uid,
                    "the decision panicked, allowing the pod unchanged: {message}"
                );
                FailureReason::Panic
            }
            Err(_elapsed) => {
                tracing::error!(
                    webhook = webhook.as_str(),
                    %uid,
                    timeout_ms = self.limits.decision_timeout.as_millis() as u64,
                    "the decision timed out, allowing the pod unchanged"
                );
                FailureReason::Timeout
            }
        };
        self.metrics.observe_failure(webhook, failure);
        json_answer(answer::failed_open(api_version, &uid, webhook, failure))
    }
}

/// Decodes the pod(s) and asks the decision; runs on the blocking pool.
fn decide(
    webhook: WebhookKind,
    handler: &dyn AdmissionHandler,
    state: &AdmissionState,
    review: &Review,
) -> Result<Answer, String> {
    let admission = review::pod_admission(&review.request)?;
    Ok(match webhook {
        WebhookKind::Mutate => answer::mutation_answer(review, &handler.mutate(state, &admission)),
        WebhookKind::Validate => {
            answer::validation_answer(review, &handler.validate(state, &admission))
        }
    })
}

fn panic_message(payload: Box<dyn Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(message) => (*message).to_string(),
            Err(_) => "<non-string panic payload>".to_string(),
        },
    }
}

fn json_answer(answer: Answer) -> (Outcome, Response) {
    let mut response = Response::new(Body::from(answer.body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    (answer.outcome, response)
}

enum BodyError {
    TooLarge(String),
    Read(String),
}

/// The answer to a body that could not be read: logged on one line, sent
/// back with a final newline.
fn refuse_body(webhook: WebhookKind, error: BodyError) -> (Outcome, Response) {
    match error {
        BodyError::TooLarge(message) => {
            tracing::warn!(webhook = webhook.as_str(), "{message}");
            let response = (StatusCode::PAYLOAD_TOO_LARGE, format!("{message}\n"));
            (Outcome::TooLarge, response.into_response())
        }
        BodyError::Read(message) => {
            tracing::warn!(webhook = webhook.as_str(), "reading the request body: {message}");
            let response =
                (StatusCode::BAD_REQUEST, format!("reading the request body: {message}\n"));
            (Outcome::BadRequest, response.into_response())
        }
    }
}

/// Reads a request body of at most `limit` bytes, refusing a larger one as
/// soon as its `Content-Length` (or the bytes received) say so.
async fn read_body(request: Request, limit: usize) -> Result<Bytes, BodyError> {
    let too_large = |size: String| {
        BodyError::TooLarge(format!(
            "request body of {size} bytes is over the limit of {limit} bytes"
        ))
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(length) = declared
        && length > limit as u64
    {
        return Err(too_large(length.to_string()));
    }
    let mut body = request.into_body();
    let mut buffer = Vec::with_capacity(declared.unwrap_or(0).min(limit as u64) as usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buffer.len() + data.len() > limit {
                return Err(too_large(format!("more than {}", buffer.len() + data.len() - 1)));
            }
            buffer.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buffer))
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The webhooks served over HTTPS on a bound socket.
pub struct WebhookServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    tls: TlsAcceptor,
    webhook: Webhook,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("local_addr", &self.local_addr)
            .field("webhook", &self.webhook)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// Binds `addr` (port 0 picks a free port; see
    /// [`WebhookServer::local_addr`]). `tls` is usually
    /// [`tls::server_config`].
    pub async fn bind(
        addr: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        webhook: Webhook,
    ) -> Result<WebhookServer, ServerError> {
        let bind_error = |source| ServerError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        Ok(WebhookServer { listener, local_addr, tls: TlsAcceptor::from(tls), webhook })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` completes, then stops accepting connections,
    /// lets open ones finish their current request (up to
    /// [`Limits::shutdown_grace`]) and returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) {
        let WebhookServer { listener, local_addr, tls, webhook } = self;
        let limits = webhook.limits();
        let metrics = webhook.metrics();
        let service = TowerToHyperService::new(webhook.router());
        let graceful = GracefulShutdown::new();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new()).keep_alive(true);
        tracing::info!(%local_addr, "admission webhook server listening (HTTPS)");
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait a
                        // little rather than spin, and keep serving.
                        tracing::warn!(%error, "accepting a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let (tls, service, http, metrics) =
                (tls.clone(), service.clone(), http.clone(), Arc::clone(&metrics));
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let stream = match tokio::time::timeout(
                    limits.handshake_timeout,
                    tls.accept(stream),
                )
                .await
                {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(error)) => {
                        tracing::debug!(%peer, %error, "TLS handshake failed");
                        metrics.observe_connection_error(ConnectionStage::TlsHandshake);
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        metrics.observe_connection_error(ConnectionStage::TlsHandshake);
                        return;
                    }
                };
                let connection = http.serve_connection(TokioIo::new(stream), service);
                if let Err(error) = watcher.watch(connection).await {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                    metrics.observe_connection_error(ConnectionStage::Http);
                }
            });
        }
        drop(listener);
        tracing::info!(
            connections = graceful.count(),
            "shutting down the admission webhook server"
        );
        if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
            tracing::warn!("open connections did not finish within the shutdown grace period");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhooks_join_the_health_endpoint_of_the_process() {
        // As in `kolo manager run --webhook-listen`: the manager's health.
        let health = Health::new("manager");
        health.set_ready(true);
        let state = SharedState::pending();
        let webhook = Webhook::new(state.clone()).with_health(Arc::clone(&health));
        assert_eq!(
            health.readiness(),
            Err(vec!["admission webhook: no admission state yet".to_string()])
        );
        state.replace(AdmissionState::default());
        assert_eq!(health.readiness(), Ok(()));

        webhook.metrics().observe_request(
            WebhookKind::Mutate,
            Outcome::Patched,
            Duration::from_micros(80),
        );
        let text = health.encode();
        for line in [
            "kolo_manager_leader 0",
            r#"kolo_webhook_requests_total{webhook="mutate",outcome="patched"} 1"#,
            r#"kolo_webhook_connection_errors_total{stage="tls_handshake"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
        }
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
    }

    /// The `_sum` of the request-duration histogram of `webhook`.
    fn duration_sum(health: &Health, webhook: &str) -> f64 {
        let prefix = format!("kolo_webhook_request_duration_seconds_sum{{webhook=\"{webhook}\"}} ");
        let text = health.encode();
        let line =
            text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{text}"));
        line[prefix.len()..].parse().unwrap()
    }

    #[tokio::test]
    async fn a_slow_body_is_not_decision_time_and_413_logs_one_line() {
        use tower::ServiceExt as _;
        let health = Health::new("webhook");
        let limits = Limits { max_body_bytes: 4096, ..Limits::default() };
        let webhook = Webhook::new(SharedState::new(AdmissionState::default()))
            .with_limits(limits)
            .with_health(Arc::clone(&health));
        // A body sent in two halves 300 ms apart (not an AdmissionReview:
        // the answer is a fast 400).
        let chunks = futures::stream::unfold(0, |n| async move {
            match n {
                0 => Some((Ok::<_, std::io::Error>(Bytes::from_static(b"{")), 1)),
                1 => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    Some((Ok(Bytes::from_static(b"}")), 2))
                }
                _ => None,
            }
        });
        let request = axum::http::Request::post("/mutate-pod")
            .body(axum::body::Body::from_stream(chunks))
            .unwrap();
        let response = webhook.router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let sum = duration_sum(&health, "mutate");
        assert!(sum < 0.1, "the 300 ms upload counted as decision time: {sum} s");

        // Too large: refused with one log line (no newline in the message)
        // and a body that ends in one.
        let error = read_body(
            axum::http::Request::post("/").body(axum::body::Body::from(vec![b'x'; 5000])).unwrap(),
            4096,
        )
        .await
        .unwrap_err();
        let BodyError::TooLarge(message) = error else { panic!("not TooLarge") };
        assert!(!message.contains('\n'), "{message:?}");
        let request = axum::http::Request::post("/validate-pod")
            .body(axum::body::Body::from(vec![b'x'; 5000]))
            .unwrap();
        let response = webhook.router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert!(body.ends_with(b" bytes\n") && !body[..body.len() - 1].contains(&b'\n'));
    }
}
