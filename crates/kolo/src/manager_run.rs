//! `kolo manager run`: the manager's SLO controllers against a cluster
//! (batch / mid allocatable on node status, NodeMetric spec, NodeSLO), with
//! leader election.

use std::time::Duration;

use kolo_kube::manager::{Controller, ManagerOptions};

use crate::cluster::{self, ClusterArgs, ComponentError, LeaderArgs};

/// `kolo manager run` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    #[command(flatten)]
    leader: LeaderArgs,
    /// Namespace of the `slo-controller-config` ConfigMap (Koordinator's, so
    /// an existing Koordinator cluster's ConfigMap is used as is;
    /// `deploy/` keeps it in kolo-system).
    #[arg(long, value_name = "NS", default_value = kolo_manager::config::DEFAULT_CONFIG_NAMESPACE)]
    config_namespace: String,
    /// Name of the ConfigMap.
    #[arg(long, value_name = "NAME", default_value = kolo_manager::config::DEFAULT_CONFIG_NAME)]
    config_name: String,
    /// Manage only the nodes matching this label selector (default: all).
    #[arg(long, value_name = "SELECTOR")]
    node_selector: Option<String>,
    /// A full pass runs at least this often, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    resync_seconds: u64,
}

/// Runs the controllers until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), ComponentError> {
    let options = ManagerOptions {
        config_namespace: args.config_namespace,
        config_name: args.config_name,
        resync: Duration::from_secs(args.resync_seconds.max(1)),
        node_selector: args.node_selector,
        ..ManagerOptions::default()
    };
    cluster::run(
        "manager",
        &args.cluster,
        Some((&args.leader, "kolo-manager")),
        |client, health, leadership| Controller::new(client, options, health).run(leadership),
    )
}
