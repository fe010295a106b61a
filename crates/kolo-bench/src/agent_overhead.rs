//! `kolo bench agent-overhead`: builds a kubepods tree of N pods × M
//! containers as real cgroups, starts `kolo agent --standalone --dry-run`
//! on it as a separate process, lets it warm up, then reads the process's
//! CPU time and peak RSS from `/proc` over the measured window.

use std::time::{Duration, Instant};

use kolo_agent::sandbox::{TestCgroups, Workload, pods_file};
use serde::Serialize;

use crate::process::process_cpu_seconds;
use crate::{BoxError, spawn_agent};

/// The result of `agent-overhead`.
#[derive(Debug, Serialize)]
pub struct AgentOverhead {
    /// Pods on the node.
    pub pods: usize,
    /// Of those, labelled BE.
    pub be_pods: usize,
    /// Containers per pod.
    pub containers_per_pod: usize,
    /// Pod and container cgroups.
    pub cgroups: usize,
    /// The agent's collection interval.
    pub interval_ms: u64,
    /// The measured window, seconds.
    pub measured_seconds: f64,
    /// The agent's CPU time per second of the window, milliseconds.
    pub cpu_ms_per_second: f64,
    /// The same as a percentage of one core.
    pub cpu_percent_of_a_core: f64,
    /// The agent's peak resident memory, MiB.
    pub peak_rss_mib: f64,
    /// Its resident memory at the end, MiB.
    pub rss_mib_at_end: f64,
}

impl AgentOverhead {
    /// Writes the figures for people.
    pub fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "agent footprint: {} pods ({} BE) × {} containers ({} cgroups), {} ms interval, {:.0} s measured",
            self.pods,
            self.be_pods,
            self.containers_per_pod,
            self.cgroups,
            self.interval_ms,
            self.measured_seconds
        )?;
        writeln!(
            out,
            "  CPU:  {:.2} ms per second ({:.2}% of a core)",
            self.cpu_ms_per_second, self.cpu_percent_of_a_core
        )?;
        writeln!(
            out,
            "  RSS:  {:.1} MiB peak, {:.1} MiB at the end",
            self.peak_rss_mib, self.rss_mib_at_end
        )
    }
}

/// The node's pods.
pub struct Shape {
    /// Pods.
    pub pods: usize,
    /// Containers per pod.
    pub containers: usize,
    /// How many of the pods are labelled BE.
    pub be_pods: usize,
}

/// Runs the measurement (see the module docs) with the agent binary
/// `agent`.
pub fn measure(
    agent: &std::path::Path,
    Shape { pods, containers, be_pods }: Shape,
    seconds: u64,
    warmup: u64,
    interval_ms: u64,
) -> Result<AgentOverhead, BoxError> {
    let mut sandbox = TestCgroups::new()
        .map_err(|reason| format!("agent-overhead needs real cgroups: {reason}"))?;
    let mut refs = sandbox.populate(pods, containers);
    for p in refs.iter_mut().take(be_pods) {
        p.qos = kolo_api::QoSClass::BE;
    }
    // A sleeping process in each pod's first container, so the cgroups
    // have tasks and memory charged like real ones.
    for p in &refs {
        if let Some(c) = p.containers.first().and_then(|c| c.id.as_deref()) {
            let id = c.rsplit("://").next().unwrap_or(c);
            let dir = sandbox.pod_rel(p.kube_qos, &p.id.uid);
            sandbox.spawn(&format!("{dir}/{id}"), Workload::Sleep)?;
        }
    }
    let dir = tempfile::tempdir()?;
    let pods_path = dir.path().join("pods.json");
    std::fs::write(&pods_path, pods_file(&refs))?;
    let log = std::fs::File::create(dir.path().join("agent.log"))?;
    let interval = interval_ms.to_string();
    let mut child = spawn_agent(
        agent,
        &mut sandbox,
        &pods_path,
        &["--dry-run", "--interval-ms", &interval],
        log,
    )?;
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(warmup));
    let cpu_start = process_cpu_seconds(pid)?;
    let wall_start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let cpu_end = process_cpu_seconds(pid)?;
    let measured = wall_start.elapsed().as_secs_f64();
    let (peak_kib, rss_kib) = process_rss_kib(pid)?;
    let _ = child.kill();
    let _ = child.wait();
    let cpu_ms_per_second = (cpu_end - cpu_start) * 1000.0 / measured;
    Ok(AgentOverhead {
        pods,
        be_pods: be_pods.min(pods),
        containers_per_pod: containers,
        cgroups: pods * (containers + 1),
        interval_ms,
        measured_seconds: measured,
        cpu_ms_per_second,
        cpu_percent_of_a_core: cpu_ms_per_second / 10.0,
        peak_rss_mib: peak_kib as f64 / 1024.0,
        rss_mib_at_end: rss_kib as f64 / 1024.0,
    })
}

/// Peak (VmHWM) and current (VmRSS) resident set size, KiB.
fn process_rss_kib(pid: u32) -> Result<(u64, u64), BoxError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok((field("VmHWM:"), field("VmRSS:")))
}
