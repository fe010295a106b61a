//! `kolo bench`: measurements on this machine that unit benchmarks cannot
//! make. Both build a kubepods-shaped tree as real cgroups (a sandbox
//! under the machine's cgroup v1 mounts, removed at the end) and run
//! `kolo agent --standalone` on it as a separate process.
//!
//! * `agent-overhead` ([`agent_overhead`]): the agent's CPU time and peak
//!   RSS at N pods × M containers.
//! * `interference` ([`interference`]): an LS request loop's latency alone,
//!   next to BE CPU hogs under Kubernetes defaults, and next to them with
//!   the agent running; plus the agent's reaction time to an LS surge.

mod agent_overhead;
mod interference;
mod request_loop;

use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};

use kolo_agent::sandbox::TestCgroups;

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
        #[arg(short, long, value_enum, default_value_t = crate::OutputFormat::Text)]
        output: crate::OutputFormat,
    },
    /// LS latency under BE interference, alone / with Kubernetes defaults /
    /// with the kolo agent, and the agent's reaction to an LS surge (needs
    /// root and cgroup v1 cpu, cpuacct, cpuset and memory hierarchies; run
    /// it on an otherwise idle machine).
    Interference(interference::Args),
}

/// Runs `kolo bench ...`.
pub fn run(command: Command, out: &mut dyn Write) -> Result<(), BoxError> {
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
            let result = agent_overhead::measure(
                agent_overhead::Shape { pods, containers, be_pods },
                seconds,
                warmup,
                interval_ms,
            )?;
            match output {
                crate::OutputFormat::Json => {
                    serde_json::to_writer_pretty(&mut *out, &result)?;
                    writeln!(out)?;
                }
                crate::OutputFormat::Text => {
                    writeln!(
                        out,
                        "agent footprint: {} pods ({} BE) × {} containers ({} cgroups), {} ms interval, {:.0} s measured",
                        result.pods,
                        result.be_pods,
                        result.containers_per_pod,
                        result.cgroups,
                        result.interval_ms,
                        result.measured_seconds
                    )?;
                    writeln!(
                        out,
                        "  CPU:  {:.2} ms per second ({:.2}% of a core)",
                        result.cpu_ms_per_second, result.cpu_percent_of_a_core
                    )?;
                    writeln!(
                        out,
                        "  RSS:  {:.1} MiB peak, {:.1} MiB at the end",
                        result.peak_rss_mib, result.rss_mib_at_end
                    )?;
                }
            }
            Ok(())
        }
        Command::Interference(args) => interference::run(&args, out),
    }
}

/// Starts `kolo agent --standalone` (this binary) on `sandbox`'s tree, with
/// the pods in `pods` and `extra` arguments; its log goes to `log`. The
/// agent runs in the tree's `system` cgroup beside `kubepods`, with the
/// CPU weight a node's daemons have (`TestCgroups::system_cgroup`).
fn spawn_agent(
    sandbox: &mut TestCgroups,
    pods: &Path,
    extra: &[&str],
    log: std::fs::File,
) -> Result<Child, BoxError> {
    let system = sandbox.system_cgroup()?;
    Ok(sandbox
        .command_in(system, std::env::current_exe()?)
        .args(["agent", "--standalone", "--cgroup-root", kolo_agent::sandbox::CGROUP_ROOT])
        .args(["--cgroup-driver", "cgroupfs", "--kubelet-cgroup-root", sandbox.name()])
        .arg("--pods")
        .arg(pods)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?)
}
