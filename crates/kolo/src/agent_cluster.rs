//! `kolo agent cluster`: the node agent with its cluster side. Everything
//! `kolo agent` does (collect, predict, QoS strategies on cgroups), plus,
//! for its own node only: the NodeMetric status written every
//! `--report-interval-seconds`, the NodeSLO followed as it changes, and
//! evictions through the Eviction API instead of killing processes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kolo_core::clock::Timestamp;
use kolo_kube::agent::{ApiEvictor, NodeMetricWriter, watch_node_slo};
use kolo_kube::health::Health;

use crate::agent::{Common, Qos, build_agent, run_ticks, serve_metrics};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `kolo agent cluster` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How to find pods and cgroups (`--node-name` is required here, or
    /// `$NODE_NAME`).
    #[command(flatten)]
    common: Common,
    /// Kubeconfig to use; default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// How often the NodeMetric status is written, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    report_interval_seconds: u64,
    /// Serve `/metrics`, `/healthz` and `/readyz` here.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
}

/// Runs the agent until killed.
pub fn run(mut args: Args) -> Result<(), BoxError> {
    crate::logging::init(args.common.log_format);
    if args.common.node_name.is_none() {
        args.common.node_name = std::env::var("NODE_NAME").ok();
    }
    let Some(node) = args.common.node_name.clone() else {
        return Err("kolo agent cluster needs --node-name (or $NODE_NAME)".into());
    };
    // `--standalone` gates the agent without a cluster; here the cluster
    // side is this command itself.
    args.common.standalone = true;
    let interval = Duration::from_millis(args.common.interval_ms.max(100));
    let agent = Arc::new(Mutex::new(build_agent(&args.common)?));
    if let Some(addr) = args.listen {
        serve_metrics(addr, Arc::clone(&agent))?;
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let client = runtime.block_on(kolo_kube::client::connect(args.kubeconfig.as_deref()))?;
    let health = Health::new("agent");
    let mut qos = Qos::new(&args.common)?;
    {
        let _context = runtime.enter();
        qos.slo_source = Some(watch_node_slo(client.clone(), &node));
    }
    if !args.common.dry_run {
        qos.evictor =
            Some(Box::new(ApiEvictor::new(client.clone(), runtime.handle().clone(), health)));
    }
    let writer = NodeMetricWriter::new(client, &node);
    let report_every = Duration::from_secs(args.report_interval_seconds.max(1));
    let reporter = Arc::clone(&agent);
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval(report_every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let metric = reporter.lock().expect("agent lock").node_metric(Timestamp::now());
            match writer.write(&metric).await {
                Ok(()) => tracing::debug!("NodeMetric status written"),
                Err(e) => tracing::warn!(error = %e, "writing the NodeMetric status failed; retrying next report"),
            }
        }
    });
    tracing::info!(%node, interval_ms = interval.as_millis() as u64, "agent running (cluster mode)");
    run_ticks(&agent, interval, None, Some(&mut qos));
    Ok(())
}
