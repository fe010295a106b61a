//! `kolo agent`: the node agent. In standalone mode (no API server) it
//! takes its pods from a file or the kubelet, collects node, pod and
//! container usage from `/proc` and cgroups every interval, and prints or
//! serves `/metrics` and the NodeMetric it would report.

use std::error::Error;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use kolo_agent::agent::{Agent, AgentConfig};
use kolo_agent::cgroup::{CgroupDriver, LayoutConfig};
use kolo_agent::qos::state_file::node_slo_spec;
use kolo_api::crd::NodeSLOSpec;
use kolo_core::clock::Timestamp;
use kolo_kube::agent::ticks::lock;
use kolo_kube::agent::{AgentRun, ClusterSide, Source, SourceConfig, build_agent, run_ticks};

use crate::logging::LogFormat;

type BoxError = Box<dyn Error + Send + Sync>;

/// Arguments shared by `kolo agent` and `kolo agent nodemetric`.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Run without an API server: pods come from `--pods` or `--kubelet`,
    /// and the NodeMetric is printed instead of written. The QoS
    /// strategies still act on this host: they write the pods' cgroups and
    /// evict BE pods by killing their processes (at most 3 a minute); add
    /// `--dry-run` to print what they would do instead. (`kolo agent
    /// cluster` runs against a cluster.)
    #[arg(long)]
    pub standalone: bool,
    /// A file of Pod objects (YAML or JSON; re-read when it changes).
    #[arg(long, value_name = "FILE", conflicts_with = "kubelet")]
    pub pods: Option<PathBuf>,
    /// Ask the kubelet at this address for its pods (`https://ADDR:10250/pods/`).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub kubelet: Option<String>,
    /// Bearer token file for the kubelet (re-read on every request).
    #[arg(long, value_name = "FILE", requires = "kubelet")]
    pub kubelet_token_file: Option<PathBuf>,
    /// CA bundle to verify the kubelet's certificate; without it the
    /// certificate is not verified (kubelet serving certificates are usually
    /// self-signed; Koordinator does the same).
    #[arg(long, value_name = "FILE", requires = "kubelet")]
    pub kubelet_ca: Option<PathBuf>,
    /// The node's name (the NodeMetric's name; default: the hostname). A
    /// pods file then only gives pods bound to it or to no node.
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,
    /// The cgroup mount root.
    #[arg(long, value_name = "DIR", default_value = "/sys/fs/cgroup")]
    pub cgroup_root: PathBuf,
    /// The kubelet's `--cgroup-root`, relative to each hierarchy (where
    /// `kubepods` lives; usually empty).
    #[arg(long, value_name = "DIR", default_value = "")]
    pub kubelet_cgroup_root: String,
    /// The kubelet's cgroup driver; default: detected from the kubepods
    /// directory name.
    #[arg(long, value_enum)]
    pub cgroup_driver: Option<Driver>,
    /// The proc filesystem.
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// The sys filesystem.
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sys_root: PathBuf,
    /// Collection interval in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub interval_ms: u64,
    /// Change nothing on the host: no cgroup writes, no evictions, no
    /// predictor checkpoint; the QoS strategies' writes are printed.
    #[arg(long)]
    pub dry_run: bool,
    /// Predictor checkpoint file (restored at start, saved every 10 min).
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// The NodeSLO the QoS strategies follow (a NodeSLO object or its
    /// spec, YAML or JSON); default: every default (suppression and
    /// eviction off, BE isolation on).
    #[arg(long = "node-slo", value_name = "FILE")]
    pub node_slo: Option<PathBuf>,
    /// Log format (stderr; `RUST_LOG` filters, default `info`).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The kubelet's cgroup driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Driver {
    /// `kubepods/burstable/pod<uid>/<id>`.
    Cgroupfs,
    /// `kubepods.slice/kubepods-burstable.slice/...`.
    Systemd,
}

/// `kolo agent` arguments.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// A subcommand; without one, the agent runs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// How to find pods and cgroups.
    #[command(flatten)]
    pub common: Common,
    /// Collect two rounds (one interval apart), print `/metrics` text and
    /// exit.
    #[arg(long)]
    pub once: bool,
    /// Serve `/metrics`, `/healthz`, `/readyz` and `/actions` (the QoS
    /// actions of the last while, JSON) here (e.g. 127.0.0.1:9316).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<u64>,
    /// Serve the runtime hooks `kolo runtime-proxy` calls on this unix
    /// socket (e.g. /var/run/kolo/agent-hooks.sock; off by default).
    #[arg(long, value_name = "PATH")]
    pub hook_socket: Option<PathBuf>,
}

/// `kolo agent` subcommands.
// Parsed once per process: the size difference between variants is moot.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Collect for a while and print the NodeMetric the agent would report.
    Nodemetric {
        /// How to find pods and cgroups.
        #[command(flatten)]
        common: Common,
        /// How long to collect before reporting, seconds (at least two
        /// intervals: the first round only sets the CPU baselines).
        #[arg(long, value_name = "SECONDS", default_value_t = 3)]
        duration: u64,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = Format::Yaml)]
        output: Format,
    },
    /// What would the QoS strategies do? Reads a node state file (node
    /// capacity and usage, pods with their usage, the BE cgroup's current
    /// values, the NodeSLO spec) and prints the cgroup writes and evictions
    /// the strategies would make, each with its reason. Nothing is written.
    Plan {
        /// The node state (YAML or JSON; the format is in docs/cli.md).
        #[arg(long, value_name = "FILE")]
        state: PathBuf,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = crate::OutputFormat::Text)]
        output: crate::OutputFormat,
        /// The node policy: `koordinator` (the strategies' writes and
        /// evictions) or `katalyst` (the pools, their sizes and why, and
        /// the reclaimed resources). Default: the state's NodeSLO
        /// `extensions.nodePolicy`, else koordinator.
        #[arg(long, value_name = "POLICY")]
        node_policy: Option<kolo_agent::katalyst::NodePolicy>,
    },
    /// Run the agent for a cluster: like `kolo agent`, and it also writes
    /// its node's NodeMetric status, follows its NodeSLO, and evicts
    /// through the Eviction API.
    Cluster(Box<crate::agent_cluster::Args>),
    /// Try the agent on this machine without a cluster: creates a small
    /// kubepods tree as real cgroups (one pod spinning a CPU, one holding
    /// 64 MiB, one idle), runs the agent on it, prints what it measures
    /// every second and the NodeMetric at the end, and removes everything
    /// it created. Needs root and cgroup v1 (cpu, cpuacct, cpuset, memory).
    Demo {
        /// How long to run, seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 5)]
        seconds: u64,
    },
}

/// How the NodeMetric is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

impl Common {
    /// The agent's configuration and pod source (standalone: `--pods` or
    /// `--kubelet`; `kolo agent cluster` checks its own way).
    fn agent_config(&self) -> Result<(AgentConfig, SourceConfig), BoxError> {
        let node_name = match &self.node_name {
            Some(n) => n.clone(),
            None => std::fs::read_to_string(self.proc_root.join("sys/kernel/hostname"))
                .map(|h| h.trim().to_string())
                .unwrap_or_else(|_| "localhost".into()),
        };
        let source = match (&self.pods, &self.kubelet) {
            (Some(path), None) => {
                SourceConfig::File { path: path.clone(), node_name: self.node_name.clone() }
            }
            (None, Some(address)) => SourceConfig::Kubelet {
                address: address.clone(),
                token_file: self.kubelet_token_file.clone(),
                ca_file: self.kubelet_ca.clone(),
            },
            _ => return Err("give the pods with --pods FILE or --kubelet HOST[:PORT]".into()),
        };
        let mut layout = LayoutConfig::new(&self.cgroup_root);
        layout.kubelet_root = self.kubelet_cgroup_root.clone();
        layout.driver = self.cgroup_driver.map(|d| match d {
            Driver::Cgroupfs => CgroupDriver::Cgroupfs,
            Driver::Systemd => CgroupDriver::Systemd,
        });
        let mut config = AgentConfig::new(node_name);
        config.cgroups = layout;
        config.proc_root = self.proc_root.clone();
        config.sys_root = self.sys_root.clone();
        config.interval = Duration::from_millis(self.interval_ms.max(100));
        config.dry_run = self.dry_run;
        config.checkpoint = self.checkpoint.clone();
        Ok((config, source))
    }

    /// The run of `kolo agent` (standalone) or `kolo agent cluster`.
    pub(crate) fn run_config(
        &self,
        listen: Option<SocketAddr>,
        ticks: Option<u64>,
        cluster: Option<ClusterSide>,
        hook_socket: Option<PathBuf>,
    ) -> Result<AgentRun, BoxError> {
        let (agent, source) = self.agent_config()?;
        let node_slo = self.node_slo.as_deref().map(load_node_slo).transpose()?;
        Ok(AgentRun { agent, source, node_slo, listen, ticks, cluster, hook_socket })
    }

    /// The agent alone (no QoS), for the commands that only collect.
    fn standalone_agent(&self) -> Result<Mutex<Agent<Source>>, BoxError> {
        require_standalone(self)?;
        let (config, source) = self.agent_config()?;
        Ok(Mutex::new(build_agent(config, &source)?))
    }
}

fn require_standalone(common: &Common) -> Result<(), BoxError> {
    if common.standalone {
        return Ok(());
    }
    Err("kolo agent without an API server needs --standalone (with --pods or --kubelet); \
         `kolo agent cluster` runs it against the API server"
        .into())
}

/// A NodeSLO object (`kubectl get nodeslo NAME -o yaml`), a document with
/// just its `spec:`, or the spec itself, YAML or JSON. Anything else (an
/// object of another kind, a spec field of the wrong type, a file that is
/// not a mapping) is an error naming the file and the field: a malformed
/// NodeSLO must not silently become the default one.
fn load_node_slo(path: &std::path::Path) -> Result<NodeSLOSpec, BoxError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(node_slo_spec(&text).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// Ticks enough for `seconds` at the agent's interval (at least `min`).
fn ticks_for(common: &Common, seconds: u64, min: f64) -> u64 {
    let interval = Duration::from_millis(common.interval_ms.max(100));
    (Duration::from_secs(seconds).as_secs_f64() / interval.as_secs_f64()).ceil().max(min) as u64
}

/// Runs `kolo agent ...`.
pub fn run(args: Args, out: &mut dyn Write) -> Result<(), BoxError> {
    match args.command {
        Some(Command::Demo { seconds }) => {
            crate::logging::init(LogFormat::Text);
            crate::interrupt::clean_up_sandboxes_on_signals();
            Ok(kolo_kube::agent::demo::run(seconds, out)?)
        }
        Some(Command::Cluster(args)) => crate::agent_cluster::run(*args),
        Some(Command::Plan { state, output, node_policy }) => {
            plan(&state, output, node_policy, out)
        }
        Some(Command::Nodemetric { common, duration, output }) => {
            crate::logging::init(common.log_format);
            let agent = common.standalone_agent()?;
            let interval = Duration::from_millis(common.interval_ms.max(100));
            run_ticks(&agent, interval, Some(ticks_for(&common, duration, 2.0)), None);
            let metric = lock(&agent).node_metric(Timestamp::now());
            match output {
                Format::Json => {
                    serde_json::to_writer_pretty(&mut *out, &metric)?;
                    writeln!(out)?;
                }
                Format::Yaml => out.write_all(serde_saphyr::to_string(&metric)?.as_bytes())?,
            }
            Ok(())
        }
        None if args.once => {
            crate::logging::init(args.common.log_format);
            // Read and checked as in every other mode (a malformed file is
            // an error, never silently the default NodeSLO), though two
            // collection rounds apply no QoS.
            if let Some(path) = &args.common.node_slo {
                load_node_slo(path)?;
                tracing::warn!(path = %path.display(), "--once only collects: the NodeSLO is checked, not applied");
            }
            let agent = args.common.standalone_agent()?;
            let interval = Duration::from_millis(args.common.interval_ms.max(100));
            run_ticks(&agent, interval, Some(2), None);
            out.write_all(kolo_agent::metrics::encode(&*lock(&agent)).as_bytes())?;
            Ok(())
        }
        None => {
            crate::logging::init(args.common.log_format);
            require_standalone(&args.common)?;
            let ticks = args.duration.map(|d| ticks_for(&args.common, d, 0.0));
            kolo_kube::agent::run(args.common.run_config(
                args.listen,
                ticks,
                None,
                args.hook_socket,
            )?)?;
            Ok(())
        }
    }
}

fn plan(
    path: &std::path::Path,
    output: crate::OutputFormat,
    node_policy: Option<kolo_agent::katalyst::NodePolicy>,
    out: &mut dyn Write,
) -> Result<(), BoxError> {
    use kolo_agent::katalyst::NodePolicy;
    use kolo_agent::qos::{PlanReport, state_file::parse_state};

    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let input =
        parse_state(&text, Timestamp::now()).map_err(|e| format!("{}: {e}", path.display()))?;
    let policy = match node_policy {
        Some(p) => p,
        None => NodePolicy::from_node_slo(&input.slo)
            .map_err(|e| format!("{}: nodeSLO: {e}", path.display()))?,
    };
    if policy == NodePolicy::Katalyst {
        return plan_katalyst(path, &input.node, output, out);
    }
    let mut input = input;
    let round = input.plan();
    let report = PlanReport::new(&round, &input.node, input.node.version);
    match output {
        crate::OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        crate::OutputFormat::Text => {
            if report.writes.is_empty() && report.evictions.is_empty() {
                writeln!(out, "nothing to do")?;
            }
            for line in report.lines() {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}

/// `kolo agent plan` with the Katalyst node policy: the pools and why.
fn plan_katalyst(
    path: &std::path::Path,
    node: &kolo_agent::qos::NodeState,
    output: crate::OutputFormat,
    out: &mut dyn Write,
) -> Result<(), BoxError> {
    use kolo_agent::katalyst::{KatalystConfig, report::report_for_node};

    let report = report_for_node(node, &KatalystConfig::default())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match output {
        crate::OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        crate::OutputFormat::Text => {
            for line in report.lines() {
                writeln!(out, "{line}")?;
            }
        }
    }
    Ok(())
}
