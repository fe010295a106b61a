//! `kolo agent cluster`: the node agent with its cluster side. Everything
//! `kolo agent` does (collect, predict, QoS strategies on cgroups), plus,
//! for its own node only: the NodeMetric status written on the interval of
//! its NodeMetric spec, the NodeSLO and NodeMetric spec followed as they
//! change, and evictions through the Eviction API instead of killing
//! processes. The loops are kolo-kube's ([`kolo_kube::agent::run`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kolo_kube::agent::ClusterSide;

use crate::agent::Common;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `kolo agent cluster` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How to find pods and cgroups (`--node-name` is required here, or
    /// `$NODE_NAME`; `--standalone` is not needed).
    #[command(flatten)]
    common: Common,
    /// Kubeconfig to use; default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// How often the NodeMetric status is written, seconds, until the
    /// node's NodeMetric spec is seen; then the spec's
    /// `metricCollectPolicy.reportIntervalSeconds` (at least 30) is
    /// followed, as the manager sets it.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    report_interval_seconds: u64,
    /// Serve `/metrics`, `/healthz`, `/readyz` and `/actions` (the QoS
    /// actions of the last while, JSON; `kolo why` reads it) here.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Serve the runtime hooks `kolo runtime-proxy` calls on this unix
    /// socket (e.g. /var/run/kolo/agent-hooks.sock; off by default).
    #[arg(long, value_name = "PATH")]
    hook_socket: Option<PathBuf>,
}

/// Runs the agent until killed.
pub fn run(mut args: Args) -> Result<(), BoxError> {
    crate::logging::init(args.common.log_format);
    if args.common.node_name.is_none() {
        args.common.node_name = std::env::var("NODE_NAME").ok();
    }
    if args.common.node_name.is_none() {
        return Err("kolo agent cluster needs --node-name (or $NODE_NAME)".into());
    }
    let cluster = ClusterSide {
        kubeconfig: args.kubeconfig,
        report_interval_until_spec: Duration::from_secs(args.report_interval_seconds.max(1)),
    };
    kolo_kube::agent::run(args.common.run_config(
        args.listen,
        None,
        Some(cluster),
        args.hook_socket,
    )?)?;
    Ok(())
}
