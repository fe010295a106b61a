//! Admission webhook latency over HTTPS on loopback, open loop.
//!
//! The server runs in this process on its own tokio runtime with kolo's
//! real decisions and the 20 ClusterColocationProfiles of
//! `tests/fixtures/profiles.yaml` (one matches the pod). The load
//! generator runs on another runtime: a pacer thread schedules requests at
//! a fixed rate (request `i` is due at `start + i / rate`) and hands each to
//! one of a pool of keep-alive HTTPS connections, which posts the
//! AdmissionReview of the Deployment pod in `tests/fixtures/deployment-pod.json`
//! to `/mutate-pod`. Latency is measured from the request's **scheduled**
//! time to the end of its response, so a server (or client) stall counts
//! against every request it delayed (no coordinated omission).
//!
//! ```text
//! cargo bench -p kolo-kube --bench webhook_latency
//! KOLO_BENCH_RATES=1000,5000 KOLO_BENCH_SECONDS=10 KOLO_BENCH_WARMUP_SECONDS=2 \
//!     KOLO_BENCH_CONNECTIONS=32 cargo bench -p kolo-kube --bench webhook_latency
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use kolo_core::snapshot::Snapshot;
use kolo_kube::webhook::server::state::SharedState;
use kolo_kube::webhook::server::tls::{self, CertResolver, SelfSignedOptions};
use kolo_kube::webhook::server::{Webhook, WebhookServer};
use kolo_manager::webhook::AdmissionState;
use kolo_manager::webhook::answer::{Outcome, WebhookKind};
use rustls::pki_types::ServerName;
use serde_json::json;
use tokio::sync::mpsc;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// One scheduled request.
struct Job {
    due: Instant,
    record: bool,
}

/// What one connection measured: latencies (ns) of recorded requests,
/// pacer lag (ns: how late the request was handed over), errors.
#[derive(Default)]
struct Measured {
    latencies: Vec<u64>,
    lag: Vec<u64>,
    errors: u64,
    last_done: Option<Instant>,
}

async fn connection(
    addr: SocketAddr,
    client: Arc<rustls::ClientConfig>,
    body: Bytes,
    mut jobs: mpsc::UnboundedReceiver<Job>,
) -> Measured {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).unwrap();
    let stream = tokio_rustls::TlsConnector::from(client)
        .connect(ServerName::try_from("127.0.0.1").unwrap().to_owned(), tcp)
        .await
        .expect("TLS handshake");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("HTTP handshake");
    tokio::spawn(conn);
    let host = addr.to_string();
    let mut measured = Measured::default();
    while let Some(job) = jobs.recv().await {
        let handed = Instant::now();
        let request = Request::post("/mutate-pod")
            .header("host", &host)
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .unwrap();
        let ok = match sender.send_request(request).await {
            Ok(response) => {
                let status = response.status();
                response.into_body().collect().await.is_ok() && status.is_success()
            }
            Err(_) => false,
        };
        let done = Instant::now();
        if job.record {
            if ok {
                measured.latencies.push((done - job.due).as_nanos() as u64);
                measured.lag.push(handed.saturating_duration_since(job.due).as_nanos() as u64);
            } else {
                measured.errors += 1;
            }
            measured.last_done = Some(done);
        }
    }
    measured
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

fn main() {
    let rates: Vec<u64> = std::env::var("KOLO_BENCH_RATES")
        .unwrap_or_else(|_| "1000,5000".into())
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .collect();
    let seconds: u64 = env_or("KOLO_BENCH_SECONDS", 10);
    let warmup: u64 = env_or("KOLO_BENCH_WARMUP_SECONDS", 2);
    let connections: usize = env_or("KOLO_BENCH_CONNECTIONS", 32);

    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let snapshot = Snapshot::load(&fixtures.join("profiles.yaml")).expect("profiles");
    let pod: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("deployment-pod.json")).unwrap(),
    )
    .unwrap();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0c9a8d74-9cb7-44dd-b98e-09fd62def2f4",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "shop", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                         "uid": "7b3c1f0e-0a55-4a0c-8b8e-4f6c1d0b1a11",
                         "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
            "object": pod, "oldObject": null, "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    });
    let body = Bytes::from(serde_json::to_vec(&review).unwrap());

    // The server: its own runtime (worker threads = cores) and threads.
    let generated = tls::generate_self_signed(&SelfSignedOptions::default()).unwrap();
    let server_config =
        tls::server_config(CertResolver::new(generated.certified_key().unwrap())).unwrap();
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-server")
        .build()
        .unwrap();
    // With the health endpoint, as `kolo manager webhook` serves it.
    let health = kolo_kube::health::Health::new("webhook");
    health.set_ready(true);
    let webhook = Webhook::new(SharedState::new(AdmissionState::from_snapshot(&snapshot)))
        .with_health(health);
    let metrics = webhook.metrics();
    let server = server_runtime
        .block_on(WebhookServer::bind("127.0.0.1:0".parse().unwrap(), server_config, webhook))
        .unwrap();
    let addr = server.local_addr();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server_task = server_runtime.spawn(server.serve(async move {
        let _ = stop_rx.await;
    }));

    // The load generator: one client thread for the connections, the
    // pacer on this thread.
    let client_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("bench-client")
        .build()
        .unwrap();
    let client = tls::client_config(generated.ca_cert_pem.as_bytes()).unwrap();

    println!(
        "webhook latency, HTTPS on loopback, POST /mutate-pod: AdmissionReview {} bytes, {} profiles, {connections} keep-alive connections, {warmup} s warm-up + {seconds} s per rate",
        body.len(),
        snapshot.colocation_profiles.len()
    );
    println!(
        "{:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>12}",
        "rate/s",
        "achieved/s",
        "p50 µs",
        "p90 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "lag p99",
        "errors",
        "requests"
    );
    for rate in rates {
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..connections).map(|_| mpsc::unbounded_channel::<Job>()).unzip();
        let tasks: Vec<_> = receivers
            .into_iter()
            .map(|rx| client_runtime.spawn(connection(addr, Arc::clone(&client), body.clone(), rx)))
            .collect();
        // Let the connections open before the clock starts.
        std::thread::sleep(Duration::from_millis(200));

        let interval = Duration::from_secs_f64(1.0 / rate as f64);
        let warmup_n = rate * warmup;
        let total = warmup_n + rate * seconds;
        let start = Instant::now() + Duration::from_millis(10);
        let mut measure_start = start;
        for i in 0..total {
            let due = start + interval.mul_f64(i as f64);
            if i == warmup_n {
                measure_start = due;
            }
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let _ = senders[i as usize % connections].send(Job { due, record: i >= warmup_n });
        }
        drop(senders);
        let mut all = Measured::default();
        for task in tasks {
            let m = client_runtime.block_on(task).unwrap();
            all.latencies.extend(m.latencies);
            all.lag.extend(m.lag);
            all.errors += m.errors;
            all.last_done = all.last_done.max(m.last_done);
        }
        all.latencies.sort_unstable();
        all.lag.sort_unstable();
        let done = all.latencies.len() as u64;
        let elapsed = all.last_done.map(|d| d - measure_start).unwrap_or_default();
        let achieved = done as f64 / elapsed.as_secs_f64().max(1e-9);
        let us = |p| percentile(&all.latencies, p);
        println!(
            "{:>8} {:>10.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>7} {:>12}",
            rate,
            achieved,
            us(50.0),
            us(90.0),
            us(99.0),
            us(99.9),
            all.latencies.last().map_or(f64::NAN, |&m| m as f64 / 1000.0),
            percentile(&all.lag, 99.0),
            all.errors,
            done,
        );
    }
    let outcomes = [Outcome::Patched, Outcome::Unchanged, Outcome::FailedOpen, Outcome::Denied]
        .map(|o| format!("{}={}", o.as_str(), metrics.requests(WebhookKind::Mutate, o)));
    println!("server outcomes (incl. warm-up): {}", outcomes.join(" "));
    let _ = stop_tx.send(());
    let _ = server_runtime.block_on(server_task);
}
