//! The cgroup layer and the pod collector on the machine's real cgroup v1
//! hierarchies (cgroupfs names): real processes, real kernel accounting,
//! real write constraints. Each test builds its own kubepods-shaped tree with
//! `common::TestCgroups` and removes it (and its processes) on drop. On a
//! machine without cgroup v1 or without root, the tests print why and pass.

mod common;

use std::fs;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    TestCgroups, Workload, agent_pod, cpu_time_ns, have_python, rss_anon, skip, test_container_id,
    test_uid,
};
use kolo_agent::cgroup::{
    CgroupDir, CgroupDriver, CgroupVersion, CgroupWrite, Cgroups, CpuSet, LayoutConfig, Phase,
    Resource, SkipReason, Subsystem, Value,
};
use kolo_agent::collect::pod::PodCollector;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;

const MIB: u64 = 1 << 20;

/// The harness on cgroup v1 with the cgroupfs names (these tests check
/// v1's own rules and file names; `real_strategies.rs` covers every
/// version and driver).
macro_rules! harness {
    ($test:expr) => {
        match TestCgroups::new() {
            Ok(t) if t.version() == CgroupVersion::V1 && t.driver() == CgroupDriver::Cgroupfs => t,
            Ok(t) => {
                skip(
                    $test,
                    &format!(
                        "cgroup {} with the {} driver: these are v1 cgroupfs tests",
                        t.version(),
                        t.driver()
                    ),
                );
                return;
            }
            Err(reason) => {
                skip($test, &reason);
                return;
            }
        }
    };
}

fn cid(id: &str) -> String {
    format!("containerd://{id}")
}

#[test]
fn detects_this_machine() {
    let Ok(layout) = kolo_agent::cgroup::Layout::detect(&LayoutConfig::new(common::CGROUP_ROOT))
    else {
        skip("detects_this_machine", "no cgroup mount at /sys/fs/cgroup");
        return;
    };
    if layout.version() != CgroupVersion::V1 {
        skip("detects_this_machine", "cgroup v2 host");
        return;
    }
    for s in common::CONTROLLERS {
        let dir = layout.hierarchy(s).expect("mounted");
        assert!(dir.join("cgroup.procs").is_file(), "{}", dir.display());
    }
    // cpu and cpuacct are found wherever they are mounted (separately on
    // this machine, combined elsewhere) and hold their own files.
    let cpu = layout.hierarchy(Subsystem::Cpu).unwrap();
    let cpuacct = layout.hierarchy(Subsystem::Cpuacct).unwrap();
    assert!(cpu.join("cpu.shares").is_file());
    assert!(cpuacct.join("cpuacct.usage").is_file());
}

#[test]
fn collector_measures_real_processes() {
    let mut t = harness!("collector_measures_real_processes");
    if !have_python() {
        skip("collector_measures_real_processes", "python3 not found (needed to allocate memory)");
        return;
    }
    // Pod A (Burstable): a spinning container and one holding 64 MiB.
    // Pod B (BestEffort): a sleeping container.
    let (uid_a, uid_b) = (test_uid(1), test_uid(2));
    let (spin_id, mem_id, sleep_id) =
        (test_container_id(1), test_container_id(2), test_container_id(3));
    let pod_a = t.add_pod(KubeQoSClass::Burstable, &uid_a);
    let c_spin = t.add_container(&pod_a, &spin_id);
    let c_mem = t.add_container(&pod_a, &mem_id);
    let pod_b = t.add_pod(KubeQoSClass::BestEffort, &uid_b);
    let c_sleep = t.add_container(&pod_b, &sleep_id);
    let spin_pid = t.spawn(&c_spin, Workload::Spin).unwrap();
    let mem_pid = t.spawn(&c_mem, Workload::Memory { mib: 64 }).unwrap();
    t.spawn(&c_sleep, Workload::Sleep).unwrap();

    let cgroups = Arc::new(Cgroups::detect(&t.layout_config()).unwrap());
    let pods = vec![
        agent_pod(
            &uid_a,
            KubeQoSClass::Burstable,
            &[("spin".into(), cid(&spin_id)), ("mem".into(), cid(&mem_id))],
        ),
        agent_pod(&uid_b, KubeQoSClass::BestEffort, &[("sleep".into(), cid(&sleep_id))]),
        // A hostile pod in the list: reported, never read.
        agent_pod("../../../../..", KubeQoSClass::Burstable, &[]),
    ];
    let mut collector = PodCollector::new(cgroups.clone());
    // Precondition: the holder has touched its 64 MiB. On a busy machine
    // that takes longer than a round, and a pod read while its container
    // still grows is smaller than the container read a moment later.
    let touched = Instant::now();
    while rss_anon(mem_pid) < 64 * MIB {
        assert!(touched.elapsed() < Duration::from_secs(30), "the memory holder never held 64 MiB");
        thread::sleep(Duration::from_millis(50));
    }

    // Each collection is bracketed by wall-clock instants: if this thread
    // is preempted while collecting (a busy machine), the measurement may
    // legitimately be off by up to that time, and the tolerance widens
    // accordingly.
    let w0 = Instant::now();
    let t0 = Timestamp::now();
    assert!(collector.collect(&pods, t0).is_empty(), "first round records baselines only");
    let ref0 = cpu_time_ns(spin_pid);
    let d0 = w0.elapsed();
    assert_eq!(collector.errors().len(), 1, "{:?}", collector.errors());
    assert!(collector.errors()[0].to_string().contains("invalid pod UID"));

    thread::sleep(Duration::from_secs(1));
    let w1 = Instant::now();
    let t1 = Timestamp::now();
    let samples = collector.collect(&pods, t1);
    let ref1 = cpu_time_ns(spin_pid);
    let d1 = w1.elapsed();
    let wall_ns = (t1.as_nanosecond() - t0.as_nanosecond()) as f64;
    let reference = (ref1 - ref0) as f64 / wall_ns;
    let tolerance = 0.02 + (d0 + d1).as_nanos() as f64 / wall_ns;
    assert!(collector.errors().is_empty(), "{:?}", collector.errors());

    assert_eq!(samples.len(), 2, "{samples:#?}");
    let a = samples.iter().find(|s| s.uid == uid_a).unwrap();
    let b = samples.iter().find(|s| s.uid == uid_b).unwrap();
    let spin = a.containers.iter().find(|c| c.name == "spin").unwrap();
    let mem = a.containers.iter().find(|c| c.name == "mem").unwrap();
    let sleep = &b.containers[0];
    eprintln!(
        "spin {:.3} cores (schedstat reference {:.3}, tolerance {tolerance:.3}), mem {:.3} cores / {} MiB (RssAnon {} MiB), sleep {:.3}, pod A {:.3} cores / {} MiB, pod B {:.3}",
        spin.cpu_cores,
        reference,
        mem.cpu_cores,
        mem.memory_bytes / MIB,
        rss_anon(mem_pid) / MIB,
        sleep.cpu_cores,
        a.cpu_cores,
        a.memory_bytes / MIB,
        b.cpu_cores
    );

    // CPU: the spinner is one busy thread (with the test tree's top
    // cpu.shares it gets its core even on a busy machine); the kernel's
    // per-task runtime over the same interval must agree closely.
    assert!(
        (spin.cpu_cores - reference).abs() < 0.03,
        "spin {} vs reference {reference}",
        spin.cpu_cores
    );
    assert!((0.7..=1.05).contains(&spin.cpu_cores), "spin {}", spin.cpu_cores);
    assert!(mem.cpu_cores < 0.05, "idle memory holder {}", mem.cpu_cores);
    assert!(sleep.cpu_cores < 0.02, "sleep {}", sleep.cpu_cores);
    assert!(b.cpu_cores < 0.02, "pod B {}", b.cpu_cores);
    // The pod cgroup accounts its containers (hierarchically).
    let sum = spin.cpu_cores + mem.cpu_cores;
    assert!((a.cpu_cores - sum).abs() < tolerance, "pod A {} vs containers {sum}", a.cpu_cores);

    // Memory without page cache: at least the 64 MiB touched, plus the
    // interpreter, and what the kernel says the process holds.
    assert!(mem.memory_bytes >= 64 * MIB, "mem {}", mem.memory_bytes);
    assert!(mem.memory_bytes < 64 * MIB + 40 * MIB, "mem {}", mem.memory_bytes);
    let rss = rss_anon(mem_pid);
    assert!(mem.memory_bytes.abs_diff(rss) < 8 * MIB, "mem {} vs RssAnon {rss}", mem.memory_bytes);
    assert!(spin.memory_bytes < 8 * MIB, "spin {}", spin.memory_bytes);
    let sum = spin.memory_bytes + mem.memory_bytes;
    assert!(
        a.memory_bytes >= sum && a.memory_bytes < sum + 4 * MIB,
        "pod A {} vs containers {sum}",
        a.memory_bytes
    );
    assert!(a.memory_with_cache_bytes >= a.memory_bytes);

    // No per-cgroup PSI on mainline v1: nothing, and no error.
    if !cgroups.is_supported(Resource::CpuPressure) {
        assert!(collector.collect_psi(&pods, t1).is_empty());
    }

    // Processes gone, cgroups still there: CPU reads keep working, the
    // idle pod stays at zero.
    t.kill_all();
    let samples = collector.collect(&pods, Timestamp::now());
    assert_eq!(samples.len(), 2);
}

#[test]
fn executor_orders_cfs_quota_writes_on_the_kernel() {
    let mut t = harness!("executor_orders_cfs_quota_writes_on_the_kernel");
    let uid = test_uid(10);
    let id = test_container_id(10);
    let pod_rel = t.add_pod(KubeQoSClass::Burstable, &uid);
    let ctr_rel = t.add_container(&pod_rel, &id);
    let cg = Cgroups::detect(&t.layout_config()).unwrap();
    let pod = cg.pod_dir(KubeQoSClass::Burstable, &uid).unwrap();
    let ctr = cg.container_dir(KubeQoSClass::Burstable, &uid, &cid(&id)).unwrap();
    let quota = |rel: &str| t.read(Subsystem::Cpu, rel, "cpu.cfs_quota_us").unwrap();
    let q = |dir: &CgroupDir, v| CgroupWrite::int(dir, Resource::CpuCfsQuota, v);
    let order = |report: &kolo_agent::cgroup::ApplyReport| -> Vec<(String, String, Phase)> {
        report
            .applied
            .iter()
            .map(|a| {
                let dir = a.path.parent().unwrap();
                let who = if dir.ends_with(&id) { "ctr" } else { "pod" };
                (who.to_string(), a.new.clone(), a.phase)
            })
            .collect()
    };
    let s = |who: &str, v: &str, p| (who.to_string(), v.to_string(), p);

    // Limit both (from unlimited): children first, bottom-up.
    let r = cg.executor().apply(&[q(&pod, 50_000), q(&ctr, 50_000)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(order(&r), vec![s("ctr", "50000", Phase::Final), s("pod", "50000", Phase::Final)]);
    assert_eq!((quota(&pod_rel), quota(&ctr_rel)), ("50000".into(), "50000".into()));

    // The kernel really refuses a child above its parent: order matters.
    let child_file = t.abs(Subsystem::Cpu, &ctr_rel).join("cpu.cfs_quota_us");
    assert!(fs::write(&child_file, "200000").is_err(), "v1 must refuse child quota > parent quota");

    // Grow both: the merge pass raises the parent first.
    let r = cg.executor().apply(&[q(&ctr, 200_000), q(&pod, 200_000)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(order(&r), vec![s("pod", "200000", Phase::Merge), s("ctr", "200000", Phase::Merge)]);
    assert_eq!((quota(&pod_rel), quota(&ctr_rel)), ("200000".into(), "200000".into()));

    // And refuses a parent below its child.
    let parent_file = t.abs(Subsystem::Cpu, &pod_rel).join("cpu.cfs_quota_us");
    assert!(fs::write(&parent_file, "30000").is_err(), "v1 must refuse parent quota < child quota");

    // Shrink both: child first.
    let r = cg.executor().apply(&[q(&pod, 30_000), q(&ctr, 20_000)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(order(&r), vec![s("ctr", "20000", Phase::Final), s("pod", "30000", Phase::Final)]);
    assert_eq!(r.applied[0].old, "200000");
    assert_eq!((quota(&pod_rel), quota(&ctr_rel)), ("30000".into(), "20000".into()));

    // Again: nothing to do.
    let r = cg.executor().apply(&[q(&pod, 30_000), q(&ctr, 20_000)]);
    assert!(r.applied.is_empty() && r.errors.is_empty(), "{r:?}");
    assert_eq!(r.skipped.iter().filter(|s| s.reason == SkipReason::AlreadySet).count(), 2);

    // Unlimited (-1) is a growth: parent first.
    let r = cg.executor().apply(&[q(&ctr, -1), q(&pod, -1)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(order(&r), vec![s("pod", "-1", Phase::Merge), s("ctr", "-1", Phase::Merge)]);
    assert_eq!(cg.cfs_quota_us(&pod).unwrap(), None);
}

#[test]
fn executor_orders_cpuset_writes_on_the_kernel() {
    let mut t = harness!("executor_orders_cpuset_writes_on_the_kernel");
    let all = CpuSet::parse(&t.read(Subsystem::Cpuset, "", "cpuset.cpus").unwrap()).unwrap();
    if all.len() < 2 {
        skip("executor_orders_cpuset_writes_on_the_kernel", "needs at least 2 CPUs");
        return;
    }
    let last = all.iter().last().unwrap();
    let one = CpuSet::parse(&last.to_string()).unwrap();
    let uid = test_uid(20);
    let id = test_container_id(20);
    let pod_rel = t.add_pod(KubeQoSClass::BestEffort, &uid);
    let ctr_rel = t.add_container(&pod_rel, &id);
    let cg = Cgroups::detect(&t.layout_config()).unwrap();
    let pod = cg.pod_dir(KubeQoSClass::BestEffort, &uid).unwrap();
    let ctr = cg.container_dir(KubeQoSClass::BestEffort, &uid, &cid(&id)).unwrap();
    let w = |dir: &CgroupDir, set: &CpuSet| CgroupWrite {
        dir: dir.clone(),
        resource: Resource::CpusetCpus,
        value: Value::Cpuset(set.clone()),
    };

    // The kernel refuses shrinking a parent below its child.
    assert!(t.write(Subsystem::Cpuset, &pod_rel, "cpuset.cpus", &one.to_string()).is_err());

    // Shrink: child first.
    let r = cg.executor().apply(&[w(&pod, &one), w(&ctr, &one)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let dirs: Vec<bool> = r.changed().map(|a| a.path.parent().unwrap().ends_with(&id)).collect();
    assert_eq!(dirs, vec![true, false]);
    assert_eq!(cg.cpuset_cpus(&pod).unwrap(), one);
    assert_eq!(
        CpuSet::parse(&t.read(Subsystem::Cpuset, &ctr_rel, "cpuset.cpus").unwrap()).unwrap(),
        one
    );

    // Grow: the union goes to the parent first.
    let r = cg.executor().apply(&[w(&ctr, &all), w(&pod, &all)]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let steps: Vec<(bool, Phase)> =
        r.applied.iter().map(|a| (a.path.parent().unwrap().ends_with(&id), a.phase)).collect();
    assert_eq!(steps, vec![(false, Phase::Merge), (true, Phase::Merge)]);
    assert_eq!(cg.cpuset_cpus(&ctr).unwrap(), all);
}

#[test]
fn executor_skips_equal_values_and_unsupported_files() {
    let mut t = harness!("executor_skips_equal_values_and_unsupported_files");
    let uid = test_uid(30);
    let id = test_container_id(30);
    let pod_rel = t.add_pod(KubeQoSClass::Burstable, &uid);
    let ctr_rel = t.add_container(&pod_rel, &id);
    let cg = Cgroups::detect(&t.layout_config()).unwrap();
    let pod = cg.pod_dir(KubeQoSClass::Burstable, &uid).unwrap();
    let ctr = cg.container_dir(KubeQoSClass::Burstable, &uid, &cid(&id)).unwrap();
    let writes = vec![
        CgroupWrite::int(&pod, Resource::CpuShares, 512),
        CgroupWrite::int(&ctr, Resource::CpuShares, 256),
        CgroupWrite::int(&pod, Resource::MemoryLimit, 256 * MIB as i64 + 1),
        CgroupWrite::int(&ctr, Resource::MemoryLimit, 128 * MIB as i64),
        CgroupWrite::int(&ctr, Resource::CpuCfsBurst, 0),
        // Not on mainline v1 kernels: skipped, not an error.
        CgroupWrite::int(&pod, Resource::MemoryHigh, 1 << 30),
        CgroupWrite::int(&ctr, Resource::CpuBvtWarpNs, 1),
    ];
    let r = cg.executor().apply(&writes);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(t.read(Subsystem::Cpu, &pod_rel, "cpu.shares").unwrap(), "512");
    assert_eq!(t.read(Subsystem::Cpu, &ctr_rel, "cpu.shares").unwrap(), "256");
    // Rounded down to pages, as the kernel keeps it.
    assert_eq!(
        t.read(Subsystem::Memory, &pod_rel, "memory.limit_in_bytes").unwrap(),
        (256 * MIB).to_string()
    );
    assert_eq!(cg.memory_limit(&ctr).unwrap(), Some(128 * MIB as i64));
    let unsupported: Vec<Resource> = r
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::Unsupported)
        .map(|s| s.resource)
        .collect();
    for res in [Resource::MemoryHigh, Resource::CpuBvtWarpNs] {
        let has = t.abs(Subsystem::Cpu, "kubepods").join(res.name()).exists()
            || t.abs(Subsystem::Memory, "kubepods").join(res.name()).exists();
        assert_eq!(unsupported.contains(&res), !has, "{res}");
    }

    // The same batch again changes nothing (memory limit 256 MiB + 1 is
    // equal to the 256 MiB the kernel holds; burst 0 is already 0).
    let r = cg.executor().apply(&writes);
    assert!(r.applied.is_empty(), "{:?}", r.applied);
    assert!(r.errors.is_empty(), "{:?}", r.errors);

    // Dry run: reported, not written.
    let r = cg.executor().dry_run(true).apply(&[CgroupWrite::int(&pod, Resource::CpuShares, 1024)]);
    assert_eq!((r.applied[0].old.as_str(), r.applied[0].new.as_str()), ("512", "1024"));
    assert_eq!(cg.cpu_shares(&pod).unwrap(), 512);

    // Unlimited memory: -1 reads back as the kernel's sentinel → None.
    let r = cg.executor().apply(&[
        CgroupWrite::int(&ctr, Resource::MemoryLimit, -1),
        CgroupWrite::int(&pod, Resource::MemoryLimit, -1),
    ]);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(cg.memory_limit(&pod).unwrap(), None);
    assert!(
        t.read(Subsystem::Memory, &pod_rel, "memory.limit_in_bytes")
            .unwrap()
            .parse::<i64>()
            .unwrap()
            >= 0x7FFF_FFFF_FFFF_F000
    );

    // cpu.idle, where the kernel has it (5.15+).
    if cg.is_supported(Resource::CpuIdle) {
        let r = cg.executor().apply(&[CgroupWrite::int(&ctr, Resource::CpuIdle, 1)]);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(t.read(Subsystem::Cpu, &ctr_rel, "cpu.idle").unwrap(), "1");
    }
}

#[test]
fn guard_kills_and_removes_everything_even_on_panic() {
    let mut seen = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut t = harness!("guard_kills_and_removes_everything_even_on_panic");
        let pod = t.add_pod(KubeQoSClass::Guaranteed, &test_uid(40));
        let ctr = t.add_container(&pod, &test_container_id(40));
        let pid = t.spawn(&ctr, Workload::Spin).unwrap();
        seen = Some((t.created().to_vec(), pid));
        panic!("test failure inside a harness (expected)");
    }));
    let Some((dirs, pid)) = seen else { return }; // skipped
    assert!(result.is_err());
    assert!(dirs.len() >= 4 * 5, "{dirs:?}");
    for dir in &dirs {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "process {pid} still alive");
}

/// The harness's `system` cgroup has a node's shape (kubepods weighted
/// 1024 per CPU, system at the default), and `command_in` starts a
/// program inside it in every hierarchy: the bench and the agent tests
/// rely on both so the agent gets the CPU it would get on a node.
#[test]
fn command_in_runs_the_program_in_the_system_cgroup() {
    let mut t = harness!("command_in_runs_the_program_in_the_system_cgroup");
    let system = t.system_cgroup().unwrap();
    assert_eq!(t.system_cgroup().unwrap(), system, "created once");
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        t.read(Subsystem::Cpu, "kubepods", "cpu.shares").unwrap(),
        (cpus * 1024).to_string()
    );
    assert_eq!(t.read(Subsystem::Cpu, system, "cpu.shares").unwrap(), "1024");
    let mut child = t.command_in(system, "sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    // The shell joins, then execs: the pid is the program's from the start.
    let deadline = Instant::now() + Duration::from_secs(10);
    let comm = || fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    while comm().trim() != "sleep" {
        assert!(Instant::now() < deadline, "the program never ran: {:?}", comm());
        thread::sleep(Duration::from_millis(10));
    }
    let cgroups = fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    for subsystem in ["cpu", "cpuacct", "cpuset", "memory"] {
        let line = cgroups
            .lines()
            .find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|c| c == subsystem)))
            .unwrap_or_else(|| panic!("no {subsystem} line in {cgroups}"));
        let want = format!("/{}/{system}", t.name());
        assert!(line.ends_with(&want), "{subsystem}: {line} (want …{want})");
    }
}

/// The cost of one collection round over 150 pods × 2 containers (450
/// cgroups, 900 file reads). Printed; the bound is loose because test
/// builds are unoptimised.
#[test]
fn collection_round_cost_150_pods() {
    let mut t = harness!("collection_round_cost_150_pods");
    let pods = t.populate(150, 2);
    let cgroups = Arc::new(Cgroups::detect(&t.layout_config()).unwrap());
    let mut collector = PodCollector::new(cgroups);
    let start = Timestamp::now();
    collector.collect(&pods, start);
    let rounds = 20;
    let began = Instant::now();
    let mut last = Vec::new();
    for i in 1..=rounds {
        let now = Timestamp::from_nanosecond(start.as_nanosecond() + i * 1_000_000_000).unwrap();
        last = collector.collect(&pods, now);
    }
    let per_round = began.elapsed() / rounds as u32;
    assert!(collector.errors().is_empty(), "{:?}", collector.errors());
    assert_eq!(last.len(), 150);
    assert!(last.iter().all(|s| s.containers.len() == 2));
    assert_eq!((collector.tracked_pods(), collector.tracked_containers()), (150, 300));
    eprintln!("collection round, 150 pods × 2 containers: {per_round:?}");
    assert!(per_round < Duration::from_millis(200), "{per_round:?}");
}
