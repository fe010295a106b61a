//! What every component that runs against a cluster shares: a tokio
//! runtime, the one health / metrics endpoint, a client, leader election,
//! and a clean stop on SIGTERM / Ctrl-C.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::KubeError;
use crate::health::{self, Health};
use crate::leader::{Elector, Leadership, LeaseConfig};

/// Where a component connects and serves.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The component's name (logs, metrics).
    pub name: &'static str,
    /// Kubeconfig to use; none means `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account.
    pub kubeconfig: Option<PathBuf>,
    /// Where `/healthz`, `/readyz` and `/metrics` are served.
    pub health_listen: SocketAddr,
    /// TCP connections to the API server and requests in flight at once.
    pub connections: crate::client::ConnectionLimits,
}

/// Leader election: whether to elect, and the Lease.
#[derive(Debug, Clone)]
pub struct Election {
    /// Elect a leader among the replicas; without, every instance leads.
    pub enabled: bool,
    /// The Lease's namespace.
    pub namespace: String,
    /// This instance's identity; none means the host name (the pod name)
    /// and the process id.
    pub identity: Option<String>,
    /// How long the Lease stays valid without renewal (at least 3 s).
    pub lease_duration: Duration,
}

impl Election {
    /// The Lease `name`'s configuration: renewal gives up after 2/3 of the
    /// lease duration (so a holder stops acting before anyone may start),
    /// and retries every 1/7 of it (at least every 500 ms).
    pub fn lease(&self, name: &str) -> LeaseConfig {
        let identity = self.identity.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kolo".into());
            format!("{host}_{}", std::process::id())
        });
        let mut config = LeaseConfig::new(&self.namespace, name, &identity);
        let lease = self.lease_duration.max(Duration::from_secs(3));
        config.lease_duration = lease;
        config.renew_deadline = lease * 2 / 3;
        config.retry_period = (lease / 7).max(Duration::from_millis(500));
        config
    }
}

/// Why a cluster component stopped.
#[derive(Debug, thiserror::Error)]
pub enum ComponentError {
    /// The tokio runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The component failed (the error names the object or endpoint).
    #[error(transparent)]
    Kube(#[from] KubeError),
}

/// Runs a component: a runtime, the health endpoint, a client, leader
/// election when `leader` asks for it (the Lease named there), then `body`
/// until it ends, leadership is lost, or SIGTERM / Ctrl-C.
pub fn run<F, Fut>(
    settings: &Settings,
    leader: Option<(&Election, &str)>,
    body: F,
) -> Result<(), ComponentError>
where
    F: FnOnce(kube::Client, Arc<Health>, Option<Leadership>) -> Fut,
    Fut: Future<Output = Result<(), KubeError>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ComponentError::Runtime)?;
    let component = settings.name;
    runtime.block_on(async {
        let health = Health::new(component);
        let addr = health::serve(settings.health_listen, health.clone()).await?;
        tracing::info!(component, %addr, "serving /healthz, /readyz and /metrics");
        let client =
            crate::client::connect_with(settings.kubeconfig.as_deref(), settings.connections)
                .await?;
        let work = async {
            let leadership = match leader {
                Some((election, name)) => lead(&client, election, name, &health).await,
                None => None,
            };
            body(client, health.clone(), leadership).await
        };
        tokio::select! {
            r = work => r.map_err(Into::into),
            () = shutdown_signal() => {
                tracing::info!(component, "shutting down");
                Ok(())
            }
        }
    })
}

/// Waits until this instance leads the Lease `name` (when elections are
/// enabled; otherwise it leads at once and `None` is returned).
pub async fn lead(
    client: &kube::Client,
    election: &Election,
    name: &str,
    health: &Arc<Health>,
) -> Option<Leadership> {
    if !election.enabled {
        health.leader.set(1);
        return None;
    }
    let lease = election.lease(name);
    tracing::info!(lease = %name, identity = %lease.identity, "campaigning for leadership");
    // A standby is ready: it does what it should (wait to take over), and a
    // never-ready standby would stall every rolling update of its
    // Deployment. The leader is ready again once its caches are synced.
    health.set_ready(true);
    let leadership = Elector::new(client.clone(), lease).acquire(health.clone()).await;
    health.set_ready(false);
    Some(leadership)
}

/// Completes on Ctrl-C or SIGTERM (and never, with an error logged, when
/// neither can be listened for).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C: shutting down"),
        () = terminate => tracing::info!("SIGTERM: shutting down"),
    }
}
