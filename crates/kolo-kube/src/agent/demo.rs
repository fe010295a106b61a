//! `kolo agent demo`: the agent on three sandbox pods of its own (a CPU
//! spinner, a memory holder, an idle one) in real cgroups under a fresh
//! parent, collecting once a second and printing what it sees.

use std::io::Write;
use std::time::{Duration, Instant};

use kolo_agent::agent::AgentConfig;
use kolo_agent::sandbox::{TestCgroups, Workload, pods_file};
use kolo_api::QoSClass;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;

use super::{SourceConfig, build_agent};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs the demo for `seconds`, printing a line per second and the
/// NodeMetric at the end; the sandbox's cgroups and processes are removed
/// on return.
pub fn run(seconds: u64, out: &mut dyn Write) -> Result<(), BoxError> {
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
        "cgroups: cgroup {} ({} driver's names) under /sys/fs/cgroup, pods in {}/{}",
        sandbox.version(),
        sandbox.driver(),
        sandbox.name(),
        sandbox.qos_rel(KubeQoSClass::Burstable)
    )?;
    writeln!(
        out,
        "pods file: {}  (the same as: kolo agent --standalone --pods FILE --kubelet-cgroup-root {} --cgroup-driver {})",
        pods.display(),
        sandbox.name(),
        sandbox.driver()
    )?;
    // The sandbox's driver (`KOLO_TEST_CGROUP_DRIVER`, cgroupfs by default).
    let mut config = AgentConfig::new("demo-node");
    config.cgroups = sandbox.layout_config();
    config.dry_run = true;
    let source = SourceConfig::File { path: pods, node_name: Some("demo-node".into()) };
    let mut agent = build_agent(config, &source)?;
    writeln!(
        out,
        "{:>4}  {:>10}  {:>12}  {:>12}  {:>12}",
        "t", "node cpu", "spinner cpu", "holder mem", "idle cpu"
    )?;
    let start = Instant::now();
    for t in 0..=seconds {
        let report = agent.tick(Timestamp::now());
        let find = |name: &str| {
            let uid = &agent.pods().iter().find(|p| p.id.name == name)?.id.uid;
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
