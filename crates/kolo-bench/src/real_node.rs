//! `kolo bench interference` on a real node: the LS and BE pods are pods
//! the kubelet runs (created through the API server in a namespace of the
//! benchmark's own), and kolo's agent is `kolo agent cluster` against that
//! node.
//!
//! The LS pod (Burstable, requests 1 CPU) runs `sleep`; the request loop
//! runs in a thread of this process moved into that container's cgroups
//! (cpu, cpuacct, cpuset, memory: the directories the kubelet and runc
//! made under the kubelet's cgroup root), so the LS work runs under exactly
//! the CPU controls the kubelet gave the container. The BE pods
//! (BestEffort) run one busy loop each, one pod per CPU.
//!
//! Phases, each measuring every load and arrival pattern in turn: LS alone
//! (before the BE pods exist), Kubernetes defaults (BE pods, no agent),
//! kolo defaults (the agent started with co-location on, measured once it
//! has put isolation in place plus `--settle`). BE CPU is the BE pods'
//! cgroups' `cpuacct.usage`; LS CPU the LS container's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kolo_agent::sandbox::CONTROLLERS;

use crate::BoxError;
use crate::interference::{Args, Load, Run, Setup, measure_window, read_usage};
use crate::request_loop::RequestLoop;

mod cleanup;
mod node;
mod pods;

pub(crate) use node::Node;
pub use node::NodeArgs;

use cleanup::Session;
use pods::{Cluster, be_pod, ls_pod, pod_dir};

/// The cgroups the measurement reads and joins.
struct Cgroups {
    /// The LS container's directory in each of [`CONTROLLERS`].
    ls_dirs: Vec<PathBuf>,
    /// The LS container's `cpuacct.usage`.
    ls_usage: PathBuf,
    /// The BE pods' `cpuacct.usage`.
    be_usage: Vec<PathBuf>,
}

impl Cgroups {
    fn usage(&self) -> Result<(u64, u64), BoxError> {
        let mut be = 0;
        for path in &self.be_usage {
            be += read_usage(path)?;
        }
        Ok((read_usage(&self.ls_usage)?, be))
    }
}

/// Runs the three phases on `node` for every load; `iterations` is the
/// calibrated work per request. Returns the namespace it used and the
/// runs grouped by load.
pub(crate) fn run(
    node: &Node,
    args: &Args,
    agent: &Path,
    iterations: u64,
    loads: &[Load],
) -> Result<(String, Vec<Run>), BoxError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let namespace = format!("kolo-bench-{}-{}", std::process::id(), unix_seconds());
    let session = Session::start(Cluster::connect(&node.kubeconfig)?, &namespace)?;
    eprintln!("kolo bench interference: namespace {namespace} on node {}", node.name);
    let ls = session.cluster.run_pod(&namespace, ls_pod(&node.name))?;
    let ls_pod_dir = |c: &str| pod_dir(&node.cgroup_root, c, "burstable", &ls.uid);
    let mut cgroups = Cgroups {
        ls_dirs: CONTROLLERS.iter().map(|s| ls_pod_dir(s.name()).join(&ls.container_id)).collect(),
        ls_usage: ls_pod_dir("cpuacct").join(&ls.container_id).join("cpuacct.usage"),
        be_usage: Vec::new(),
    };
    if let Some(missing) = cgroups.ls_dirs.iter().find(|d| !d.is_dir()) {
        return Err(format!("the LS container's cgroup {} is not there", missing.display()).into());
    }
    let mut runs = phase(Setup::Alone, args, iterations, loads, &cgroups)?;
    for n in 0..cpus {
        let be = session.cluster.run_pod(&namespace, be_pod(&node.name, n))?;
        cgroups.be_usage.push(
            pod_dir(&node.cgroup_root, "cpuacct", "besteffort", &be.uid).join("cpuacct.usage"),
        );
    }
    runs.extend(phase(Setup::KubeDefaults, args, iterations, loads, &cgroups)?);
    let dir = tempfile::tempdir()?;
    let log_path = dir.path().join("agent.log");
    let child = spawn_agent(agent, node, args, dir.path())?;
    session.set_agent(child, dir);
    let kolo = wait_for_isolation(node, args)
        .and_then(|()| session.agent_alive())
        .and_then(|()| phase(Setup::KoloDefaults, args, iterations, loads, &cgroups))
        .and_then(|runs| session.agent_alive().map(|()| runs))
        .map_err(|e| with_log_tail(e, &log_path));
    session.stop_agent();
    runs.extend(kolo?);
    session.finish()?;
    // By load and pattern, then setup, as the hand-built mode reports.
    let order = |r: &Run| loads.iter().position(|l| *l == r.load).unwrap_or(usize::MAX);
    runs.sort_by_key(order);
    Ok((namespace, runs))
}

/// One setup's runs, one per load.
fn phase(
    setup: Setup,
    args: &Args,
    iterations: u64,
    loads: &[Load],
    cgroups: &Cgroups,
) -> Result<Vec<Run>, BoxError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (warmup, seconds) = (Duration::from_secs(args.warmup), Duration::from_secs(args.seconds));
    let mut runs = Vec::new();
    for load in loads {
        eprintln!(
            "kolo bench interference: {} % {}: {} (real node) ...",
            load.load_percent,
            load.arrivals.name(),
            setup.name()
        );
        let lp = RequestLoop { rate: load.rate_per_second, iterations, arrivals: load.arrivals };
        let w = measure_window(&lp, warmup, seconds, &cgroups.ls_dirs, || cgroups.usage())?;
        runs.push(Run::new(setup, *load, w.latency, w.ls_cores, w.be_cores, cpus));
    }
    Ok(runs)
}

/// Starts `kolo agent cluster` for `node` with co-location on (the
/// NodeSLO of the hand-built mode's kolo-defaults run, given with
/// `--node-slo`: a NodeSLO object of the node in the cluster would take
/// its place); its NodeSLO file and log (`agent.log`) go to `dir`.
fn spawn_agent(agent: &Path, node: &Node, args: &Args, dir: &Path) -> Result<Child, BoxError> {
    let slo = dir.join("nodeslo.yaml");
    std::fs::write(&slo, crate::interference::node_slo(None, args.sched_idle))?;
    Ok(Command::new(agent)
        .args(["agent", "cluster", "--kubeconfig"])
        .arg(&node.kubeconfig)
        .args(["--node-name", &node.name, "--kubelet", &node.kubelet])
        .args(["--kubelet-cgroup-root", &node.cgroup_root, "--node-slo"])
        .arg(&slo)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("agent.log"))?)
        .spawn()?)
}

/// Waits until the agent has set the BE QoS cgroup's `cpu.idle` as it
/// should on this kernel (where the kernel has it), then `--settle` more.
fn wait_for_isolation(node: &Node, args: &Args) -> Result<(), BoxError> {
    let expected = if crate::interference::expected_cpu_idle(args.sched_idle) { "1" } else { "0" };
    let file = Path::new(kolo_agent::sandbox::CGROUP_ROOT)
        .join("cpu")
        .join(node.cgroup_root.trim_start_matches('/'))
        .join("kubepods/besteffort/cpu.idle");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&file).is_ok_and(|v| v.trim() != expected) {
        if start.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "the agent did not set {} to {expected} within 20 s",
                file.display()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(args.settle));
    Ok(())
}

/// `e` with the last lines of the agent's log.
fn with_log_tail(e: BoxError, log: &Path) -> BoxError {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    format!("{e}\nlast lines of the agent's log ({}):\n{tail}", log.display()).into()
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
