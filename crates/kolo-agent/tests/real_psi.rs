//! Would PSI let the agent notice an LS surge sooner, or more cheaply, than
//! its 50 ms CPU-usage probe? On the real kernel: BE spinners fill every
//! CPU at the LS pod's weight, then the LS pod starts as many spinners; two
//! detectors race from that instant:
//!
//! * the probe: the LS container's CPU usage read every 50 ms, a surge when
//!   it used ≥ 0.5 cores over the last 50 ms (the shape of the agent's fast
//!   path, `kolo_agent::fast_probe`);
//! * a PSI trigger (`some 10000 500000`: 10 ms of stall within 500 ms, the
//!   smallest window the kernel takes) on the LS pod's `cpu.pressure` (v2),
//!   or on `/proc/pressure/cpu` (the whole machine) where per-cgroup PSI is
//!   missing (v1), waited for with `poll(POLLPRI)`: no reads at all until
//!   the kernel wakes it.
//!
//! What is asserted is only that both fire and that the stall is real; the
//! times are printed (`--nocapture`), and recorded in `docs/agent-cgroups.md`
//! from runs on an idle machine: timing is a measurement, not a test.
//! Skips loudly without root or the controllers.

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{TestCgroups, Workload, skip, test_container_id, test_uid};
use kolo_agent::cgroup::{CgroupVersion, Cgroups, Subsystem};
use kolo_api::kube_qos::KubeQoSClass;
use rustix::event::{PollFd, PollFlags, poll};
use rustix::time::Timespec;

/// The probe's interval and its surge threshold (cores over one interval).
const PROBE: Duration = Duration::from_millis(50);
const SURGE_CORES: f64 = 0.5;
/// The triggers tried: 10 ms of `some` stall within a 500 ms window (the
/// smallest the kernel takes, with CAP_SYS_RESOURCE), else within 2 s (the
/// only windows it takes without: multiples of 2 s, updated with the
/// averages every 2 s). With their NUL: the kernel overwrites a write's
/// last byte with one.
const TRIGGERS: [&[u8]; 2] = [b"some 10000 500000\0", b"some 10000 2000000\0"];
/// How long either detector may take before the test gives up on it.
const LIMIT: Duration = Duration::from_secs(10);

#[test]
fn psi_trigger_and_usage_probe_both_see_an_ls_surge() {
    let test = "psi_trigger_and_usage_probe_both_see_an_ls_surge";
    let mut t = match TestCgroups::new() {
        Ok(t) => t,
        Err(reason) => return skip(test, &reason),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ls_pod = t.add_pod(KubeQoSClass::Burstable, &test_uid(1));
    let ls = t.add_container(&ls_pod, &test_container_id(1));
    let be_pod = t.add_pod(KubeQoSClass::Burstable, &test_uid(2));
    let be = t.add_container(&be_pod, &test_container_id(2));
    let pressure = match t.version() {
        CgroupVersion::V2 => t.abs(Subsystem::Cpu, &ls_pod).join("cpu.pressure"),
        CgroupVersion::V1 => PathBuf::from("/proc/pressure/cpu"),
    };
    if !pressure.exists() {
        return skip(test, &format!("no {}: PSI is off in this kernel", pressure.display()));
    }
    // The test tree at the default weight, as a node's kubepods is next to
    // its agent (the harness gives it the largest, which would starve this
    // test's own probe thread behind the spinners).
    match t.version() {
        CgroupVersion::V1 => t.write(Subsystem::Cpu, "", "cpu.shares", "1024"),
        CgroupVersion::V2 => t.write(Subsystem::Cpu, "", "cpu.weight", "100"),
    }
    .expect("the test tree's weight");
    for _ in 0..cpus {
        t.spawn(&be, Workload::Spin).expect("a BE spinner starts");
    }
    let surge: Vec<u32> =
        (0..cpus).map(|_| t.spawn(&ls, Workload::SpinOnResume).expect("an LS spinner")).collect();
    let cgroups = Cgroups::detect(&t.layout_config()).unwrap();
    let ls_dir = cgroups
        .container_dir(
            KubeQoSClass::Burstable,
            &test_uid(1),
            &format!("containerd://{}", test_container_id(1)),
        )
        .unwrap();
    // Let the BE spinners settle on the CPUs first.
    std::thread::sleep(Duration::from_millis(500));

    // The trigger is armed before the surge (the fd must stay open).
    let (trigger, armed) = arm(&pressure);
    let stall_before = some_total_us(&pressure);

    let start = Instant::now();
    for pid in &surge {
        t.resume(*pid).unwrap();
    }
    let probe = std::thread::spawn(move || {
        let usage = |c: &Cgroups| c.cpu_usage_ns(&ls_dir).expect("LS usage");
        let (mut last, mut reads) = (usage(&cgroups), 0u32);
        while start.elapsed() < LIMIT {
            std::thread::sleep(PROBE);
            let now = usage(&cgroups);
            reads += 1;
            if (now - last) as f64 / PROBE.as_nanos() as f64 >= SURGE_CORES {
                return Some((start.elapsed(), reads));
            }
            last = now;
        }
        None
    });
    let mut fds = [PollFd::new(&trigger, PollFlags::PRI)];
    let limit = Timespec { tv_sec: LIMIT.as_secs() as i64, tv_nsec: 0 };
    let fired = poll(&mut fds, Some(&limit)).expect("poll on the PSI trigger");
    let psi_at = start.elapsed();
    let probe_at = probe.join().unwrap();
    let stall_us = some_total_us(&pressure) - stall_before;

    eprintln!(
        "{test}: cgroup {}, {cpus} CPUs, PSI of {}, trigger {armed:?}: fired: {} after {psi_at:?}; \
         the 50 ms probe saw the surge after {probe_at:?} (time, reads); {stall_us} µs of \
         some-stall meanwhile",
        t.version(),
        pressure.display(),
        fired == 1 && fds[0].revents().contains(PollFlags::PRI),
    );
    assert!(probe_at.is_some(), "the usage probe never saw the LS surge");
    assert_eq!(fired, 1, "the PSI trigger never fired within {LIMIT:?}");
    assert!(stall_us > 0, "no stall recorded while LS and BE filled the CPUs twice over");
}

/// The first of [`TRIGGERS`] the kernel takes on `path`, armed, and what
/// it is.
fn arm(path: &std::path::Path) -> (std::fs::File, String) {
    let mut errors = Vec::new();
    for trigger in TRIGGERS {
        let mut file = OpenOptions::new().read(true).write(true).open(path).unwrap();
        match file.write_all(trigger) {
            Ok(()) => return (file, String::from_utf8_lossy(&trigger[..trigger.len() - 1]).into()),
            Err(e) => errors.push(e.to_string()),
        }
    }
    panic!("no trigger taken on {}: {errors:?}", path.display());
}

/// `some total=` of a pressure file, µs.
fn some_total_us(path: &std::path::Path) -> i64 {
    let text = std::fs::read_to_string(path).unwrap();
    let some = text.lines().find(|l| l.starts_with("some")).expect("a some line");
    let total = some.split_whitespace().find_map(|f| f.strip_prefix("total=")).unwrap();
    total.parse().unwrap()
}
