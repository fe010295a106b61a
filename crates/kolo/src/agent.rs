//! `kolo agent`: the node agent. In standalone mode (no API server) it
//! takes its pods from a file or the kubelet, collects node, pod and
//! container usage from `/proc` and cgroups every interval, and prints or
//! serves `/metrics` and the NodeMetric it would report.

use std::error::Error;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kolo_agent::agent::{Agent, AgentConfig};
use kolo_agent::cgroup::{CgroupDriver, LayoutConfig};
use kolo_agent::pods::file::FileSource;
use kolo_agent::pods::kubelet::{KubeletConfig, KubeletSource, KubeletTls};
use kolo_agent::pods::{Fetched, PodSource, PodSourceError};
use kolo_core::clock::Timestamp;

use crate::logging::LogFormat;

type BoxError = Box<dyn Error + Send + Sync>;

/// Arguments shared by `kolo agent` and `kolo agent nodemetric`.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Run without an API server: pods come from `--pods` or `--kubelet`,
    /// and the NodeMetric is printed instead of written. (`kolo agent
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
    /// Write nothing (no predictor checkpoint).
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
    /// Serve `/metrics`, `/healthz` and `/readyz` here (e.g. 127.0.0.1:9316).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<u64>,
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

/// The pod source chosen on the command line.
pub(crate) enum Source {
    File(FileSource),
    Kubelet(Box<KubeletSource>),
}

impl PodSource for Source {
    fn name(&self) -> &str {
        match self {
            Source::File(s) => s.name(),
            Source::Kubelet(s) => s.name(),
        }
    }

    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        match self {
            Source::File(s) => s.fetch(),
            Source::Kubelet(s) => s.fetch(),
        }
    }
}

pub(crate) fn build_agent(common: &Common) -> Result<Agent<Source>, BoxError> {
    if !common.standalone {
        return Err("kolo agent without an API server needs --standalone (with --pods or \
                    --kubelet); `kolo agent cluster` runs it against the API server"
            .into());
    }
    let node_name = match &common.node_name {
        Some(n) => n.clone(),
        None => std::fs::read_to_string(common.proc_root.join("sys/kernel/hostname"))
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".into()),
    };
    let (source, every_tick) = match (&common.pods, &common.kubelet) {
        (Some(path), None) => {
            let mut file = FileSource::new(path);
            if let Some(n) = &common.node_name {
                file = file.with_node_name(n.clone());
            }
            (Source::File(file), true)
        }
        (None, Some(addr)) => {
            let (host, port) = match addr.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') || h.starts_with('[') => {
                    (h.trim_matches(['[', ']']).to_string(), Some(p.parse::<u16>()?))
                }
                _ => (addr.clone(), None),
            };
            let mut cfg = KubeletConfig::new(host);
            if let Some(port) = port {
                cfg.port = port;
            }
            cfg.token_file = common.kubelet_token_file.clone();
            if let Some(ca) = &common.kubelet_ca {
                cfg.tls = KubeletTls::Verify { ca_file: ca.clone(), server_name: None };
            }
            (Source::Kubelet(Box::new(KubeletSource::new(cfg)?)), false)
        }
        _ => return Err("give the pods with --pods FILE or --kubelet HOST[:PORT]".into()),
    };
    let mut layout = LayoutConfig::new(&common.cgroup_root);
    layout.kubelet_root = common.kubelet_cgroup_root.clone();
    layout.driver = common.cgroup_driver.map(|d| match d {
        Driver::Cgroupfs => CgroupDriver::Cgroupfs,
        Driver::Systemd => CgroupDriver::Systemd,
    });
    let mut config = AgentConfig::new(node_name);
    config.cgroups = layout;
    config.proc_root = common.proc_root.clone();
    config.sys_root = common.sys_root.clone();
    config.interval = Duration::from_millis(common.interval_ms.max(100));
    config.dry_run = common.dry_run;
    config.checkpoint = common.checkpoint.clone();
    config.sync_pods_every_tick = every_tick;
    Ok(Agent::new(config, source)?)
}

/// Ticks `agent` every interval until `rounds` ticks ran (or forever),
/// logging each tick's problems once per distinct message.
pub(crate) fn run_ticks(
    agent: &Mutex<Agent<Source>>,
    interval: Duration,
    rounds: Option<u64>,
    mut qos: Option<&mut Qos>,
) {
    let start = Instant::now();
    let mut last_errors: Vec<String> = Vec::new();
    let mut n = 0u64;
    loop {
        let now = Timestamp::now();
        let report = agent.lock().expect("agent lock").tick(now);
        if report.errors != last_errors {
            for e in &report.errors {
                tracing::warn!(error = %e, "collection problem");
            }
            last_errors = report.errors;
        }
        if let Some(qos) = qos.as_deref_mut() {
            qos.round(&mut agent.lock().expect("agent lock"), now, false);
        }
        n += 1;
        if rounds.is_some_and(|r| n >= r) {
            return;
        }
        // Sleep to the next multiple of the interval (no drift, no catch-up
        // storm after a slow round). With the QoS strategies on and a BE pod
        // on the node, probe node and BE CPU every 50 ms meanwhile and,
        // when the node is within 10 % of the capacity of the suppression
        // threshold, re-plan at once when non-BE CPU jumps by 10 % of the
        // capacity, then look again 10 ms later (`SurgeRule`): an LS surge
        // is answered within about one probe interval, not at the next
        // round. Without a BE pod there is nothing to throttle and the loop
        // just sleeps.
        let next = interval
            .mul_f64((start.elapsed().as_secs_f64() / interval.as_secs_f64()).floor() + 1.0);
        let probe = qos.is_some() && agent.lock().expect("agent lock").has_be_pods();
        let mut pause = FAST_PROBE;
        loop {
            let left = next.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            let Some(qos) = qos.as_deref_mut().filter(|_| probe) else {
                std::thread::sleep(left);
                break;
            };
            std::thread::sleep(left.min(pause));
            let now = Timestamp::now();
            let mut agent = agent.lock().expect("agent lock");
            pause = FAST_PROBE;
            if agent.fast_probe(now, FAST_PROBE_JUMP, qos.hot()) {
                tracing::debug!("node CPU jumped: re-planning now");
                qos.round(&mut agent, now, true);
                // A surge that began late in the last interval showed only
                // part of its size; look again soon, over a window that
                // lies wholly inside it, instead of a full interval later.
                pause = FAST_PROBE_FOLLOW_UP;
            }
        }
    }
}

/// How often the fast path reads node CPU between rounds.
const FAST_PROBE: Duration = Duration::from_millis(50);
/// How soon the fast path looks again after a surge re-planned.
const FAST_PROBE_FOLLOW_UP: Duration = Duration::from_millis(10);
/// The rise of non-BE CPU (share of capacity) that re-plans at once.
const FAST_PROBE_JUMP: f64 = 0.1;

/// The QoS strategies in the agent loop: planned every round; applied, or
/// printed with `--dry-run` whenever the plan changes.
pub(crate) struct Qos {
    slo: kolo_api::crd::NodeSLOSpec,
    dry_run: bool,
    strategies: Vec<Box<dyn kolo_agent::qos::Strategy>>,
    last: Vec<String>,
    /// The cluster's NodeSLO, followed when set (cluster mode).
    pub(crate) slo_source: Option<tokio::sync::watch::Receiver<Option<kolo_api::crd::NodeSLOSpec>>>,
    /// Evicts instead of killing processes when set (cluster mode).
    pub(crate) evictor: Option<Box<dyn kolo_agent::evict::Evictor + Send>>,
    rate: kolo_agent::evict::RateLimit,
}

impl Qos {
    pub(crate) fn new(common: &Common) -> Result<Qos, BoxError> {
        let slo = match &common.node_slo {
            None => kolo_api::crd::NodeSLOSpec::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let value: serde_json::Value = serde_saphyr::from_str(&text)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                // A NodeSLO object (`kubectl get nodeslo NAME -o yaml`) or just its spec.
                let spec = if value.get("kind").is_some() {
                    value.get("spec").cloned().unwrap_or_default()
                } else {
                    value
                };
                serde_json::from_value(spec)
                    .map_err(|e| format!("{}: not a NodeSLO spec: {e}", path.display()))?
            }
        };
        Ok(Qos {
            slo,
            dry_run: common.dry_run,
            strategies: kolo_agent::qos::default_strategies(),
            last: Vec::new(),
            rate: kolo_agent::evict::RateLimit::default(),
            slo_source: None,
            evictor: None,
        })
    }

    /// The node CPU share above which the fast path may act: the
    /// suppression threshold (65 % by default). Below it there is no LS
    /// pressure to answer, and node CPU blips (a shell, a compile) must not
    /// cut BE between rounds.
    fn hot(&self) -> f64 {
        let threshold = self.slo.resource_used_threshold_with_be.as_ref();
        threshold.and_then(|t| t.cpu_suppress_threshold_percent).unwrap_or(65) as f64 / 100.0
    }

    /// One planning round. A `fast` round (the fast path between rounds)
    /// only tightens: its pod samples are up to a round old, so it may cut
    /// the BE quota or cpuset when node CPU jumps, but giving CPU back and
    /// evicting wait for a full round with fresh pod samples.
    fn round(&mut self, agent: &mut Agent<Source>, now: Timestamp, fast: bool) {
        if let Some(rx) = self.slo_source.as_mut().filter(|rx| rx.has_changed().unwrap_or(false)) {
            self.slo = rx.borrow_and_update().clone().unwrap_or_default();
        }
        let state = agent.node_state(now);
        let mut plan = kolo_agent::qos::plan_all(&self.strategies, &state, &self.slo);
        if !fast {
            let cfs = kolo_agent::qos::cfs_quota_burst::needs_cfs_state(&state, &self.slo);
            agent.set_collect_cfs(cfs);
            let threshold = self.slo.resource_used_threshold_with_be.as_ref();
            let window = threshold.and_then(|t| t.cpu_evict_time_window_seconds);
            agent.set_be_usage_window(
                window.filter(|s| *s > 1).map(|s| Duration::from_secs(s.unsigned_abs())),
            );
        } else {
            plan.evictions.clear();
            plan.writes.retain(|w| {
                w.write.dir == state.be_dir && kolo_agent::qos::tightens(&w.write, &state.be)
            });
        }
        if self.dry_run {
            let lines = kolo_agent::qos::PlanReport::new(&plan, state.version).lines();
            if lines != self.last {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "# plan at {now} (dry run: nothing written)");
                for l in &lines {
                    let _ = writeln!(out, "{l}");
                }
            }
            self.last = lines;
        } else {
            let applied = agent.apply_writes(&plan);
            for w in applied.changed() {
                tracing::info!(path = %w.path.display(), old = %w.old, new = %w.new, "cgroup written");
            }
            for e in &applied.errors {
                tracing::warn!(error = %e, "cgroup write failed");
            }
            let mut kill = agent.kill_evictor();
            let evictor: &mut dyn kolo_agent::evict::Evictor = match self.evictor.as_mut() {
                Some(e) => e.as_mut(),
                None => &mut kill,
            };
            for e in &plan.evictions {
                let Some(pod) = state.pods.iter().find(|p| p.pod.uid == e.uid) else { continue };
                if !self.rate.allow(now) {
                    tracing::warn!(pod = %e.pod, strategy = e.strategy, "eviction held back by the rate limit");
                    continue;
                }
                match evictor.evict(pod, &e.reason) {
                    Ok(()) => agent.note_eviction(e.strategy, now),
                    Err(err) => tracing::warn!(error = %err, "eviction failed"),
                }
            }
        }
    }
}

/// Runs `kolo agent ...`.
pub fn run(args: Args, out: &mut dyn Write) -> Result<(), BoxError> {
    match args.command {
        Some(Command::Demo { seconds }) => demo(seconds, out),
        Some(Command::Cluster(args)) => crate::agent_cluster::run(*args),
        Some(Command::Plan { state, output }) => plan(&state, output, out),
        Some(Command::Nodemetric { common, duration, output }) => {
            crate::logging::init(common.log_format);
            let interval = Duration::from_millis(common.interval_ms.max(100));
            let agent = Mutex::new(build_agent(&common)?);
            let rounds = (Duration::from_secs(duration).as_secs_f64() / interval.as_secs_f64())
                .ceil()
                .max(2.0) as u64;
            run_ticks(&agent, interval, Some(rounds), None);
            let metric = agent.lock().expect("agent lock").node_metric(Timestamp::now());
            match output {
                Format::Json => {
                    serde_json::to_writer_pretty(&mut *out, &metric)?;
                    writeln!(out)?;
                }
                Format::Yaml => out.write_all(serde_saphyr::to_string(&metric)?.as_bytes())?,
            }
            Ok(())
        }
        None => {
            crate::logging::init(args.common.log_format);
            let interval = Duration::from_millis(args.common.interval_ms.max(100));
            let agent = Arc::new(Mutex::new(build_agent(&args.common)?));
            if args.once {
                run_ticks(&agent, interval, Some(2), None);
                let text = kolo_agent::metrics::encode(&*agent.lock().expect("agent lock"));
                out.write_all(text.as_bytes())?;
                return Ok(());
            }
            if let Some(addr) = args.listen {
                serve_metrics(addr, Arc::clone(&agent))?;
            }
            let rounds = args.duration.map(|d| {
                (Duration::from_secs(d).as_secs_f64() / interval.as_secs_f64()).ceil() as u64
            });
            tracing::info!(interval_ms = interval.as_millis() as u64, "agent running");
            let mut qos = Qos::new(&args.common)?;
            run_ticks(&agent, interval, rounds, Some(&mut qos));
            Ok(())
        }
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on a thread of its own (a
/// single-threaded runtime: scrapes are rare and cheap).
pub(crate) fn serve_metrics(
    addr: SocketAddr,
    agent: Arc<Mutex<Agent<Source>>>,
) -> Result<(), BoxError> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(|e| format!("--listen {addr}: {e}"))?;
    listener.set_nonblocking(true)?;
    tracing::info!(%addr, "serving /metrics");
    std::thread::Builder::new().name("metrics".into()).spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("a current-thread runtime builds");
        runtime.block_on(async move {
            let metrics = move || {
                let agent = Arc::clone(&agent);
                async move { kolo_agent::metrics::encode(&*agent.lock().expect("agent lock")) }
            };
            let router = axum::Router::new()
                .route("/metrics", axum::routing::get(metrics))
                .route("/healthz", axum::routing::get(|| async { "ok" }))
                .route("/readyz", axum::routing::get(|| async { "ok" }));
            let listener = tokio::net::TcpListener::from_std(listener).expect("a bound listener");
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "metrics server stopped");
            }
        });
    })?;
    Ok(())
}

fn demo(seconds: u64, out: &mut dyn Write) -> Result<(), BoxError> {
    use kolo_agent::sandbox::{TestCgroups, Workload, pods_file};
    use kolo_api::QoSClass;
    use kolo_api::kube_qos::KubeQoSClass;

    crate::logging::init(LogFormat::Text);
    let mut sandbox = TestCgroups::new().map_err(|reason| format!("kolo agent demo: {reason}"))?;
    let mut refs = Vec::new();
    let workloads = [
        ("spinner", Workload::Spin),
        ("holder", Workload::Memory { mib: 64 }),
        ("idle", Workload::Sleep),
    ];
    for (n, (name, workload)) in workloads.into_iter().enumerate() {
        let (p, rel) = sandbox.add_single_container_pod(
            n as u64 + 1,
            name,
            QoSClass::LS,
            KubeQoSClass::Burstable,
        );
        if let Err(e) = sandbox.spawn(&rel, workload) {
            // python3 may be missing for the memory holder: run without it.
            writeln!(out, "({name}: {e}; running without it)")?;
        }
        refs.push(p);
    }
    let dir = tempfile::tempdir()?;
    let pods = dir.path().join("pods.json");
    std::fs::write(&pods, pods_file(&refs))?;
    writeln!(
        out,
        "cgroups: /sys/fs/cgroup/{{cpu,cpuacct,cpuset,memory}}/{}/kubepods/burstable/pod<uid>/<id>",
        sandbox.name()
    )?;
    writeln!(
        out,
        "pods file: {}  (the same as: kolo agent --standalone --pods FILE --kubelet-cgroup-root {} --cgroup-driver cgroupfs)",
        pods.display(),
        sandbox.name()
    )?;
    let common = Common {
        standalone: true,
        pods: Some(pods),
        kubelet: None,
        kubelet_token_file: None,
        kubelet_ca: None,
        node_name: Some("demo-node".into()),
        cgroup_root: "/sys/fs/cgroup".into(),
        kubelet_cgroup_root: sandbox.name().to_string(),
        cgroup_driver: Some(Driver::Cgroupfs),
        proc_root: "/proc".into(),
        sys_root: "/sys".into(),
        interval_ms: 1000,
        dry_run: true,
        checkpoint: None,
        node_slo: None,
        log_format: LogFormat::Text,
    };
    let mut agent = build_agent(&common)?;
    writeln!(
        out,
        "{:>4}  {:>10}  {:>12}  {:>12}  {:>12}",
        "t", "node cpu", "spinner cpu", "holder mem", "idle cpu"
    )?;
    let start = Instant::now();
    for t in 0..=seconds {
        let report = agent.tick(Timestamp::now());
        let find = |name: &str| {
            let uid = &agent.pods().iter().find(|p| p.name == name)?.uid;
            agent.last_pod_samples().iter().find(|s| &s.uid == uid).cloned()
        };
        if let Some(node) = report.node {
            let cpu = |n| find(n).map_or("-".into(), |s| format!("{:.2} cores", s.cpu_cores));
            let mem =
                find("holder").map_or("-".into(), |s| format!("{} MiB", s.memory_bytes >> 20));
            writeln!(
                out,
                "{t:>3}s  {:>10}  {:>12}  {:>12}  {:>12}",
                format!("{:.2} cores", node.cpu_cores),
                cpu("spinner"),
                mem,
                cpu("idle")
            )?;
        } else {
            writeln!(out, "{t:>3}s  (first round: CPU baselines only)")?;
        }
        std::thread::sleep(Duration::from_secs(t + 1).saturating_sub(start.elapsed()));
    }
    writeln!(out, "---\n# the NodeMetric the agent would report")?;
    out.write_all(serde_saphyr::to_string(&agent.node_metric(Timestamp::now()))?.as_bytes())?;
    drop(sandbox);
    Ok(())
}

fn plan(
    path: &std::path::Path,
    output: crate::OutputFormat,
    out: &mut dyn Write,
) -> Result<(), BoxError> {
    use kolo_agent::qos::{PlanReport, default_strategies, plan_all, state_file::parse_state};

    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let input =
        parse_state(&text, Timestamp::now()).map_err(|e| format!("{}: {e}", path.display()))?;
    let plan = plan_all(&default_strategies(), &input.node, &input.slo);
    let report = PlanReport::new(&plan, input.node.version);
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
