//! Running the agent on a real node: the tick loop, the QoS rounds and
//! where their plans go, the metrics endpoints, and in a cluster the
//! NodeSLO and NodeMetric watches, the NodeMetric status writer, the CPU
//! topology annotation and Eviction API evictions. The binary only turns its arguments into an
//! [`AgentRun`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kolo_agent::agent::{Agent, AgentConfig};
use kolo_agent::evict::{Evictor, KillEvictor};
use kolo_agent::history::{ActionHistory, DEFAULT_CAPACITY};
use kolo_agent::qos::{QosLoop, default_strategies};
use kolo_api::crd::NodeSLOSpec;
use tokio::sync::watch;

use super::ApiEvictor;
use super::driver::{CgroupSink, DryRunSink, PlanSink};
use super::hook_server::{HookServer, HookSocketError, serve_on_thread};
use super::hook_view::HookViews;
use super::nodemetric::{NodeMetricWriter, watch_node_metric};
use super::nodeslo::watch_node_slo;
use super::report::report_every;
use super::source::{Source, SourceConfig, SourceError, build_agent};
use super::ticks::{self, QosDriver, run_ticks};
use super::topology::publish_cpu_topology;
use crate::error::KubeError;
use crate::health::Health;

/// How to run the agent.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// Where the agent looks and how often.
    pub agent: AgentConfig,
    /// Where the pods come from.
    pub source: SourceConfig,
    /// The NodeSLO the strategies follow (in a cluster: until the node's
    /// NodeSLO is seen); `None`: every default.
    pub node_slo: Option<NodeSLOSpec>,
    /// Serve `/metrics`, `/healthz`, `/readyz` and `/actions` here.
    pub listen: Option<SocketAddr>,
    /// Stop after this many ticks (default: run until killed).
    pub ticks: Option<u64>,
    /// The cluster side, if any.
    pub cluster: Option<ClusterSide>,
    /// Serve the runtime hooks (`kolo runtime-proxy`) on this unix socket.
    pub hook_socket: Option<PathBuf>,
}

/// The agent's cluster side.
#[derive(Debug, Clone)]
pub struct ClusterSide {
    /// Kubeconfig to use (default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account).
    pub kubeconfig: Option<PathBuf>,
    /// How often the NodeMetric status is written until the node's
    /// NodeMetric spec is seen (then its `reportIntervalSeconds`, at least
    /// 30 s).
    pub report_interval_until_spec: Duration,
}

/// Why the agent stopped (or could not start).
#[derive(Debug, thiserror::Error)]
pub enum AgentRunError {
    /// The pod source or the agent could not be set up.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// No Tokio runtime for the cluster side.
    #[error("starting the cluster side's runtime: {0}")]
    Runtime(std::io::Error),
    /// The API server could not be reached or configured.
    #[error(transparent)]
    Kube(#[from] KubeError),
    /// The runtime hook socket could not be set up.
    #[error(transparent)]
    HookSocket(#[from] HookSocketError),
}

/// Runs the agent until `ticks` ticks ran, or until killed.
pub fn run(config: AgentRun) -> Result<(), AgentRunError> {
    let interval = config.agent.interval;
    let dry_run = config.agent.dry_run;
    let node = config.agent.node_name.clone();
    let sys_root = config.agent.sys_root.clone();
    let mut built = build_agent(config.agent.clone(), &config.source)?;
    built.set_doctor(doctor_at_start(&config.agent));
    let agent = Arc::new(Mutex::new(built));
    let health = agent_health(&agent);
    let history = Arc::new(Mutex::new(ActionHistory::new(&node, DEFAULT_CAPACITY, dry_run)));
    let counted = Arc::clone(&history);
    health.add_metrics(move |text| {
        let history = counted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        text.push_str(&kolo_agent::metrics::encode_history(&history));
    });
    if let Some(addr) = config.listen {
        let routes = crate::health::router(Arc::clone(&health))
            .merge(super::actions::router(Arc::clone(&history)));
        let bound = crate::health::serve_router_on_thread(addr, routes)?;
        tracing::info!(addr = %bound, "serving /metrics, /healthz, /readyz and /actions");
    }
    let until_spec =
        config.cluster.as_ref().map_or(Duration::from_secs(60), |c| c.report_interval_until_spec);
    let mut qos = QosLoop::new(default_strategies().into(), until_spec);
    qos.set_node_slo(config.node_slo.clone());
    let hooks = match &config.hook_socket {
        Some(path) => Some(serve_hooks(path, &agent, &health, qos.node_slo(), dry_run)?),
        None => None,
    };
    let Some(cluster) = &config.cluster else {
        let sink = sink(&ticks::lock(&agent), dry_run, None);
        let mut driver = QosDriver::new(qos, sink);
        driver.record_history(history);
        if let Some(views) = hooks {
            driver.publish_hooks(views);
        }
        tracing::info!(interval_ms = interval.as_millis() as u64, "agent running");
        run_ticks(&agent, interval, config.ticks, Some(&mut driver));
        return Ok(());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(AgentRunError::Runtime)?;
    let client = runtime.block_on(crate::client::connect(cluster.kubeconfig.as_deref()))?;
    let evictor: Box<dyn Evictor + Send> =
        Box::new(ApiEvictor::new(client.clone(), runtime.handle().clone(), health));
    let mut driver = QosDriver::new(qos, sink(&ticks::lock(&agent), dry_run, Some(evictor)));
    driver.record_history(history);
    if let Some(views) = hooks {
        driver.publish_hooks(views);
    }
    let (interval_tx, interval_rx) = watch::channel(until_spec);
    {
        let _context = runtime.enter();
        driver.follow_node_slo(watch_node_slo(client.clone(), &node));
        driver.follow_node_metric(watch_node_metric(client.clone(), &node), interval_tx);
    }
    if !dry_run {
        runtime.spawn(publish_cpu_topology(client.clone(), node.clone(), sys_root));
    }
    let writer = NodeMetricWriter::new(client, &node);
    runtime.spawn(report_every(Arc::clone(&agent), writer, interval_rx));
    tracing::info!(%node, interval_ms = interval.as_millis() as u64, "agent running (cluster mode)");
    run_ticks(&agent, interval, config.ticks, Some(&mut driver));
    Ok(())
}

/// Starts the runtime hook server on `path` over `agent` (its request
/// counters join `/metrics`), and returns where the rounds publish for it.
fn serve_hooks(
    path: &std::path::Path,
    agent: &Arc<Mutex<Agent<Source>>>,
    health: &Health,
    slo: &NodeSLOSpec,
    dry_run: bool,
) -> Result<Arc<HookViews>, HookSocketError> {
    let views = Arc::new(HookViews::new(slo.clone()));
    let server = Arc::new(HookServer::new(Arc::clone(agent), Arc::clone(&views), dry_run));
    serve_on_thread(path, Arc::clone(&server))?;
    health.add_metrics(move |text| server.metrics.encode(text));
    Ok(views)
}

/// The process's health endpoint for the agent: ready once the agent is
/// built (it needs no cache to sync), never elected (every node runs
/// one), and the agent's own collection metrics after the API write
/// counters (evictions in cluster mode).
fn agent_health(agent: &Arc<Mutex<Agent<Source>>>) -> Arc<Health> {
    let health = Health::new("agent");
    health.set_ready(true);
    health.leader.set(1);
    let agent = Arc::clone(agent);
    health.add_metrics(move |text| {
        text.push_str(&kolo_agent::metrics::encode(&*ticks::lock(&agent)));
    });
    health
}

/// Where plans go: printed with `--dry-run`, else to the node's cgroups
/// and `evictor` (default: killing the pod's processes).
fn sink(
    agent: &Agent<Source>,
    dry_run: bool,
    evictor: Option<Box<dyn Evictor + Send>>,
) -> Box<dyn PlanSink + Send> {
    let cgroups = Arc::clone(agent.cgroups());
    if dry_run {
        return Box::new(DryRunSink::new(cgroups.version(), Box::new(std::io::stdout())));
    }
    let evictor = evictor.unwrap_or_else(|| Box::new(KillEvictor::new(Arc::clone(&cgroups))));
    Box::new(CgroupSink::new(cgroups, evictor))
}

/// `kolo doctor` on this node at start-up: every check that is not ok is
/// logged (a warning, or an error for a failure), every QoS feature with
/// whether the node allows it; the report goes to `/metrics`.
fn doctor_at_start(agent: &kolo_agent::agent::AgentConfig) -> kolo_agent::doctor::Report {
    use kolo_agent::doctor::{Report, Roots, Status, probe};
    let roots = Roots {
        cgroup: agent.cgroups.root.clone(),
        kubelet_root: agent.cgroups.kubelet_root.clone(),
        proc: agent.proc_root.clone(),
        sys: agent.sys_root.clone(),
        may_create: !agent.dry_run,
    };
    let report = Report::from_facts(&probe(&roots));
    for c in &report.checks {
        match c.status {
            Status::Fail => tracing::error!(check = %c.name, detail = %c.detail, "kolo doctor"),
            Status::Warn => tracing::warn!(check = %c.name, detail = %c.detail, "kolo doctor"),
            Status::Ok | Status::Info => {}
        }
    }
    for f in &report.features {
        tracing::info!(feature = %f.name, on = f.on, how = %f.why, "QoS feature on this node");
    }
    report
}
