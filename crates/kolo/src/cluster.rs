//! What every component that runs against a cluster shares: the
//! kubeconfig, the health / metrics endpoint, logging, leader election and
//! the tokio runtime.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kolo_kube::KubeError;
use kolo_kube::health::{self, Health};
use kolo_kube::leader::{Elector, Leadership, LeaseConfig};

use crate::logging::LogFormat;

/// Options shared by `kolo scheduler`, `kolo manager run` and the agent's
/// cluster mode.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Kubeconfig to use; default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Where `/healthz`, `/readyz` and `/metrics` are served (plain HTTP).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:10251")]
    pub health_listen: SocketAddr,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The options of a leader-elected component (the scheduler and the
/// manager).
#[derive(Debug, Clone, clap::Args)]
pub struct ComponentArgs {
    /// Connection, health endpoint and logging.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Leader election.
    #[command(flatten)]
    pub leader: LeaderArgs,
}

/// Leader election options (the scheduler and the manager).
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Elect a leader among the replicas with a coordination.k8s.io Lease;
    /// only the leader acts. `--leader-elect=false` for a single replica.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, value_name = "NS", default_value = "kolo-system")]
    pub leader_elect_namespace: String,
    /// This instance's identity in the Lease; default: the host name (the
    /// pod name) and the process id.
    #[arg(long, value_name = "ID")]
    pub leader_elect_identity: Option<String>,
    /// How long the Lease stays valid without renewal, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    pub leader_elect_lease_seconds: u64,
}

impl LeaderArgs {
    /// The Lease configuration for the Lease `name`.
    pub fn lease(&self, name: &str) -> LeaseConfig {
        let identity = self.leader_elect_identity.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kolo".into());
            format!("{host}_{}", std::process::id())
        });
        let mut config = LeaseConfig::new(&self.leader_elect_namespace, name, &identity);
        let lease = Duration::from_secs(self.leader_elect_lease_seconds.max(3));
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

/// Runs a component: logging, a runtime, the health endpoint, a client,
/// leader election when `leader` asks for it (the Lease `lease_name`), then
/// `body` until it ends, leadership is lost, or SIGTERM / Ctrl-C.
pub fn run<F, Fut>(
    component: &'static str,
    args: &ClusterArgs,
    leader: Option<(&LeaderArgs, &str)>,
    body: F,
) -> Result<(), ComponentError>
where
    F: FnOnce(kube::Client, Arc<Health>, Option<Leadership>) -> Fut,
    Fut: Future<Output = Result<(), KubeError>>,
{
    crate::logging::init(args.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ComponentError::Runtime)?;
    runtime.block_on(async {
        let health = Health::new(component);
        let addr = health::serve(args.health_listen, health.clone()).await?;
        tracing::info!(component, %addr, "serving /healthz, /readyz and /metrics");
        let client = kolo_kube::client::connect(args.kubeconfig.as_deref()).await?;
        let work = async {
            let leadership = match leader {
                Some((l, name)) => lead(&client, l, name, &health).await,
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

/// Waits until this instance leads the Lease `name` (with `--leader-elect`;
/// without it, it leads at once and `None` is returned).
pub async fn lead(
    client: &kube::Client,
    leader: &LeaderArgs,
    name: &str,
    health: &Arc<Health>,
) -> Option<Leadership> {
    if !leader.leader_elect {
        health.leader.set(1);
        return None;
    }
    let lease = leader.lease(name);
    tracing::info!(lease = %name, identity = %lease.identity, "campaigning for leadership");
    // A standby is ready: it does what it should (wait to take over), and a
    // never-ready standby would stall every rolling update of its
    // Deployment. The leader is ready again once its caches are synced.
    health.set_ready(true);
    let leadership = Elector::new(client.clone(), lease).acquire(health.clone()).await;
    health.set_ready(false);
    Some(leadership)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
