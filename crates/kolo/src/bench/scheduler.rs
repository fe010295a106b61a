//! `kolo bench scheduler`: how fast pending pods get bound on a real API
//! server by kolo's scheduler (`kolo scheduler`, a process), by
//! kube-scheduler v1.20 (adaptive and 100 % `percentageOfNodesToScore`),
//! and by a client that only binds (the API server's ceiling), one after
//! another on fresh pod sets over the same nodes and bound pods.
//!
//! Per run: first → last and start → last bind rates and binds per second
//! (from a watch), the first bind's latency after the process started and
//! after its caches synced (kolo's `/readyz`), the API server's requests
//! per pod (`apiserver_request_total`), the most TCP connections the
//! process had to the API server at once (`/proc`), and its CPU.

mod cluster;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde::Serialize;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What schedules the pending pods of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// `kolo scheduler` (this binary), its default profile and plugins.
    Kolo,
    /// kube-scheduler, adaptive `percentageOfNodesToScore`.
    KubeScheduler,
    /// kube-scheduler, `percentageOfNodesToScore: 100`.
    #[value(name = "kube-scheduler-100")]
    #[serde(rename = "kube-scheduler-100")]
    KubeScheduler100,
    /// A task of the bench binding pending pods round-robin over the nodes
    /// through a bounded client: the API server's ceiling.
    BindOnly,
}

impl RunKind {
    fn name(self) -> &'static str {
        match self {
            RunKind::Kolo => "kolo",
            RunKind::KubeScheduler => "kube-scheduler",
            RunKind::KubeScheduler100 => "kube-scheduler-100",
            RunKind::BindOnly => "bind-only",
        }
    }

    /// The `schedulerName` of the run's pending pods.
    fn scheduler_name(self) -> &'static str {
        match self {
            RunKind::Kolo => "kolo-scheduler",
            RunKind::KubeScheduler | RunKind::KubeScheduler100 => "default-scheduler",
            RunKind::BindOnly => "kolo-bench-bind-only",
        }
    }
}

/// `kolo bench scheduler` options.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// An API server to use; default: start one with `CLUSTER_SCRIPT start
    /// --api-only` in a temporary directory, stopped afterwards.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The repository's `scripts/cluster` (to start the API server).
    #[arg(long, value_name = "FILE", default_value = "scripts/cluster")]
    pub cluster_script: PathBuf,
    /// Nodes (4 CPU, 32 GiB, 110 pods each).
    #[arg(long, default_value_t = 5000)]
    pub nodes: usize,
    /// Pods bound before the runs (100m CPU, 100 MiB each, round-robin).
    #[arg(long, default_value_t = 1000)]
    pub bound_pods: usize,
    /// Pending pods of each run, created before its scheduler starts.
    #[arg(long, default_value_t = 10000)]
    pub pending_pods: usize,
    /// The runs, in order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "kolo,kube-scheduler,kube-scheduler-100,bind-only"
    )]
    pub runs: Vec<RunKind>,
    /// kube-scheduler v1.20 (built by `scripts/cluster build`).
    #[arg(long, value_name = "FILE", default_value = "/var/cache/kolo-cluster/bin/kube-scheduler")]
    pub kube_scheduler: PathBuf,
    /// `--kube-api-connections` of kolo's scheduler, and the bind-only
    /// client's bound.
    #[arg(long, default_value_t = kolo_kube::client::DEFAULT_MAX_CONNECTIONS)]
    pub kube_api_connections: usize,
    /// The API server's process id, for its CPU per run when `--kubeconfig`
    /// names a running one (known when the bench starts it).
    #[arg(long, value_name = "PID")]
    pub apiserver_pid: Option<u32>,
    /// A run that has not bound every pod by then stops, seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_seconds: u64,
}

/// One run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Which run.
    pub run: RunKind,
    /// Pending pods created.
    pub pods: usize,
    /// Pods seen bound before the run ended.
    pub bound: usize,
    /// (bound − 1) / (last bind − first bind), pods/s.
    pub first_to_last_pods_per_s: f64,
    /// bound / (last bind − process start), pods/s.
    pub start_to_last_pods_per_s: f64,
    /// First bind after the process started, seconds.
    pub first_bind_after_start_s: Option<f64>,
    /// First bind after the process said its caches synced (kolo's
    /// `/readyz`), seconds; none where not known.
    pub first_bind_after_synced_s: Option<f64>,
    /// Binds in each second after the process started.
    pub binds_per_second: Vec<usize>,
    /// The API server's requests (all clients) during the run, per pod.
    pub requests_per_pod: f64,
    /// Most TCP connections the process had open to the API server at once
    /// (the bind-only client: connections it opened).
    pub max_connections: usize,
    /// The process's CPU during the run, seconds (the bind-only run: the
    /// whole bench process, its watch included).
    pub cpu_s: Option<f64>,
    /// The API server's CPU during the run, seconds, when its pid is known.
    pub apiserver_cpu_s: Option<f64>,
    /// Events kolo's scheduler dropped by the last bind (its Event queue
    /// was full); none for the other runs.
    pub events_dropped: Option<u64>,
}

/// The whole bench's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Nodes.
    pub nodes: usize,
    /// Pods bound before the runs.
    pub bound_pods: usize,
    /// The runs in order.
    pub runs: Vec<RunReport>,
    /// kolo's first → last rate over the bind-only one, when both ran.
    pub kolo_of_ceiling: Option<f64>,
}

/// Runs the bench (starting and stopping an API server unless
/// `--kubeconfig` names one), with `kolo` as kolo's scheduler.
pub fn run(args: &Args, kolo: &Path) -> Result<Report, BoxError> {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    match &args.kubeconfig {
        Some(config) => runtime.block_on(bench(args, kolo, config, args.apiserver_pid)),
        None => {
            let dir = tempfile::Builder::new().prefix("kolo-bench-api-").tempdir()?;
            let cluster_dir = dir.path().join("cluster");
            let status = Command::new(&args.cluster_script)
                .args(["start", "--api-only"])
                .arg(&cluster_dir)
                .stdout(Stdio::null())
                .status()?;
            if !status.success() {
                return Err(format!(
                    "{} start --api-only failed ({status})",
                    args.cluster_script.display()
                )
                .into());
            }
            // DIR/pids: one `NAME PID` line per process the script started.
            let pids = std::fs::read_to_string(cluster_dir.join("pids")).unwrap_or_default();
            let apiserver = pids.lines().rev().find_map(|l| l.strip_prefix("kube-apiserver "));
            let apiserver = apiserver.and_then(|p| p.trim().parse().ok());
            let config = cluster_dir.join("kubeconfig");
            let result = runtime.block_on(bench(args, kolo, &config, apiserver));
            let _ = Command::new(&args.cluster_script)
                .arg("stop")
                .arg(&cluster_dir)
                .stdout(Stdio::null())
                .status();
            result
        }
    }
}

async fn bench(
    args: &Args,
    kolo: &Path,
    config: &Path,
    apiserver: Option<u32>,
) -> Result<Report, BoxError> {
    let limits = kolo_kube::client::ConnectionLimits { max_connections: args.kube_api_connections };
    let api = kolo_kube::client::config(Some(config)).await?;
    let port = api.cluster_url.port_u16().unwrap_or(443);
    let (client, _) = kolo_kube::client::bounded_client(api.clone(), limits)?;
    let id = format!("kolo-bench-{}", std::process::id());
    cluster::prepare(&client, &id).await?;
    let result = async {
        cluster::create_nodes(&client, &id, args.nodes).await?;
        cluster::create_pods(&client, &id, "bound", None, args.bound_pods, args.nodes).await?;
        let mut runs = Vec::new();
        for &kind in &args.runs {
            let run = one_run(
                &Target {
                    args,
                    kolo,
                    config,
                    api: &api,
                    client: &client,
                    id: &id,
                    port,
                    apiserver,
                },
                kind,
            )
            .await?;
            eprintln!(
                "{}: {}/{} bound, {:.0} pods/s",
                kind.name(),
                run.bound,
                run.pods,
                run.first_to_last_pods_per_s
            );
            runs.push(run);
        }
        Ok::<_, BoxError>(runs)
    }
    .await;
    let cleanup = cluster::clean_up(&client, &id).await;
    let runs = result?;
    cleanup?;
    let rate = |k: RunKind| runs.iter().find(|r| r.run == k).map(|r| r.first_to_last_pods_per_s);
    let kolo_of_ceiling = rate(RunKind::Kolo).zip(rate(RunKind::BindOnly)).map(|(k, c)| k / c);
    Ok(Report { nodes: args.nodes, bound_pods: args.bound_pods, runs, kolo_of_ceiling })
}

/// A scheduler process of a run, and how to tell it has synced.
struct Process {
    child: Child,
    /// kolo's health port (`/readyz` answers 200 once caches are synced).
    health_port: Option<u16>,
    _dir: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts the run's scheduler process (none for the bind-only run).
fn start_process(
    args: &Args,
    kolo: &Path,
    config: &Path,
    kind: RunKind,
) -> Result<Option<Process>, BoxError> {
    let dir = tempfile::tempdir()?;
    let log = std::fs::File::create(dir.path().join("log"))?;
    let (mut command, health_port) = match kind {
        RunKind::BindOnly => return Ok(None),
        RunKind::Kolo => {
            let port = free_port()?;
            let mut c = Command::new(kolo);
            c.arg("scheduler").arg("--kubeconfig").arg(config);
            c.args(["--leader-elect=false", "--health-listen", &format!("127.0.0.1:{port}")]);
            c.args(["--kube-api-connections", &args.kube_api_connections.to_string()]);
            c.env("RUST_LOG", "warn");
            (c, Some(port))
        }
        RunKind::KubeScheduler | RunKind::KubeScheduler100 => {
            let percentage = if kind == RunKind::KubeScheduler100 { 100 } else { 0 };
            let file = dir.path().join("config.yaml");
            // QPS / burst far above what the API server serves, so its
            // client's rate limiter is not what is measured.
            let text = format!(
                "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n\
                 clientConnection:\n  kubeconfig: {}\n  qps: 100000\n  burst: 100000\n\
                 leaderElection:\n  leaderElect: false\npercentageOfNodesToScore: {percentage}\n",
                config.display()
            );
            std::fs::write(&file, text)?;
            let mut c = Command::new(&args.kube_scheduler);
            c.arg("--config").arg(&file).args(["--port=0", "--secure-port=0", "-v=1"]);
            (c, None)
        }
    };
    let child = command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
    Ok(Some(Process { child, health_port, _dir: dir }))
}

/// `GET path` on kolo's health port: the status line's code and the body.
async fn health_get(port: u16, path: &str) -> Option<(String, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    s.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.ok()?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n")?;
    Some((head.get(9..12)?.to_string(), body.to_string()))
}

/// Polls kolo's `/readyz` every 5 ms until it answers 200.
async fn synced_at(port: u16) -> Instant {
    loop {
        if health_get(port, "/readyz").await.is_some_and(|(code, _)| code == "200") {
            return Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// kolo's scheduler's Events dropped so far (its queue was full), from
/// `kolo_scheduler_actions_total{action="event",result="dropped"}`.
async fn events_dropped(port: u16) -> Option<u64> {
    let (_, body) = health_get(port, "/metrics").await?;
    let dropped = body
        .lines()
        .filter(|l| l.contains("action=\"event\"") && l.contains("result=\"dropped\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    Some(dropped as u64)
}

/// Binds every pending pod of `run` round-robin over the nodes through a
/// bounded client; returns how many connections it opened.
async fn bind_only(
    config: &kube::Config,
    args: &Args,
    id: &str,
    run: &str,
) -> Result<usize, BoxError> {
    let limits = kolo_kube::client::ConnectionLimits { max_connections: args.kube_api_connections };
    let (client, counter) = kolo_kube::client::bounded_client(config.clone(), limits)?;
    let api: Api<Pod> = Api::namespaced(client.clone(), id);
    let pending = api
        .list_metadata(&ListParams::default().labels(&format!("{}={run}", cluster::RUN_LABEL)))
        .await?;
    let next = Arc::new(AtomicUsize::new(0));
    let mut binds = futures::stream::iter(pending.items.into_iter().map(|meta| {
        let (api, next) = (api.clone(), next.clone());
        let node = format!("{id}-n{}", next.fetch_add(1, Ordering::Relaxed) % args.nodes.max(1));
        async move {
            let name = meta.metadata.name.unwrap_or_default();
            let binding = Binding {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.clone()),
                    uid: meta.metadata.uid,
                    ..Default::default()
                },
                target: ObjectReference {
                    kind: Some("Node".into()),
                    api_version: Some("v1".into()),
                    name: Some(node),
                    ..Default::default()
                },
            };
            api.create_subresource::<_, serde_json::Value>(
                "binding",
                &name,
                &PostParams::default(),
                &binding,
            )
            .await
            .map(|_| ())
        }
    }))
    .buffer_unordered(args.kube_api_connections.max(1));
    while let Some(result) = binds.next().await {
        result?;
    }
    Ok(counter.peak() as usize)
}

/// What every run works against.
struct Target<'a> {
    args: &'a Args,
    kolo: &'a Path,
    config: &'a Path,
    /// The client configuration `config` holds.
    api: &'a kube::Config,
    client: &'a Client,
    id: &'a str,
    /// The API server's port.
    port: u16,
    /// The API server's pid, if known.
    apiserver: Option<u32>,
}

/// A process's CPU seconds so far, `None` once it is gone.
fn cpu_seconds(pid: u32) -> Option<f64> {
    kolo_bench::process::process_cpu_seconds(pid).ok()
}

/// Samples a process's established connections to `port` every 10 ms,
/// keeping the most seen at once, until aborted.
fn sample_connections(pid: u32, port: u16, peak: Arc<AtomicUsize>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Ok(n) = kolo_kube::client::established_connections(pid, port) {
                peak.fetch_max(n, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
}

/// One run on a fresh set of pending pods, deleted afterwards.
async fn one_run(t: &Target<'_>, kind: RunKind) -> Result<RunReport, BoxError> {
    let (args, run) = (t.args, kind.name());
    let pods = args.pending_pods;
    cluster::create_pods(t.client, t.id, run, Some(kind.scheduler_name()), pods, args.nodes)
        .await?;
    let (binds, watch) = cluster::watch_binds(t.client, t.id, run).await?;
    let requests_before = cluster::apiserver_requests(t.client).await?;
    let own_cpu_before = cpu_seconds(std::process::id());
    let apiserver_cpu_before = t.apiserver.and_then(cpu_seconds);
    let start = Instant::now();
    let mut process = start_process(args, t.kolo, t.config, kind)?;
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = process.as_ref().map(|p| sample_connections(p.child.id(), t.port, peak.clone()));
    let synced =
        process.as_ref().and_then(|p| p.health_port).map(|port| tokio::spawn(synced_at(port)));
    if kind == RunKind::BindOnly {
        peak.store(bind_only(t.api, args, t.id, run).await?, Ordering::Relaxed);
    }
    let deadline = start + Duration::from_secs(args.timeout_seconds);
    while binds.count() < pods && Instant::now() < deadline {
        if let Some(p) = process.as_mut()
            && let Some(status) = p.child.try_wait()?
        {
            return Err(format!(
                "the {run} process exited ({status}) with {}/{pods} bound",
                binds.count()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu_s = match &process {
        Some(p) => cpu_seconds(p.child.id()),
        None => cpu_seconds(std::process::id()).zip(own_cpu_before).map(|(a, b)| a - b),
    };
    let requests = cluster::apiserver_requests(t.client).await? - requests_before;
    let apiserver_cpu_s =
        t.apiserver.and_then(cpu_seconds).zip(apiserver_cpu_before).map(|(a, b)| a - b);
    let events_dropped = match process.as_ref().and_then(|p| p.health_port) {
        Some(port) => events_dropped(port).await,
        None => None,
    };
    drop(process);
    sampler.inspect(|s| s.abort());
    watch.abort();
    let synced = match synced {
        Some(task) if task.is_finished() => Some(task.await?),
        Some(task) => {
            task.abort();
            None
        }
        None => None,
    };
    let offsets: Vec<f64> =
        binds.times().iter().map(|t| t.duration_since(start).as_secs_f64()).collect();
    let rates = Rates::of(&offsets);
    cluster::delete_pods(t.client, t.id, run).await?;
    Ok(RunReport {
        run: kind,
        pods,
        bound: offsets.len(),
        first_to_last_pods_per_s: rates.first_to_last,
        start_to_last_pods_per_s: rates.start_to_last,
        first_bind_after_start_s: rates.first,
        first_bind_after_synced_s: synced
            .zip(rates.first)
            .map(|(s, first)| first - s.duration_since(start).as_secs_f64()),
        binds_per_second: rates.per_second,
        requests_per_pod: requests / pods.max(1) as f64,
        max_connections: peak.load(Ordering::Relaxed),
        cpu_s,
        apiserver_cpu_s,
        events_dropped,
    })
}

/// Bind rates from the bind times (seconds after the process started).
#[derive(Debug, PartialEq)]
struct Rates {
    first_to_last: f64,
    start_to_last: f64,
    first: Option<f64>,
    per_second: Vec<usize>,
}

impl Rates {
    fn of(offsets: &[f64]) -> Rates {
        let first = offsets.iter().copied().reduce(f64::min);
        let last = offsets.iter().copied().reduce(f64::max).unwrap_or(0.0);
        let n = offsets.len();
        let first_to_last = match first {
            Some(f) if n > 1 && last > f => (n - 1) as f64 / (last - f),
            _ => 0.0,
        };
        let start_to_last = if last > 0.0 { n as f64 / last } else { 0.0 };
        let mut per_second = vec![0; if n > 0 { last.floor() as usize + 1 } else { 0 }];
        for &o in offsets {
            per_second[o.max(0.0).floor() as usize] += 1;
        }
        Rates { first_to_last, start_to_last, first, per_second }
    }
}

impl Report {
    /// The report as a table, then each run's binds per second.
    pub fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "scheduler bench: {} nodes, {} bound pods", self.nodes, self.bound_pods)?;
        writeln!(
            out,
            "{:<19} {:>11} {:>11} {:>11} {:>11} {:>11} {:>8} {:>9} {:>6} {:>9}",
            "run",
            "bound",
            "first>last",
            "start>last",
            "1st bind s",
            "after sync",
            "req/pod",
            "max conns",
            "CPU s",
            "API CPU s"
        )?;
        let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        for r in &self.runs {
            writeln!(
                out,
                "{:<19} {:>11} {:>11.0} {:>11.0} {:>11} {:>11} {:>8.2} {:>9} {:>6} {:>9}",
                r.run.name(),
                format!("{}/{}", r.bound, r.pods),
                r.first_to_last_pods_per_s,
                r.start_to_last_pods_per_s,
                secs(r.first_bind_after_start_s),
                secs(r.first_bind_after_synced_s),
                r.requests_per_pod,
                r.max_connections,
                r.cpu_s.map_or("-".to_string(), |c| format!("{c:.1}")),
                r.apiserver_cpu_s.map_or("-".to_string(), |c| format!("{c:.1}")),
            )?;
        }
        for r in &self.runs {
            if let Some(dropped) = r.events_dropped {
                writeln!(out, "{}: {dropped} Events dropped (queue full)", r.run.name())?;
            }
        }
        if let Some(share) = self.kolo_of_ceiling {
            writeln!(out, "kolo / bind-only (first>last): {:.0} %", share * 100.0)?;
        }
        writeln!(out, "binds per second after start:")?;
        for r in &self.runs {
            let list: Vec<String> = r.binds_per_second.iter().map(usize::to_string).collect();
            writeln!(out, "  {:<19} {}", r.run.name(), list.join(" "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_bind_times() {
        // 4 binds at 1.0, 1.5, 2.0 and 3.0 s: 3 intervals over 2 s, 4 pods
        // over 3 s; seconds 0..=3 hold 0, 2, 1, 1 binds.
        let rates = Rates::of(&[1.5, 1.0, 3.0, 2.0]);
        assert_eq!(rates.first_to_last, 1.5);
        assert!((rates.start_to_last - 4.0 / 3.0).abs() < 1e-12);
        assert_eq!(rates.first, Some(1.0));
        assert_eq!(rates.per_second, vec![0, 2, 1, 1]);
    }

    #[test]
    fn no_binds_make_zero_rates() {
        let rates = Rates::of(&[]);
        assert_eq!(
            rates,
            Rates { first_to_last: 0.0, start_to_last: 0.0, first: None, per_second: vec![] }
        );
        // One bind: no interval to measure first → last over.
        let one = Rates::of(&[0.5]);
        assert_eq!((one.first_to_last, one.start_to_last, one.per_second), (0.0, 2.0, vec![1]));
    }
}
