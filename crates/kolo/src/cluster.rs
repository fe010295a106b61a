//! The flags every component that runs against a cluster shares (the
//! kubeconfig, the health / metrics endpoint, logging, leader election), as
//! [`kolo_kube::component`] settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kolo_kube::component::{Election, Settings};

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
    /// TCP connections to the API server open at once (watches included),
    /// also the number of other requests in flight; the rest wait for one.
    /// Reused, so the API server does no TLS handshake per request. At
    /// least 12 (the manager's watches hold 8).
    #[arg(long, value_name = "N", default_value_t = kolo_kube::client::DEFAULT_MAX_CONNECTIONS)]
    pub kube_api_connections: usize,
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
    /// The flags as an [`Election`].
    pub fn election(&self) -> Election {
        Election {
            enabled: self.leader_elect,
            namespace: self.leader_elect_namespace.clone(),
            identity: self.leader_elect_identity.clone(),
            lease_duration: Duration::from_secs(self.leader_elect_lease_seconds),
        }
    }
}

impl ClusterArgs {
    /// Starts logging and returns the component's settings.
    pub fn settings(&self, name: &'static str) -> Settings {
        crate::logging::init(self.log_format);
        Settings {
            name,
            kubeconfig: self.kubeconfig.clone(),
            health_listen: self.health_listen,
            connections: kolo_kube::client::ConnectionLimits {
                max_connections: self.kube_api_connections,
            },
        }
    }
}
