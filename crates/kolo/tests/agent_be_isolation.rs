//! BE isolation on the real kernel: which CPU priority the agent gives the
//! BE QoS cgroup, and that it can switch an idle group back to the minimal
//! weight (the kernel refuses `cpu.shares` on an idle group, so `cpu.idle
//! = 0` has to be written first). Skips loudly without root, cgroup v1 or
//! `cpu.idle`.

use std::time::{Duration, Instant};

use kolo_agent::AgentPod;
use kolo_agent::cgroup::Subsystem;
use kolo_agent::kernel::{self, FairScheduler};
use kolo_agent::sandbox::{TestCgroups, pods_file, skip, test_uid};
use kolo_api::QoSClass;
use kolo_api::kube_qos::KubeQoSClass;

mod common;

const BE: &str = "kubepods/besteffort";

/// The BE QoS cgroup's `cpu.idle` and `cpu.shares`.
fn be_cpu(s: &TestCgroups) -> (String, String) {
    let read = |file| s.read(Subsystem::Cpu, BE, file).unwrap();
    (read("cpu.idle"), read("cpu.shares"))
}

/// Runs the agent on `pods` with `node_slo` until the BE QoS cgroup's
/// (`cpu.idle`, `cpu.shares`) are `want` or 15 s pass; returns them then.
fn run_agent_until(
    s: &mut TestCgroups,
    pods: &[AgentPod],
    node_slo: &str,
    want: (&str, &str),
) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let pods_path = dir.path().join("pods.json");
    std::fs::write(&pods_path, pods_file(pods)).unwrap();
    let slo = dir.path().join("nodeslo.yaml");
    std::fs::write(&slo, node_slo).unwrap();
    let log = std::fs::File::create(dir.path().join("agent.log")).unwrap();
    let mut agent = common::standalone_agent(s, &pods_path, &slo, 30, log);
    let reached = |got: &(String, String)| (got.0.as_str(), got.1.as_str()) == want;
    let start = Instant::now();
    let mut got = be_cpu(s);
    while !reached(&got) && start.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
        got = be_cpu(s);
    }
    let _ = agent.kill();
    let _ = agent.wait();
    if !reached(&got) {
        let log = std::fs::read_to_string(dir.path().join("agent.log")).unwrap_or_default();
        eprintln!("agent log:\n{log}");
    }
    got
}

const SCHED_IDLE_0: &str = "resourceQOSStrategy:\n  beClass:\n    cpuQOS:\n      schedIdle: 0\n";
const SCHED_IDLE_1: &str = "resourceQOSStrategy:\n  beClass:\n    cpuQOS:\n      schedIdle: 1\n";
const DEFAULTS: &str = "{}\n";

#[test]
fn be_priority_follows_sched_idle_and_the_kernel() {
    let test = "be_priority_follows_sched_idle_and_the_kernel";
    let mut sandbox = match TestCgroups::new() {
        Ok(s) => s,
        Err(reason) => return skip(test, &reason),
    };
    if sandbox.read(Subsystem::Cpu, BE, "cpu.idle").is_err() {
        return skip(test, "the kernel has no cpu.idle (Linux < 5.15)");
    }
    let pods: Vec<AgentPod> = [
        (1, QoSClass::BE, KubeQoSClass::BestEffort, "batch"),
        (2, QoSClass::LS, KubeQoSClass::Burstable, "web"),
    ]
    .into_iter()
    .map(|(n, qos, kube_qos, name)| sandbox.add_single_container_pod(n, name, qos, kube_qos).0)
    .collect();

    // An idle BE group with a big weight, as an earlier config may have
    // left it (the weight first: an idle group refuses it).
    sandbox.write(Subsystem::Cpu, BE, "cpu.shares", "1024").unwrap();
    sandbox.write(Subsystem::Cpu, BE, "cpu.idle", "1").unwrap();
    assert!(
        sandbox.write(Subsystem::Cpu, BE, "cpu.shares", "2").is_err(),
        "this kernel refuses cpu.shares on an idle group; the ordering below matters"
    );

    // schedIdle 0: the agent leaves idle first, then sets the minimal weight.
    let got = run_agent_until(&mut sandbox, &pods, SCHED_IDLE_0, ("0", "2"));
    assert_eq!(got, ("0".into(), "2".into()), "schedIdle 0");

    // schedIdle 1: idle on any kernel.
    let got = run_agent_until(&mut sandbox, &pods, SCHED_IDLE_1, ("1", "2"));
    assert_eq!(got.0, "1", "schedIdle 1");

    // Unset: by the kernel's scheduler.
    let eevdf = kernel::detect("/proc".as_ref(), "/sys".as_ref()) == Some(FairScheduler::Eevdf);
    let want = if eevdf { ("0", "2") } else { ("1", "2") };
    let got = run_agent_until(&mut sandbox, &pods, DEFAULTS, want);
    assert_eq!((got.0.as_str(), got.1.as_str()), want, "default on EEVDF={eevdf}");
    // The LS pod is never touched.
    let ls_pod = sandbox.pod_rel(KubeQoSClass::Burstable, &test_uid(2));
    assert_eq!(sandbox.read(Subsystem::Cpu, &ls_pod, "cpu.idle").unwrap(), "0");
}
