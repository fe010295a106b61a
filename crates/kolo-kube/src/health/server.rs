//! The HTTP side of [`Health`]: the routes, and serving them on a runtime
//! the process already runs or on a thread of their own.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::Health;
use crate::error::KubeError;

/// The content type of `/metrics`.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `/healthz`, `/readyz` and `/metrics` answered from `health`: serve them
/// alone ([`serve`], [`serve_on_thread`]) or merged into another router.
pub fn router(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(health)
}

async fn readyz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    match health.readiness() {
        Ok(()) => (StatusCode::OK, "ok\n".to_string()),
        Err(reasons) => (StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", reasons.join("; "))),
    }
}

async fn metrics(State(health): State<Arc<Health>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], health.encode())
}

/// Serves the endpoints (plain HTTP) on `addr`, on the current tokio
/// runtime, until the process ends; returns once listening (the address
/// actually bound, useful with port 0).
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> Result<SocketAddr, KubeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| KubeError::Health { addr, source })?;
    let bound = listener.local_addr().map_err(|source| KubeError::Health { addr, source })?;
    tokio::spawn(serve_listener(listener, health));
    Ok(bound)
}

/// Serves the endpoints (plain HTTP) on `addr` from a thread of its own
/// with a single-threaded runtime (scrapes are rare and cheap), for a
/// component that runs no tokio runtime of its own or must not share it;
/// returns once listening (the address actually bound).
pub fn serve_on_thread(addr: SocketAddr, health: Arc<Health>) -> Result<SocketAddr, KubeError> {
    serve_router_on_thread(addr, router(health))
}

/// [`serve_on_thread`] for the health routes merged with a component's own
/// (the agent's `/actions`).
pub fn serve_router_on_thread(addr: SocketAddr, routes: Router) -> Result<SocketAddr, KubeError> {
    let error = |source| KubeError::Health { addr, source };
    let listener = std::net::TcpListener::bind(addr).map_err(error)?;
    let bound = listener.local_addr().map_err(error)?;
    listener.set_nonblocking(true).map_err(error)?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_io().build().map_err(error)?;
    std::thread::Builder::new()
        .name("health".into())
        .spawn(move || {
            runtime.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => serve_routes(listener, routes).await,
                    Err(e) => tracing::error!(error = %e, %addr, "health server stopped"),
                }
            });
        })
        .map_err(error)?;
    Ok(bound)
}

async fn serve_listener(listener: tokio::net::TcpListener, health: Arc<Health>) {
    serve_routes(listener, router(health)).await;
}

async fn serve_routes(listener: tokio::net::TcpListener, routes: Router) {
    if let Err(e) = axum::serve(listener, routes).await {
        tracing::error!(error = %e, "health server stopped");
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// One plain HTTP/1.1 GET: the status line and the body.
    fn get(addr: SocketAddr, path: &str) -> (String, String) {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_string(), body.to_string())
    }

    #[test]
    fn a_plain_thread_component_serves_its_readiness_and_metrics() {
        let health = Health::new("agent");
        health.add_metrics(|text: &mut String| text.push_str("# TYPE kolo_agent_ticks counter\n"));
        let addr = serve_on_thread("127.0.0.1:0".parse().unwrap(), Arc::clone(&health)).unwrap();
        assert_ne!(addr.port(), 0);
        assert_eq!(get(addr, "/healthz"), ("HTTP/1.1 200 OK".into(), "ok\n".into()));
        let (status, body) = get(addr, "/readyz");
        assert_eq!(
            (status.as_str(), body.as_str()),
            ("HTTP/1.1 503 Service Unavailable", "agent: caches not synced yet\n")
        );
        health.set_ready(true);
        assert_eq!(get(addr, "/readyz").0, "HTTP/1.1 200 OK");
        let (status, body) = get(addr, "/metrics");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("\nkolo_agent_leader 0\n"), "the own metrics first: {body}");
        assert!(body.contains("# TYPE kolo_agent_ticks counter\n# HELP process_"), "{body}");
        assert!(body.ends_with("\n# EOF\n"), "{body}");
    }

    #[test]
    fn a_taken_address_is_an_error_naming_it() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve_on_thread(addr, Health::new("agent")).unwrap_err();
        assert!(err.to_string().starts_with(&format!("serving health on {addr}: ")), "{err}");
    }
}
