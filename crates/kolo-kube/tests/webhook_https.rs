//! The admission webhook server over real HTTPS on loopback: certificates
//! generated at start, a rustls client trusting only the generated CA,
//! AdmissionReview v1 bodies as the API server sends them, and the answer's
//! JSON Patch applied to the pod.
//!
//! The server registers with a [`Health`] as `kolo manager webhook` does,
//! so `/healthz`, `/readyz` and `/metrics` are the process's one health
//! endpoint, served beside the webhooks.
//!
//! Most tests inject their own decisions ([`AdmissionHandler`]) so they
//! check the server alone (patch transport, denial shape, fail-safe paths,
//! limits, metrics). Two check kolo's real decisions end to end:
//! `real_mutation_applies_the_matching_profile` and
//! `real_validation_denies_batch_resources_without_qos_be`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use base64::Engine as _;
use http_body_util::BodyExt as _;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kolo_core::snapshot::Snapshot;
use kolo_kube::health::Health;
use kolo_kube::webhook::server::metrics::WebhookMetrics;
use kolo_kube::webhook::server::state::SharedState;
use kolo_kube::webhook::server::tls::{self, CertResolver, SelfSignedOptions};
use kolo_kube::webhook::server::{AdmissionHandler, Limits, Webhook, WebhookServer};
use kolo_manager::webhook::answer::{FailureReason, Outcome, WebhookKind};
use kolo_manager::webhook::{AdmissionState, MutateOutcome, PodAdmission, ValidateOutcome};
use rustls::pki_types::ServerName;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;

const POD: &str = include_str!("fixtures/deployment-pod.json");

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The 20 profiles, PriorityClasses and the pod's namespace.
fn profiles_state() -> AdmissionState {
    AdmissionState::from_snapshot(&Snapshot::load(&fixtures().join("profiles.yaml")).unwrap())
}

fn pod() -> Value {
    serde_json::from_str(POD).unwrap()
}

/// An AdmissionReview v1 for creating `pod`, as the API server sends it.
fn review(uid: &str, pod: &Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "",
            "namespace": "shop",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                         "groups": ["system:serviceaccounts", "system:authenticated"]},
            "object": pod,
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    })
}

struct TestServer {
    addr: SocketAddr,
    ca_pem: String,
    metrics: Arc<WebhookMetrics>,
    /// The process's health endpoint the webhook registered with, as
    /// `kolo manager webhook` makes it.
    health: Arc<Health>,
    shutdown: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    async fn start(webhook: Webhook) -> TestServer {
        let generated = tls::generate_self_signed(&SelfSignedOptions::default()).unwrap();
        let resolver = CertResolver::new(generated.certified_key().unwrap());
        TestServer::start_with(webhook, resolver, generated.ca_cert_pem).await
    }

    async fn start_with(
        webhook: Webhook,
        resolver: Arc<CertResolver>,
        ca_pem: String,
    ) -> TestServer {
        let metrics = webhook.metrics();
        let health = Health::new("webhook");
        health.set_ready(true);
        let webhook = webhook.with_health(Arc::clone(&health));
        let config = tls::server_config(resolver).unwrap();
        let server =
            WebhookServer::bind("127.0.0.1:0".parse().unwrap(), config, webhook).await.unwrap();
        let addr = server.local_addr();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.serve(async move {
            let _ = rx.await;
        }));
        TestServer { addr, ca_pem, metrics, health, shutdown: Some(tx), task }
    }

    async fn tls_stream(&self) -> tokio_rustls::client::TlsStream<TcpStream> {
        connect(self.addr, &self.ca_pem).await.unwrap()
    }

    /// One request on a fresh connection: status, content type and body.
    async fn send(&self, method: &str, path: &str, body: Vec<u8>) -> (StatusCode, String, Vec<u8>) {
        let stream = self.tls_stream().await;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        let request = Request::builder()
            .method(method)
            .uri(format!("https://127.0.0.1:{}{path}", self.addr.port()))
            .header("host", format!("127.0.0.1:{}", self.addr.port()))
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        (status, content_type, body)
    }

    /// Posts an AdmissionReview and returns the answer's `response`.
    async fn admit(&self, path: &str, review: &Value) -> Value {
        let (status, content_type, body) =
            self.send("POST", path, review.to_string().into_bytes()).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        assert_eq!(content_type, "application/json");
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(answer["response"]["uid"], review["request"]["uid"]);
        answer["response"].clone()
    }

    async fn metrics_text(&self) -> String {
        let (status, content_type, body) = self.send("GET", "/metrics", Vec::new()).await;
        assert_eq!(status, StatusCode::OK);
        assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
        String::from_utf8(body).unwrap()
    }

    /// Asserts that `/metrics` now holds `line`, whole.
    async fn assert_metric(&self, line: &str) {
        let text = self.metrics_text().await;
        assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
    }

    async fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), &mut self.task)
            .await
            .expect("the server stops within the grace period")
            .unwrap();
    }
}

async fn connect(
    addr: SocketAddr,
    ca_pem: &str,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let connector = TlsConnector::from(tls::client_config(ca_pem.as_bytes()).unwrap());
    let tcp = TcpStream::connect(addr).await?;
    // The API server dials the URL's host: the certificate must name the IP.
    connector.connect(ServerName::try_from("127.0.0.1").unwrap().to_owned(), tcp).await
}

/// Applies a response's base64 JSON Patch to `pod`.
fn apply_patch(response: &Value, pod: &Value) -> Value {
    assert_eq!(response["patchType"], "JSONPatch", "{response}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("patch is a base64 string"))
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    let mut patched = pod.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    patched
}

/// Decisions injected by a test.
struct Injected {
    mutate: Box<dyn Fn(&PodAdmission) -> MutateOutcome + Send + Sync>,
    validate: Box<dyn Fn(&PodAdmission) -> ValidateOutcome + Send + Sync>,
    calls: AtomicUsize,
}

impl Injected {
    fn new(
        mutate: impl Fn(&PodAdmission) -> MutateOutcome + Send + Sync + 'static,
        validate: impl Fn(&PodAdmission) -> ValidateOutcome + Send + Sync + 'static,
    ) -> Arc<Injected> {
        Arc::new(Injected {
            mutate: Box::new(mutate),
            validate: Box::new(validate),
            calls: AtomicUsize::new(0),
        })
    }
}

impl AdmissionHandler for Injected {
    fn mutate(&self, _state: &AdmissionState, request: &PodAdmission) -> MutateOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        (self.mutate)(request)
    }

    fn validate(&self, _state: &AdmissionState, request: &PodAdmission) -> ValidateOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        (self.validate)(request)
    }
}

/// A mutation that adds a label and sets the scheduler, with the patch
/// computed as the real decision does (from the pod to the mutated pod).
fn label_mutation(request: &PodAdmission) -> MutateOutcome {
    let mut pod = request.pod.clone();
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert("injected".into(), request.namespace.clone());
    pod.spec.as_mut().unwrap().scheduler_name = Some("kolo-scheduler".into());
    let before = serde_json::to_value(&request.pod).unwrap();
    let after = serde_json::to_value(&pod).unwrap();
    MutateOutcome::Patched {
        patch: json_patch::diff(&before, &after),
        pod: Box::new(pod),
        applied_profiles: vec!["injected-profile".into()],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_travel_as_base64_json_patch_and_apply_to_the_pod() {
    let handler = Injected::new(label_mutation, |_| ValidateOutcome::Allowed);
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default())).with_handler(handler),
    )
    .await;
    let pod = pod();
    let response = server.admit("/mutate-pod", &review("uid-1", &pod)).await;
    assert_eq!(response["allowed"], true);
    assert_eq!(response["auditAnnotations"], json!({"applied-profiles": "injected-profile"}));
    let patched = apply_patch(&response, &pod);
    assert_eq!(patched["metadata"]["labels"]["injected"], "shop", "namespace from the request");
    assert_eq!(patched["spec"]["schedulerName"], "kolo-scheduler");
    // Nothing else changed.
    let mut expected = pod.clone();
    expected["metadata"]["labels"]["injected"] = json!("shop");
    expected["spec"]["schedulerName"] = json!("kolo-scheduler");
    assert_eq!(patched, expected);
    // The patched pod is still a valid pod.
    serde_json::from_value::<Pod>(patched).unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials_carry_403_and_every_message() {
    let handler = Injected::new(
        |_| MutateOutcome::Denied("priorityClassName koord-missing: no such PriorityClass".into()),
        |_| {
            ValidateOutcome::Denied(vec![
                "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with koordinator colocation resources".into(),
                "Pod: Forbidden: koordinator.sh/qosClass=LS and priorityClass=koord-batch cannot be used in combination".into(),
            ])
        },
    );
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default())).with_handler(handler),
    )
    .await;
    let response = server.admit("/validate-pod", &review("uid-v", &pod())).await;
    assert_eq!(response["allowed"], false);
    assert!(response.get("patch").is_none());
    let status = &response["status"];
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with koordinator colocation resources; \
         Pod: Forbidden: koordinator.sh/qosClass=LS and priorityClass=koord-batch cannot be used in combination"
    );
    assert_eq!(status["details"]["causes"].as_array().unwrap().len(), 2);

    let response = server.admit("/mutate-pod", &review("uid-m", &pod())).await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(
        response["status"]["message"],
        "priorityClassName koord-missing: no such PriorityClass"
    );
    assert_eq!(server.metrics.requests(WebhookKind::Validate, Outcome::Denied), 1);
    assert_eq!(server.metrics.requests(WebhookKind::Mutate, Outcome::Denied), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_decision_answers_allowed_unchanged_and_is_counted() {
    let handler =
        Injected::new(|_| panic!("injected mutation bug"), |_| panic!("injected validation bug"));
    // A generous decision timeout: the panic hook prints a backtrace when
    // RUST_BACKTRACE is set, and symbolising the first one in a debug test
    // binary can take longer than the default 500 ms on a busy machine —
    // the panic then reads as a timeout (seen once in CI).
    let limits = Limits { decision_timeout: Duration::from_secs(30), ..Limits::default() };
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default()))
            .with_handler(handler)
            .with_limits(limits),
    )
    .await;
    for (path, webhook) in
        [("/mutate-pod", WebhookKind::Mutate), ("/validate-pod", WebhookKind::Validate)]
    {
        let response = server.admit(path, &review("uid-p", &pod())).await;
        assert_eq!(response["allowed"], true, "{response}");
        assert!(response.get("patch").is_none(), "{response}");
        assert!(response.get("status").is_none(), "{response}");
        assert!(response["warnings"][0].as_str().unwrap().ends_with("(panic)"), "{response}");
        assert_eq!(server.metrics.failures(webhook, FailureReason::Panic), 1);
        assert_eq!(server.metrics.requests(webhook, Outcome::FailedOpen), 1);
    }
    // Still serving.
    let (status, _, body) = server.send("GET", "/healthz", Vec::new()).await;
    assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"ok\n"[..]));
    server
        .assert_metric(r#"kolo_webhook_handler_failures_total{webhook="mutate",reason="panic"} 1"#)
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_decision_times_out_allowed_unchanged() {
    let handler = Injected::new(
        |request| {
            std::thread::sleep(Duration::from_secs(2));
            label_mutation(request)
        },
        |_| {
            std::thread::sleep(Duration::from_secs(2));
            ValidateOutcome::Denied(vec!["too late to matter".into()])
        },
    );
    let limits = Limits { decision_timeout: Duration::from_millis(100), ..Limits::default() };
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default()))
            .with_handler(handler)
            .with_limits(limits),
    )
    .await;
    for (path, webhook) in
        [("/mutate-pod", WebhookKind::Mutate), ("/validate-pod", WebhookKind::Validate)]
    {
        let start = Instant::now();
        let response = server.admit(path, &review("uid-t", &pod())).await;
        let elapsed = start.elapsed();
        assert!(elapsed < Duration::from_millis(1500), "answered after {elapsed:?}");
        assert_eq!(response["allowed"], true, "{response}");
        assert!(response.get("patch").is_none(), "{response}");
        assert!(response["warnings"][0].as_str().unwrap().ends_with("(timeout)"), "{response}");
        assert_eq!(server.metrics.failures(webhook, FailureReason::Timeout), 1);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_bodies_get_413_and_are_counted() {
    let limits = Limits { max_body_bytes: 64 * 1024, ..Limits::default() };
    let handler = Injected::new(label_mutation, |_| ValidateOutcome::Allowed);
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default()))
            .with_handler(handler.clone())
            .with_limits(limits),
    )
    .await;
    // A pod with a 100 KiB annotation: over the limit, declared by
    // Content-Length.
    let mut big = pod();
    big["metadata"]["annotations"]["filler"] = json!("x".repeat(100 * 1024));
    // Written raw: the server answers 413 as soon as it sees the header and
    // may close before the client has written the whole body, which a
    // high-level client reports as a broken pipe instead of the answer.
    let body = review("uid-big", &big).to_string();
    let mut stream = server.tls_stream().await;
    let mut request = format!(
        "POST /mutate-pod HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body.as_bytes());
    let _ = stream.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert!(answer.contains("over the limit of 65536 bytes"), "{answer}");

    // The same body chunked, without Content-Length: refused while reading.
    let body = review("uid-big", &big).to_string();
    let mut stream = server.tls_stream().await;
    let mut request = b"POST /validate-pod HTTP/1.1\r\nhost: localhost\r\n\
        content-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        .to_vec();
    for chunk in body.as_bytes().chunks(16 * 1024) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer and close before reading everything.
    let _ = stream.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");

    assert_eq!(server.metrics.requests(WebhookKind::Mutate, Outcome::TooLarge), 1);
    assert_eq!(server.metrics.requests(WebhookKind::Validate, Outcome::TooLarge), 1);
    assert_eq!(handler.calls.load(Ordering::SeqCst), 0);
    // A normal pod still fits.
    let response = server.admit("/mutate-pod", &review("uid-ok", &pod())).await;
    assert_eq!(response["allowed"], true);
    assert!(response["patch"].is_string());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_reviews_get_400_with_the_reason() {
    let handler = Injected::new(label_mutation, |_| ValidateOutcome::Allowed);
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default())).with_handler(handler.clone()),
    )
    .await;
    let mut no_uid = review("x", &pod());
    no_uid["request"].as_object_mut().unwrap().remove("uid");
    let cases: [(Vec<u8>, &str); 4] = [
        (b"{not json".to_vec(), "not an AdmissionReview: "),
        (no_uid.to_string().into_bytes(), "not an AdmissionReview: request: missing field `uid`"),
        (
            json!({"apiVersion": "v1", "kind": "Pod"}).to_string().into_bytes(),
            "apiVersion \"v1\" is not admission.k8s.io/v1",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
                .to_string()
                .into_bytes(),
            "the AdmissionReview has no request",
        ),
    ];
    for (body, expected) in cases {
        let (status, _, answer) = server.send("POST", "/mutate-pod", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let answer = String::from_utf8(answer).unwrap();
        assert!(answer.starts_with(expected), "{answer:?} should start with {expected:?}");
    }
    assert_eq!(server.metrics.requests(WebhookKind::Mutate, Outcome::BadRequest), 4);

    // A readable review whose pod is not a pod kolo can read: allowed,
    // unchanged (the uid is known, so the answer is a proper review).
    let mut bad_pod = pod();
    bad_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!({"not": "a quantity"});
    let response = server.admit("/mutate-pod", &review("uid-bad-pod", &bad_pod)).await;
    assert_eq!(response["allowed"], true);
    assert!(response.get("patch").is_none());
    assert!(response["warnings"][0].as_str().unwrap().ends_with("(undecodable_pod)"));
    assert_eq!(server.metrics.failures(WebhookKind::Mutate, FailureReason::UndecodablePod), 1);
    assert_eq!(handler.calls.load(Ordering::SeqCst), 0);

    // Wrong method, unknown path.
    let (status, _, _) = server.send("GET", "/mutate-pod", Vec::new()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, _, _) = server.send("POST", "/nothing-here", Vec::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_resources_other_kinds_and_deletes_are_allowed_without_a_decision() {
    let handler = Injected::new(|_| panic!("must not be asked"), |_| panic!("must not be asked"));
    let server = TestServer::start(
        Webhook::new(SharedState::new(AdmissionState::default())).with_handler(handler.clone()),
    )
    .await;
    let mut status_update = review("uid-s", &pod());
    status_update["request"]["subResource"] = json!("status");
    status_update["request"]["operation"] = json!("UPDATE");
    status_update["request"]["oldObject"] = pod();
    let mut binding = review(
        "uid-b",
        &json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": "checkout-1", "namespace": "shop"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
        }),
    );
    binding["request"]["subResource"] = json!("binding");
    binding["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Binding"});
    let mut deployment = review(
        "uid-d",
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "checkout"}, "spec": {}}),
    );
    deployment["request"]["kind"] = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
    deployment["request"]["resource"] =
        json!({"group": "apps", "version": "v1", "resource": "deployments"});
    let mut delete = review("uid-del", &Value::Null);
    delete["request"]["operation"] = json!("DELETE");
    delete["request"]["oldObject"] = pod();
    for review in [status_update, binding, deployment, delete] {
        for path in ["/mutate-pod", "/validate-pod"] {
            let response = server.admit(path, &review).await;
            assert_eq!(
                response,
                json!({"uid": review["request"]["uid"], "allowed": true}),
                "{path} {review}"
            );
        }
    }
    assert_eq!(handler.calls.load(Ordering::SeqCst), 0);
    assert_eq!(server.metrics.requests(WebhookKind::Mutate, Outcome::Ignored), 4);
    assert_eq!(server.metrics.requests(WebhookKind::Validate, Outcome::Ignored), 4);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let state = SharedState::pending();
    let handler = Injected::new(label_mutation, |_| ValidateOutcome::Allowed);
    let server = TestServer::start(Webhook::new(state.clone()).with_handler(handler)).await;
    let (status, _, body) = server.send("GET", "/healthz", Vec::new()).await;
    assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"ok\n"[..]));
    let (status, _, body) = server.send("GET", "/readyz", Vec::new()).await;
    assert_eq!(
        (status, body.as_slice()),
        (StatusCode::SERVICE_UNAVAILABLE, &b"admission webhook: no admission state yet\n"[..])
    );
    // The webhooks' readiness is the process's: its plain-HTTP endpoint
    // says the same.
    assert!(server.health.readiness().is_err());
    state.replace(profiles_state());
    let (status, _, _) = server.send("GET", "/readyz", Vec::new()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.health.readiness(), Ok(()));

    server.admit("/mutate-pod", &review("uid-1", &pod())).await;
    server.admit("/mutate-pod", &review("uid-2", &pod())).await;
    server.admit("/validate-pod", &review("uid-3", &pod())).await;
    let text = server.metrics_text().await;
    for line in [
        r#"kolo_webhook_requests_total{webhook="mutate",outcome="patched"} 2"#,
        r#"kolo_webhook_requests_total{webhook="validate",outcome="allowed"} 1"#,
        r#"kolo_webhook_request_duration_seconds_count{webhook="mutate"} 2"#,
        "# TYPE kolo_webhook_handler_failures counter",
        "# TYPE kolo_webhook_request_duration_seconds histogram",
    ] {
        assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"));
    assert_eq!(text.matches("# EOF").count(), 1, "{text}");
    // The process's other metrics share the endpoint.
    assert!(text.lines().any(|l| l == "kolo_webhook_leader 0"), "{text}");
    server.health.count("example_write", &Ok::<(), ()>(()));
    server
        .assert_metric(r#"kolo_webhook_actions_total{action="example_write",result="ok"} 1"#)
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_clients_trusting_the_ca_connect_and_certificates_reload() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let first = tls::generate_self_signed(&SelfSignedOptions::default()).unwrap();
    tls::write_pem(&cert_path, &first.cert_chain_pem).unwrap();
    tls::write_pem(&key_path, &first.key_pem).unwrap();
    let resolver = CertResolver::new(tls::load_pem_files(&cert_path, &key_path).unwrap());
    let watcher = tokio::spawn(tls::watch_pem_files(
        Arc::clone(&resolver),
        cert_path.clone(),
        key_path.clone(),
        Duration::from_millis(50),
    ));
    let server = TestServer::start_with(
        Webhook::new(SharedState::new(AdmissionState::default())),
        resolver,
        first.ca_cert_pem.clone(),
    )
    .await;
    let second = tls::generate_self_signed(&SelfSignedOptions::default()).unwrap();
    assert!(connect(server.addr, &first.ca_cert_pem).await.is_ok());
    assert!(connect(server.addr, &second.ca_cert_pem).await.is_err(), "an unknown CA is refused");

    // Rotate: a half-written pair (new key, old certificate) is not taken...
    tls::write_pem(&key_path, &second.key_pem).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(connect(server.addr, &first.ca_cert_pem).await.is_ok(), "old certificate kept");
    // ... the complete pair is.
    tls::write_pem(&cert_path, &second.cert_chain_pem).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while connect(server.addr, &second.ca_cert_pem).await.is_err() {
        assert!(Instant::now() < deadline, "the new certificate was not loaded");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(connect(server.addr, &first.ca_cert_pem).await.is_err());
    watcher.abort();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_stops_accepting() {
    let server = TestServer::start(Webhook::new(SharedState::new(AdmissionState::default()))).await;
    // An idle keep-alive connection does not hold the shutdown up.
    let idle = server.tls_stream().await;
    let addr = server.addr;
    server.stop().await;
    assert!(TcpStream::connect(addr).await.is_err(), "still listening after shutdown");
    drop(idle);
}

// ---- kolo's real decisions (need the mutation and validation work) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_mutation_applies_the_matching_profile() {
    let server = TestServer::start(Webhook::new(SharedState::new(profiles_state()))).await;
    let pod = pod();
    let response = server.admit("/mutate-pod", &review("uid-real", &pod)).await;
    assert_eq!(response["allowed"], true, "{response}");
    let patched = apply_patch(&response, &pod);
    let labels = &patched["metadata"]["labels"];
    // Profile `colocate-batch` (Koordinator spec §4.2), and only it.
    assert_eq!(labels["koordinator.sh/qosClass"], "BE");
    assert_eq!(labels["a"], "b");
    assert!(
        labels.get("kolo.example/profile").is_none(),
        "a non-matching profile applied: {labels}"
    );
    assert_eq!(labels["app.kubernetes.io/name"], "checkout", "existing labels kept");
    assert_eq!(patched["spec"]["schedulerName"], "kolo-scheduler");
    assert_eq!(patched["spec"]["priorityClassName"], "koord-batch");
    assert_eq!(patched["spec"]["priority"], 5000);
    assert_eq!(patched["spec"]["preemptionPolicy"], "Never");
    // Batch priority: cpu → batch-cpu in milli-cores, memory → batch-memory.
    let quantity = |v: &Value| kolo_api::quantity::Quantity::parse(v.as_str().unwrap()).unwrap();
    let resources = &patched["spec"]["containers"][0]["resources"];
    for (kind, cpu, memory) in [("requests", "500", "1Gi"), ("limits", "2000", "2Gi")] {
        let list = &resources[kind];
        assert!(list.get("cpu").is_none() && list.get("memory").is_none(), "{list}");
        assert_eq!(quantity(&list["kubernetes.io/batch-cpu"]), quantity(&json!(cpu)));
        assert_eq!(quantity(&list["kubernetes.io/batch-memory"]), quantity(&json!(memory)));
    }
    assert_eq!(response["auditAnnotations"]["applied-profiles"], "colocate-batch");
    serde_json::from_value::<Pod>(patched).unwrap();

    // A pod no profile selects is left alone.
    let mut other = pod.clone();
    other["metadata"]["labels"].as_object_mut().unwrap().remove("kolo-colocate");
    let response = server.admit("/mutate-pod", &review("uid-other", &other)).await;
    assert_eq!(response, json!({"uid": "uid-other", "allowed": true}));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_validation_denies_batch_resources_without_qos_be() {
    let server = TestServer::start(Webhook::new(SharedState::new(profiles_state()))).await;
    let mut pod = pod();
    pod["metadata"]["labels"]["koordinator.sh/qosClass"] = json!("LS");
    pod["spec"]["containers"][1]["resources"] = json!({
        "requests": {"kubernetes.io/batch-cpu": "100", "kubernetes.io/batch-memory": "128Mi"},
        "limits": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "256Mi"},
    });
    let response = server.admit("/validate-pod", &review("uid-deny", &pod)).await;
    assert_eq!(response["allowed"], false, "{response}");
    assert_eq!(response["status"]["code"], 403);
    let message = response["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("must specify koordinator QoS BE with koordinator colocation resources"),
        "{message}"
    );

    // The same pod as BE with a batch priority is fine.
    pod["metadata"]["labels"]["koordinator.sh/qosClass"] = json!("BE");
    pod["spec"]["priority"] = json!(5000);
    pod["spec"]["priorityClassName"] = json!("koord-batch");
    let response = server.admit("/validate-pod", &review("uid-ok", &pod)).await;
    assert_eq!(response, json!({"uid": "uid-ok", "allowed": true}));
    server.stop().await;
}
