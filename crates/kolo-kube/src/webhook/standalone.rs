//! The admission webhooks on their own (`kolo manager webhook`): deciding
//! with a fixed admission state (the caller reads it from files), served
//! over HTTPS together with their `/healthz`, `/readyz` and `/metrics`,
//! until told to stop.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use kolo_manager::webhook::AdmissionState;

use super::server::bounds::LimitsError;
use super::server::state::SharedState;
use super::server::tls::{self, CertificateSource, TlsError};
use super::server::{Limits, ServerError, Webhook, WebhookServer};
use crate::health::Health;

/// How the webhooks are served.
#[derive(Debug, Clone)]
pub struct StandaloneOptions {
    /// Where the HTTPS server listens.
    pub listen: SocketAddr,
    /// The serving certificate.
    pub certificate: CertificateSource,
    /// The server's limits.
    pub limits: Limits,
}

/// Why the webhooks could not be served.
#[derive(Debug, thiserror::Error)]
pub enum StandaloneError {
    /// The certificate could not be loaded.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server could not start.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// A limit is out of its bounds (nothing was bound or written).
    #[error("webhook limits: {0}")]
    Limits(#[from] LimitsError),
    /// The caller's start-up step (run once the server listens, e.g.
    /// publishing a generated CA) failed; the server did not serve.
    #[error(transparent)]
    Started(Box<dyn std::error::Error + Send + Sync>),
    /// The tokio runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// The start-up step [`run`] calls once the server listens, with its
/// address: what must not happen when the server cannot start (writing a
/// generated CA over the file a running server's clients trust).
pub type StartedHook =
    Box<dyn FnOnce(SocketAddr) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + Send>;

/// Serves the webhooks deciding with `state` until `shutdown` completes,
/// then shuts the server down gracefully. Runs its own tokio runtime.
///
/// The limits are checked first; `started` runs after the socket is bound
/// and before the first connection is accepted (its error stops the server).
pub fn run(
    options: StandaloneOptions,
    state: AdmissionState,
    started: StartedHook,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StandaloneError> {
    options.limits.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kolo-webhook")
        .build()
        .map_err(StandaloneError::Runtime)?;
    let result = runtime.block_on(async move {
        let config = tls::serving_config(&options.certificate)?;
        // Nothing to sync and nobody to elect: ready (and acting) at once;
        // `/readyz` still asks the webhooks' own check.
        let health = Health::new("webhook");
        health.set_ready(true);
        health.leader.set(1);
        let webhook =
            Webhook::new(SharedState::new(state)).with_limits(options.limits).with_health(health);
        let server = WebhookServer::bind(options.listen, config, webhook).await?;
        started(server.local_addr()).map_err(StandaloneError::Started)?;
        server.serve(shutdown).await;
        tracing::info!("stopped");
        Ok(())
    });
    // A decision that never returns (one that timed out) must not keep the
    // process alive: blocking threads still running are abandoned.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}
