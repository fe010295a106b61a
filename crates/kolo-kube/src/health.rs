//! `/healthz`, `/readyz` and `/metrics` over plain HTTP, for every
//! component's probes and Prometheus.
//!
//! `/healthz` answers 200 while the process serves at all; `/readyz` answers
//! 200 once the component says it is ready (its caches synced) and 503
//! before; `/metrics` is the Prometheus text format of the component's
//! counters.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::error::KubeError;

/// The labels of [`Health::actions`]: what was done, and how it ended.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// e.g. `bind`, `patch_node_status`, `create_nodemetric`, `evict`.
    pub action: String,
    /// `ok` or `error`.
    pub result: String,
}

/// A component's readiness and counters, shared with its HTTP endpoints.
#[derive(Debug)]
pub struct Health {
    component: &'static str,
    ready: AtomicBool,
    /// API writes by action and result.
    pub actions: Family<ActionLabels, Counter>,
    /// 1 while this instance holds its leader Lease (always 1 without
    /// leader election).
    pub leader: Gauge,
    registry: Registry,
}

impl Health {
    /// The health of `component` (the metrics' prefix is `kolo_<component>`).
    pub fn new(component: &'static str) -> Arc<Health> {
        let mut registry = Registry::with_prefix(format!("kolo_{component}"));
        let actions = Family::<ActionLabels, Counter>::default();
        let leader = Gauge::default();
        registry.register("actions", "API writes by action and result", actions.clone());
        registry.register("leader", "1 while this instance is the leader", leader.clone());
        Arc::new(Health { component, ready: AtomicBool::new(false), actions, leader, registry })
    }

    /// Marks the component ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Whether the component said it is ready.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// Counts one API write.
    pub fn count<T, E>(&self, action: &str, result: &Result<T, E>) {
        let result = if result.is_ok() { "ok" } else { "error" };
        self.actions
            .get_or_create(&ActionLabels { action: action.into(), result: result.into() })
            .inc();
    }

    /// The metrics in Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Serves the endpoints on `addr` until the process ends; returns once
/// listening (the address actually bound, useful with port 0).
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> Result<SocketAddr, KubeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| KubeError::Health { addr, source })?;
    let bound = listener.local_addr().map_err(|source| KubeError::Health { addr, source })?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(health);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "health server stopped");
        }
    });
    Ok(bound)
}

async fn readyz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    if health.is_ready() {
        (StatusCode::OK, "ok".to_string())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("{}: caches not synced yet", health.component))
    }
}

async fn metrics(State(health): State<Arc<Health>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        health.encode(),
    )
}
