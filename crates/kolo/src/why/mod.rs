//! `kolo why`: why a pod is pending, throttled or evicted, and why a node
//! has the batch / mid allocatable it has, from the live cluster and the
//! node agents' `/actions` history.
//!
//! The what-ifs are the dump commands' own: the live objects become a
//! [`kolo_core::snapshot::Snapshot`] ([`fetch::snapshot`]) that
//! [`kolo_scheduler::whatif::schedule`] (`kolo schedule`) and
//! [`kolo_manager::whatif::noderesource::evaluate`] (`kolo noderesource`)
//! run on.

mod explain;
mod fetch;
mod node;
mod pod;

use std::io::Write;
use std::path::PathBuf;

use crate::{CliError, OutputFormat};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `kolo why` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to explain.
    #[command(subcommand)]
    pub target: WhyTarget,
    /// Kubeconfig to use; default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account.
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The node agent's address (`http://HOST:PORT`, e.g. through `kubectl
    /// port-forward`); default: the IP of the node's agent pod (in
    /// `--agent-namespace`), else the node's InternalIP, and `--agent-port`.
    #[arg(long, value_name = "URL", global = true)]
    pub agent_url: Option<String>,
    /// The port the agents serve `/actions` on (`--listen` of `kolo agent
    /// cluster`).
    #[arg(long, value_name = "PORT", default_value_t = 9316, global = true)]
    pub agent_port: u16,
    /// The namespace of the agent's pods.
    #[arg(long, value_name = "NS", default_value = "kolo-system", global = true)]
    pub agent_namespace: String,
    /// The namespace of `slo-controller-config`.
    #[arg(long, value_name = "NS", default_value = "kolo-system", global = true)]
    pub config_namespace: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text, global = true)]
    pub output: OutputFormat,
}

/// What `kolo why` explains.
#[derive(Debug, clap::Subcommand)]
pub enum WhyTarget {
    /// A pod (`NAMESPACE/NAME`): pending (the scheduler's last word and a
    /// what-if now), throttled (its QoS class's suppression, since when),
    /// or evicted (by whom, which rule, the usage then).
    Pod {
        /// `NAMESPACE/NAME`.
        pod: String,
    },
    /// A node: its batch / mid allocatable term by term, and the agent's
    /// recent QoS actions.
    Node {
        /// The node's name.
        name: String,
    },
}

/// Where the agent of a node is asked.
pub(crate) fn agent_url_for(
    args: &Args,
    node_url: Result<String, BoxError>,
) -> Result<String, BoxError> {
    match &args.agent_url {
        Some(url) => Ok(url.trim_end_matches('/').to_string()),
        None => node_url,
    }
}

/// Runs the command.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Command(format!("starting a runtime: {e}").into()))?;
    runtime.block_on(async {
        let client = kolo_kube::client::connect(args.kubeconfig.as_deref())
            .await
            .map_err(|e| CliError::Command(e.into()))?;
        match &args.target {
            WhyTarget::Pod { pod } => pod::run(&client, args, pod, out).await,
            WhyTarget::Node { name } => node::run(&client, args, name, out).await,
        }
    })
}
