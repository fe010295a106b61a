//! The agent's `/metrics`, `/healthz` and `/readyz` (its collection
//! counters, from the agent itself).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use kolo_agent::agent::Agent;
use kolo_agent::pods::PodSource;

use super::ticks::lock;

/// Serves the agent's endpoints on `addr` on a thread of its own (a
/// single-threaded runtime: scrapes are rare and cheap). Returns once
/// bound.
pub fn serve_metrics<S: PodSource + Send + 'static>(
    addr: SocketAddr,
    agent: Arc<Mutex<Agent<S>>>,
) -> std::io::Result<()> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    tracing::info!(%addr, "serving /metrics");
    std::thread::Builder::new().name("metrics".into()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
            Ok(r) => r,
            Err(e) => return tracing::error!(error = %e, "metrics server: no runtime"),
        };
        runtime.block_on(async move {
            let metrics = move || {
                let agent = Arc::clone(&agent);
                async move { kolo_agent::metrics::encode(&*lock(&agent)) }
            };
            let router = axum::Router::new()
                .route("/metrics", axum::routing::get(metrics))
                .route("/healthz", axum::routing::get(|| async { "ok" }))
                .route("/readyz", axum::routing::get(|| async { "ok" }));
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => return tracing::error!(error = %e, "metrics server: bad listener"),
            };
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "metrics server stopped");
            }
        });
    })?;
    Ok(())
}
