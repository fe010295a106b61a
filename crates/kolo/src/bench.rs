//! `kolo bench`: wiring for [`kolo_bench`].

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;

use kolo_bench::{agent_overhead, interference};

use crate::OutputFormat;

pub mod scheduler;

type BoxError = Box<dyn Error + Send + Sync>;

/// `kolo bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// The node agent's CPU and memory footprint on real cgroups (needs
    /// root and cgroup v1 cpu, cpuacct, cpuset and memory hierarchies).
    AgentOverhead {
        /// Pods to create.
        #[arg(long, default_value_t = 150)]
        pods: usize,
        /// Containers per pod.
        #[arg(long, default_value_t = 2)]
        containers: usize,
        /// How many of the pods are labelled BE (`koordinator.sh/qosClass:
        /// BE`): with a BE pod on the node the QoS loop's fast path probes
        /// CPU between rounds, so a node with BE pods is the costlier case.
        #[arg(long, default_value_t = 15)]
        be_pods: usize,
        /// Measured window, seconds (after the warm-up).
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Warm-up before measuring, seconds.
        #[arg(long, default_value_t = 5)]
        warmup: u64,
        /// The agent's collection interval, milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// LS latency under BE interference, alone / with Kubernetes defaults /
    /// with the kolo agent, and the agent's reaction to an LS surge (needs
    /// root and cgroup v1 cpu, cpuacct, cpuset and memory hierarchies; run
    /// it on an otherwise idle machine).
    Interference {
        /// The runs.
        #[command(flatten)]
        args: interference::Args,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// Pending pods bound per second on a real API server by kolo's
    /// scheduler, kube-scheduler v1.20 (adaptive and 100 %
    /// `percentageOfNodesToScore`) and a bind-only client (the ceiling),
    /// one after another on fresh pod sets; with the API server's requests
    /// per pod, each process's connections to it and CPU (needs root to
    /// start the API server, or `--kubeconfig`).
    Scheduler {
        /// The runs.
        #[command(flatten)]
        args: scheduler::Args,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
    /// What `kolo runtime-proxy` adds to CRI calls (CreateContainer,
    /// StartContainer, ListContainers), straight at a containerd vs through
    /// the proxy with a hook server answering every hook (needs root and a
    /// containerd with the busybox image: `scripts/cluster start
    /// --runtime-only DIR`, whose DIR/runtime.env names both).
    RuntimeProxy {
        /// The runtime's CRI socket.
        #[arg(long)]
        runtime_endpoint: PathBuf,
        /// The cgroup the bench's pod goes under.
        #[arg(long)]
        cgroup_root: String,
        /// Containers to create and start (half each way).
        #[arg(long, default_value_t = 150)]
        containers: usize,
        /// ListContainers calls (half each way).
        #[arg(long, default_value_t = 400)]
        lists: usize,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
}

/// Runs `kolo bench ...` with this binary as the agent.
pub fn run(command: Command, out: &mut dyn Write) -> Result<(), BoxError> {
    let agent = std::env::current_exe()?;
    match command {
        Command::AgentOverhead {
            pods,
            containers,
            be_pods,
            seconds,
            warmup,
            interval_ms,
            output,
        } => {
            crate::interrupt::clean_up_sandboxes_on_signals();
            let shape = agent_overhead::Shape { pods, containers, be_pods };
            let result = agent_overhead::measure(&agent, shape, seconds, warmup, interval_ms)?;
            match output {
                OutputFormat::Json => crate::write_json(&result, out)?,
                OutputFormat::Text => result.write_text(out)?,
            }
        }
        Command::RuntimeProxy { runtime_endpoint, cgroup_root, containers, lists, output } => {
            let dir = tempfile::tempdir()?;
            let config = kolo_runtime_proxy::bench::BenchConfig {
                runtime: runtime_endpoint,
                cgroup_root,
                containers: containers.clamp(2, 2000),
                lists: lists.clamp(2, 100_000),
                proxy: dir.path().join("proxy.sock"),
                hook_socket: dir.path().join("hooks.sock"),
            };
            let figures = runtime_proxy_bench(&agent, &config, dir.path())?;
            match output {
                OutputFormat::Json => crate::write_json(&figures, out)?,
                OutputFormat::Text => write_proxy_figures(&config, &figures, out)?,
            }
        }
        Command::Scheduler { args, output } => {
            let report = scheduler::run(&args, &agent)?;
            match output {
                OutputFormat::Json => crate::write_json(&report, out)?,
                OutputFormat::Text => report.write_text(out)?,
            }
        }
        Command::Interference { args, output } => {
            crate::interrupt::clean_up_sandboxes_on_signals();
            let report = interference::run(&args, &agent)?;
            match output {
                OutputFormat::Json => crate::write_json(&report, out)?,
                OutputFormat::Text => report.write_text(out)?,
            }
        }
    }
    Ok(())
}

/// Runs the bench against `kolo runtime-proxy` (this binary) as a process
/// of its own, as it runs on a node; stops it afterwards.
fn runtime_proxy_bench(
    kolo: &std::path::Path,
    config: &kolo_runtime_proxy::bench::BenchConfig,
    dir: &std::path::Path,
) -> Result<Vec<kolo_runtime_proxy::bench::CallFigures>, BoxError> {
    let mut proxy = std::process::Command::new(kolo)
        .arg("runtime-proxy")
        .arg("--listen")
        .arg(&config.proxy)
        .arg("--runtime-endpoint")
        .arg(&config.runtime)
        .arg("--hook-socket")
        .arg(&config.hook_socket)
        .args(["--hook-stages", kolo_runtime_proxy::bench::PROXY_HOOK_STAGES])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .spawn()?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let result = runtime.map_err(BoxError::from).and_then(|runtime| {
        runtime.block_on(kolo_runtime_proxy::bench::run(config, dir)).map_err(BoxError::from)
    });
    // SIGKILL: the proxy keeps nothing, and its socket goes with `dir`.
    let _ = proxy.kill();
    let _ = proxy.wait();
    result
}

fn write_proxy_figures(
    config: &kolo_runtime_proxy::bench::BenchConfig,
    figures: &[kolo_runtime_proxy::bench::CallFigures],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "runtime proxy vs {} ({} containers, {} lists; µs)",
        config.runtime.display(),
        config.containers,
        config.lists
    )?;
    writeln!(
        out,
        "{:<18} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "call", "n/way", "direct p50", "proxy p50", "direct p99", "proxy p99", "+p50", "+p99"
    )?;
    for f in figures {
        let (a50, a99) = f.added_us();
        writeln!(
            out,
            "{:<18} {:>7} {:>10.0} {:>10.0} {:>10.0} {:>10.0} {:>9.0} {:>9.0}",
            f.call,
            f.direct.samples,
            f.direct.p50_us,
            f.proxied.p50_us,
            f.direct.p99_us,
            f.proxied.p99_us,
            a50,
            a99
        )?;
    }
    Ok(())
}
