//! `kolo bench`: wiring for [`kolo_bench`].

use std::error::Error;
use std::io::Write;

use kolo_bench::{agent_overhead, interference};

use crate::OutputFormat;

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
            let shape = agent_overhead::Shape { pods, containers, be_pods };
            let result = agent_overhead::measure(&agent, shape, seconds, warmup, interval_ms)?;
            match output {
                OutputFormat::Json => crate::write_json(&result, out)?,
                OutputFormat::Text => result.write_text(out)?,
            }
        }
        Command::Interference { args, output } => {
            let report = interference::run(&args, &agent)?;
            match output {
                OutputFormat::Json => crate::write_json(&report, out)?,
                OutputFormat::Text => report.write_text(out)?,
            }
        }
    }
    Ok(())
}
