//! `kolo bench interference`: does kolo keep an LS service's latency flat
//! next to BE CPU hogs, and how much CPU does BE still get?
//!
//! Every run builds a fresh kubepods tree as real cgroups with two pods,
//! labelled as they would be in a cluster:
//!
//! * `ls-server` — Burstable, `koordinator.sh/qosClass: LS`, requests one
//!   CPU: the [`RequestLoop`] (requests at a mean rate, steady or bursty,
//!   each a fixed amount of CPU work; default 200/s × 2 ms = 40 % of a
//!   core) runs in a thread of this process moved into the pod's container
//!   cgroup;
//! * `be-hogs` — BestEffort, `koordinator.sh/qosClass: BE`: one busy loop
//!   per CPU.
//!
//! The kubelet's CPU shares are written as the kubelet would write them
//! (`kubepods` = node CPUs × 1024, `burstable` and the LS pod 1024,
//! `besteffort` and the BE pod 2). Runs, all of the same length:
//!
//! 1. **LS alone** — no hogs;
//! 2. **Kubernetes defaults** — the hogs with the shares above, nothing else;
//! 3. **kolo, defaults** — the hogs and `kolo agent --standalone` with
//!    co-location turned on and everything else at its default: BE
//!    isolation as the agent picks it for this kernel (`cpu.idle` on CFS
//!    kernels, the minimal weight on EEVDF ones; `--sched-idle` forces
//!    it) and the reference's default suppression (`cpuset` policy at
//!    65 %; it never leaves BE fewer than 2 CPUs);
//! 4. **kolo, CFS-quota suppression** — the same with `cpuSuppressPolicy:
//!    cfsQuota` at each `--thresholds` value (0: suppression off).
//!
//! The kolo measurements start once the agent has put isolation and
//! suppression in place.
//!
//! For each: LS latency percentiles (open-loop: arrival to completion), and
//! the CPU the LS and BE cgroups used over the measured window (their
//! `cpuacct.usage`). After the first kolo run, with its agent still there,
//! the LS pod surges (a busy loop in its container) `--surges` times; the
//! reaction time is from the busy loop running (in its cgroups) to the BE
//! QoS cgroup's `cpu.cfs_quota_us` dropping by at least half a core.
//!
//! Every setup runs once per `--loads` value (percent of the LS pod's one
//! CPU) and `--arrivals` pattern ([`crate::arrivals`]); each run's p99,
//! p99.9 and max are set against the LS-alone run of the same load and
//! pattern.
//!
//! With `--cluster DIR` (or `--kubeconfig` and the node's names) the same
//! measurement runs on a real node instead, with pods the kubelet runs and
//! `kolo agent cluster` ([`crate::real_node`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use kolo_agent::cgroup::reader::parse_cpu_usage;
use kolo_agent::cgroup::{CgroupVersion, Subsystem};
use kolo_agent::collect::node::NodeCollector;
use kolo_agent::qos::cpu_suppress;
use kolo_agent::sandbox::{CONTROLLERS, TestCgroups, Workload, pods_file};
use kolo_api::QoSClass;
use kolo_api::kube_qos::KubeQoSClass;
use kolo_core::clock::Timestamp;
use kolo_core::resources::ResourceVector;
use serde::Serialize;

use crate::arrivals::Arrivals;
use crate::real_node::{self, NodeArgs};
use crate::request_loop::{self, RequestLoop};
use crate::{BoxError, spawn_agent};

mod measure;
mod report;

pub(crate) use measure::{Window, measure_window, read_usage};
pub(crate) use report::{Load, Run, Setup};

/// Options of `kolo bench interference`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Measured seconds per run.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Seconds of requests before each run's measurement starts (not
    /// counted).
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// LS loads, percent of one core (the LS pod's CPU request), one set
    /// of runs per value (comma-separated). The request rate is load /
    /// work: 40 % at 2000 µs is 200 requests/s.
    #[arg(long, value_delimiter = ',', default_value = "40")]
    pub loads: Vec<f64>,
    /// LS arrival patterns, one set of runs per value (comma-separated):
    /// `steady` (evenly spaced) or `bursty` (bursts of 5 requests at once,
    /// the bursts a Poisson process with the same mean rate, fixed seed).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "steady")]
    pub arrivals: Vec<Arrivals>,
    /// CPU work per LS request, microseconds (calibrated on this machine
    /// before the runs).
    #[arg(long, default_value_t = 2000)]
    pub work_us: u64,
    /// `cpuSuppressThresholdPercent` of the CFS-quota suppression runs,
    /// one run per value (comma-separated; 0 runs the agent with
    /// suppression off). They follow the kolo-defaults run.
    #[arg(long, value_delimiter = ',', default_value = "90")]
    pub thresholds: Vec<i64>,
    /// Seconds the kolo runs wait after the agent has put isolation in
    /// place, for the suppression quota to settle (it grows by 10 % of the
    /// node per round).
    #[arg(long, default_value_t = 10)]
    pub settle: u64,
    /// beClass `cpuQOS.schedIdle` of the kolo runs: 1 isolates BE with
    /// `cpu.idle`, 0 with the minimal CPU weight; unset, the agent picks
    /// by kernel (`cpu.idle` on CFS, the weight on EEVDF).
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..=1))]
    pub sched_idle: Option<i64>,
    /// LS surges for the reaction-time measurement (0: none; hand-built
    /// cgroups only).
    #[arg(long, default_value_t = 5)]
    pub surges: u32,
    /// Run on a real node instead of hand-built cgroups.
    #[command(flatten)]
    pub node: NodeArgs,
}

/// What the error says when the machine is too busy for the reaction to
/// be measured (tests skip on it rather than fail).
pub const UNMEASURABLE: &str = "reaction unmeasurable";

/// Surge-to-suppression times.
#[derive(Debug, Serialize)]
struct Reaction {
    /// Each surge: until the agent's first cut of the BE quota, ms.
    first_cut_ms: Vec<f64>,
    /// Each surge's reaction (quota down by half a core), milliseconds.
    ms: Vec<f64>,
    median_ms: f64,
    max_ms: f64,
    /// Each surge's release: from the busy loop's end to the quota being
    /// back within 0.1 core of where it was, seconds.
    released_s: Vec<f64>,
}

/// The whole benchmark's result.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `cgroups` (a hand-built kubepods tree) or `node` (pods the kubelet
    /// runs).
    mode: &'static str,
    /// The real-node mode's namespace (deleted at the end).
    namespace: Option<String>,
    cpus: usize,
    work_us: u64,
    measured_seconds: u64,
    /// CPU in use on the machine in the second before the runs, cores.
    busy_before_cores: f64,
    runs: Vec<Run>,
    reaction: Option<Reaction>,
}

/// Runs the benchmark with the agent binary `agent`: on the real node
/// `args.node` names, or on hand-built cgroups.
pub fn run(args: &Args, agent: &Path) -> Result<Report, BoxError> {
    if args.loads.iter().any(|l| !(*l > 0.0 && *l <= 100.0)) || args.arrivals.is_empty() {
        return Err("--loads must be percentages in (0, 100], --arrivals not empty".into());
    }
    if args.work_us == 0 || args.seconds == 0 {
        return Err("--work-us and --seconds must be positive".into());
    }
    if let Some(t) = args.thresholds.iter().find(|t| !(0..=100).contains(*t)) {
        return Err(format!("--thresholds: {t} is not a percentage in 1..=100").into());
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = busy_cores()?;
    if busy > 0.05 * cpus as f64 {
        eprintln!(
            "kolo bench interference: WARNING: the machine is not idle ({busy:.2} cores in use before the runs); \
             the agent counts that load as system usage and the figures will be off"
        );
    }
    let iterations = request_loop::calibrate(Duration::from_micros(args.work_us));
    let loads = loads(args);
    let (mode, namespace, mut runs, reaction) = match args.node.node()? {
        Some(node) => {
            let (ns, runs) = real_node::run(&node, args, agent, iterations, &loads)?;
            ("node", Some(ns), runs, None)
        }
        None => {
            let (runs, reaction) = run_cgroups(args, agent, iterations, &loads, cpus)?;
            ("cgroups", None, runs, reaction)
        }
    };
    report::compare_with_alone(&mut runs);
    Ok(Report {
        mode,
        namespace,
        cpus,
        work_us: args.work_us,
        measured_seconds: args.seconds,
        busy_before_cores: busy,
        runs,
        reaction,
    })
}

/// Every load and arrival pattern asked for, loads outermost.
fn loads(args: &Args) -> Vec<Load> {
    let mut loads = Vec::new();
    for &load_percent in &args.loads {
        for &arrivals in &args.arrivals {
            let rate_per_second = load_percent / 100.0 * 1e6 / args.work_us as f64;
            loads.push(Load { load_percent, rate_per_second, arrivals });
        }
    }
    loads
}

/// The hand-built-cgroups mode: for each load, every setup in a fresh
/// tree (so the setups of one load are measured back to back).
fn run_cgroups(
    args: &Args,
    agent: &Path,
    iterations: u64,
    loads: &[Load],
    cpus: usize,
) -> Result<(Vec<Run>, Option<Reaction>), BoxError> {
    let mut setups = vec![Setup::Alone, Setup::KubeDefaults, Setup::KoloDefaults];
    setups.extend(args.thresholds.iter().map(|&threshold| Setup::Kolo { threshold }));
    let mut runs: Vec<Run> = Vec::new();
    let mut reaction = None;
    for load in loads {
        let lp = RequestLoop { rate: load.rate_per_second, iterations, arrivals: load.arrivals };
        for &setup in &setups {
            eprintln!(
                "kolo bench interference: {} % {}: {} ...",
                load.load_percent,
                load.arrivals.name(),
                setup.name()
            );
            let surges = match setup {
                Setup::Kolo { threshold } if threshold > 0 && reaction.is_none() => args.surges,
                _ => 0,
            };
            let (window, r) = one_run(agent, setup, &lp, args, cpus, surges)?;
            let be = if setup == Setup::Alone { 0.0 } else { window.be_cores };
            runs.push(Run::new(setup, *load, window.latency, window.ls_cores, be, cpus));
            reaction = reaction.or(r);
        }
    }
    Ok((runs, reaction))
}

/// The machine's CPU use over one second, cores.
fn busy_cores() -> Result<f64, BoxError> {
    let mut node = NodeCollector::new(Path::new("/proc"), Path::new("/sys"));
    node.collect(Timestamp::now())?;
    std::thread::sleep(Duration::from_secs(1));
    let sample = node.collect(Timestamp::now())?.ok_or("no second /proc/stat sample")?;
    Ok(sample.cpu_cores)
}

/// The pods' cgroups of one run.
struct Tree {
    sandbox: TestCgroups,
    ls_rel: String,
    be_rel: String,
    pods: String,
}

/// Builds the tree with the kubelet's shares.
fn build_tree(cpus: usize) -> Result<Tree, BoxError> {
    let mut sandbox = TestCgroups::new()
        .map_err(|reason| format!("interference needs real cgroups: {reason}"))?;
    let (mut ls, ls_rel) =
        sandbox.add_single_container_pod(1, "ls-server", QoSClass::LS, KubeQoSClass::Burstable);
    ls.requests = ResourceVector::cpu_memory(1000, 256 << 20);
    let (be, be_rel) =
        sandbox.add_single_container_pod(2, "be-hogs", QoSClass::BE, KubeQoSClass::BestEffort);
    let parent = |rel: &str| rel.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_string());
    // What the kubelet writes: shares from CPU requests (1 CPU = 1024),
    // 2 for BestEffort.
    for (rel, shares) in [
        ("kubepods".to_string(), (cpus * 1024).to_string()),
        ("kubepods/burstable".into(), "1024".into()),
        (parent(&ls_rel), "1024".into()),
        (ls_rel.clone(), "1024".into()),
        ("kubepods/besteffort".into(), "2".into()),
        (parent(&be_rel), "2".into()),
        (be_rel.clone(), "2".into()),
    ] {
        sandbox
            .write(Subsystem::Cpu, &rel, "cpu.shares", &shares)
            .map_err(|e| format!("{rel}/cpu.shares: {e}"))?;
    }
    let pods = pods_file(&[ls, be]);
    Ok(Tree { sandbox, ls_rel, be_rel, pods })
}

/// A cgroup's CPU time, ns.
fn usage_ns(sandbox: &TestCgroups, rel: &str) -> Result<u64, BoxError> {
    let text = sandbox
        .read(Subsystem::Cpuacct, rel, "cpuacct.usage")
        .map_err(|e| format!("{rel}/cpuacct.usage: {e}"))?;
    Ok(parse_cpu_usage(CgroupVersion::V1, &text)
        .map_err(|e| format!("{rel}/cpuacct.usage: {e}"))?)
}

/// The BE QoS cgroup's CFS quota in cores (`None`: unlimited).
fn be_quota_cores(sandbox: &TestCgroups) -> Result<Option<f64>, BoxError> {
    let text = sandbox.read(Subsystem::Cpu, "kubepods/besteffort", "cpu.cfs_quota_us")?;
    let quota: i64 = text.parse().map_err(|e| format!("cpu.cfs_quota_us {text:?}: {e}"))?;
    let period: i64 =
        sandbox.read(Subsystem::Cpu, "kubepods/besteffort", "cpu.cfs_period_us")?.parse()?;
    Ok((quota > 0).then(|| quota as f64 / period as f64))
}

fn one_run(
    agent_exe: &Path,
    setup: Setup,
    lp: &RequestLoop,
    args: &Args,
    cpus: usize,
    surges: u32,
) -> Result<(Window, Option<Reaction>), BoxError> {
    let mut tree = build_tree(cpus)?;
    if setup != Setup::Alone {
        for _ in 0..cpus {
            tree.sandbox.spawn(&tree.be_rel, Workload::Spin)?;
        }
    }
    let dir = tempfile::tempdir()?;
    let mut agent: Option<Child> = None;
    let result = (|| {
        let slo = match setup {
            Setup::KoloDefaults => Some(node_slo(None, args.sched_idle)),
            Setup::Kolo { threshold } => Some(node_slo(Some(threshold), args.sched_idle)),
            Setup::Alone | Setup::KubeDefaults => None,
        };
        if let Some(slo_text) = slo {
            let pods = dir.path().join("pods.json");
            std::fs::write(&pods, &tree.pods)?;
            let slo = dir.path().join("nodeslo.yaml");
            std::fs::write(&slo, slo_text)?;
            let log = std::fs::File::create(dir.path().join("agent.log"))?;
            let slo = slo.to_str().ok_or("temp path is not UTF-8")?.to_string();
            agent =
                Some(spawn_agent(agent_exe, &mut tree.sandbox, &pods, &["--node-slo", &slo], log)?);
            let quota = matches!(setup, Setup::Kolo { threshold } if threshold > 0);
            wait_for_isolation(
                &tree.sandbox,
                expected_cpu_idle(args.sched_idle),
                quota,
                Duration::from_secs(args.settle),
            )?;
        }
        let run = measure(lp, args, &tree)?;
        let reaction = if surges > 0 { Some(surge_reactions(&mut tree, surges)?) } else { None };
        Ok::<_, BoxError>((run, reaction))
    })();
    if let Some(mut agent) = agent {
        let _ = agent.kill();
        let _ = agent.wait();
    }
    result.map_err(|e| {
        let log = std::fs::read_to_string(dir.path().join("agent.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        if tail.is_empty() {
            e
        } else {
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("{e}\nlast lines of the agent's log:\n{}", tail.join("\n")).into()
        }
    })
}

/// The NodeSLO of a kolo run: co-location on, with CFS-quota suppression
/// at `quota_threshold` (0: suppression off) or, for `None`, the default
/// suppression (cpuset policy, 65 %); beClass `schedIdle` if given.
/// Everything else is kolo's default.
pub(crate) fn node_slo(quota_threshold: Option<i64>, sched_idle: Option<i64>) -> String {
    let mut slo = match quota_threshold {
        None => "resourceUsedThresholdWithBE:\n  enable: true\n".to_string(),
        Some(t) => format!(
            "resourceUsedThresholdWithBE:\n  enable: {}\n  cpuSuppressPolicy: cfsQuota\n  cpuSuppressThresholdPercent: {}\n",
            t > 0,
            t.max(1)
        ),
    };
    if let Some(v) = sched_idle {
        slo.push_str(&format!(
            "resourceQOSStrategy:\n  beClass:\n    cpuQOS:\n      schedIdle: {v}\n"
        ));
    }
    slo
}

/// The `cpu.idle` the agent gives the BE QoS cgroup: as `sched_idle`
/// says, else by the kernel's scheduler (1 on CFS, 0 on EEVDF).
pub(crate) fn expected_cpu_idle(sched_idle: Option<i64>) -> bool {
    use kolo_agent::kernel::{FairScheduler, detect};
    match sched_idle {
        Some(v) => v == 1,
        None => detect(Path::new("/proc"), Path::new("/sys")) != Some(FairScheduler::Eevdf),
    }
}

/// Waits until the agent has put BE isolation (`cpu.idle` as expected,
/// where the kernel has it) and, with `suppress`, a CFS quota on the BE
/// QoS cgroup, and a few rounds more for the quota to settle.
fn wait_for_isolation(
    sandbox: &TestCgroups,
    cpu_idle: bool,
    suppress: bool,
    settle: Duration,
) -> Result<(), BoxError> {
    let start = Instant::now();
    loop {
        let idle = match sandbox.read(Subsystem::Cpu, "kubepods/besteffort", "cpu.idle") {
            Ok(v) => v == if cpu_idle { "1" } else { "0" },
            Err(_) => true, // no cpu.idle on this kernel: shares only
        };
        if idle && (!suppress || be_quota_cores(sandbox)?.is_some()) {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err(
                "the agent did not set cpu.idle (and a CFS quota, if asked) on the BE QoS cgroup within 20 s"
                    .into(),
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The quota starts low (the first rounds have no pod samples) and
    // grows by 10 % of the node per round.
    std::thread::sleep(settle);
    Ok(())
}

/// One run's measurement: the request loop in the LS container, the LS and
/// BE cgroups' CPU over the measured window.
fn measure(lp: &RequestLoop, args: &Args, tree: &Tree) -> Result<Window, BoxError> {
    let dirs: Vec<PathBuf> =
        CONTROLLERS.iter().map(|s| tree.sandbox.abs(*s, &tree.ls_rel)).collect();
    let (warmup, seconds) = (Duration::from_secs(args.warmup), Duration::from_secs(args.seconds));
    measure_window(lp, warmup, seconds, &dirs, || {
        Ok((usage_ns(&tree.sandbox, &tree.ls_rel)?, usage_ns(&tree.sandbox, &tree.be_rel)?))
    })
}

/// LS surges with the agent running: a busy loop starts in the LS
/// container; the time until the BE quota drops by half a core is the
/// reaction. The busy loop then stops and the quota must come back.
fn surge_reactions(tree: &mut Tree, surges: u32) -> Result<Reaction, BoxError> {
    let mut ms = Vec::new();
    let mut first_cut_ms = Vec::new();
    let mut released_s = Vec::new();
    let system = tree.sandbox.system_cgroup()?;
    let system_dirs: Vec<PathBuf> =
        CONTROLLERS.iter().map(|s| tree.sandbox.abs(*s, system)).collect();
    for n in 0..surges {
        let before = settled_quota(&tree.sandbox)?;
        let floor = cpu_suppress::MIN_QUOTA_US as f64 / 100_000.0;
        if before - 0.5 < floor {
            // Other work on the machine counts as LS, so suppression has
            // already cut BE to near its floor: no surge can take half a
            // core more, and the reaction cannot be timed.
            return Err(format!(
                "surge {}: {UNMEASURABLE}: the BE quota is already {before:.2} cores, within half a core of the agent's floor ({floor:.2}); the machine is too busy",
                n + 1
            )
            .into());
        }
        // The surge starts when the busy loop runs: it joins its cgroups
        // (tens of ms on cgroup v1, not counted) and waits stopped until
        // resumed here.
        let spinner = tree.sandbox.spawn(&tree.ls_rel, Workload::SpinOnResume)?;
        let start_and_watch = || {
            let start = Instant::now();
            tree.sandbox.resume(spinner)?;
            let mut first_cut = None;
            loop {
                let quota = be_quota_cores(&tree.sandbox)?;
                if first_cut.is_none() && quota.is_some_and(|q| q < before - 1e-9) {
                    first_cut = Some(start.elapsed());
                }
                if quota.is_some_and(|q| q <= before - 0.5) {
                    return Ok::<_, BoxError>(Some((start.elapsed(), first_cut)));
                }
                if start.elapsed() > Duration::from_secs(5) {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        // From a thread in the tree's `system` cgroup, beside the agent:
        // from the caller's cgroup, outside the test tree's large CPU
        // weight, the thread that starts the surge and watches the quota
        // would wait tens of milliseconds for a CPU while BE fills them
        // (so would the `kill -CONT` it forks), and count that wait as the
        // agent's.
        let watched = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    request_loop::enter_cgroup(&system_dirs)?;
                    start_and_watch()
                })
                .join()
                .map_err(|_| -> BoxError { "the surge thread panicked".into() })?
        });
        tree.sandbox.kill(spinner);
        let (reacted, first_cut) = watched?.ok_or_else(|| {
            format!("surge {}: the BE quota did not drop from {before:.2} cores within 5 s", n + 1)
        })?;
        ms.push(reacted.as_secs_f64() * 1000.0);
        first_cut_ms.push(first_cut.unwrap_or(reacted).as_secs_f64() * 1000.0);
        let stopped = Instant::now();
        loop {
            if be_quota_cores(&tree.sandbox)?.is_none_or(|q| q >= before - 0.1) {
                released_s.push(stopped.elapsed().as_secs_f64());
                break;
            }
            if stopped.elapsed() > Duration::from_secs(30) {
                return Err(
                    format!("surge {}: the BE quota did not come back within 30 s", n + 1).into()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(Reaction {
        median_ms: sorted[sorted.len() / 2],
        max_ms: sorted[sorted.len() - 1],
        first_cut_ms,
        ms,
        released_s,
    })
}

/// How far the BE quota may move (cores) and still count as settled: the
/// budget follows what the rest of the machine uses, which moves by a few
/// tenths of a core from one round to the next even when idle (two
/// control planes and their kubelets in the test suite).
const SETTLE_BAND: f64 = 0.3;

/// The BE quota once it has stayed within [`SETTLE_BAND`] for two agent
/// rounds (cores; unlimited counts as every CPU): the highest reading of
/// that window, so a surge's cut is measured from the top of the noise.
fn settled_quota(sandbox: &TestCgroups) -> Result<f64, BoxError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let start = Instant::now();
    let mut window: Vec<(Instant, f64)> = Vec::new();
    loop {
        let now = Instant::now();
        window.push((now, be_quota_cores(sandbox)?.unwrap_or(cpus)));
        window.retain(|(at, _)| now.duration_since(*at) <= Duration::from_millis(2100));
        let (low, high) =
            window.iter().fold((f64::MAX, f64::MIN), |(lo, hi), (_, q)| (lo.min(*q), hi.max(*q)));
        let covered = now.duration_since(window[0].0) >= Duration::from_millis(2000);
        if covered && high - low <= SETTLE_BAND {
            return Ok(high);
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "{UNMEASURABLE}: the BE quota did not stay within {SETTLE_BAND} cores for 2 s in 60 s; the machine is too busy"
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Report {
    /// Writes the report as a table for people.
    pub fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write_text(self, out)
    }
}

fn write_text(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let on = if r.mode == "node" { "pods on a real node" } else { "hand-built cgroups" };
    writeln!(
        out,
        "LS request loop ({on}): {} µs of CPU per request, {} s measured per run, {} CPUs",
        r.work_us, r.measured_seconds, r.cpus
    )?;
    report::write_runs(&r.runs, out)?;
    if let Some(re) = &r.reaction {
        let list: Vec<String> = re.ms.iter().map(|m| format!("{m:.0}")).collect();
        let released: Vec<String> = re.released_s.iter().map(|s| format!("{s:.1}")).collect();
        let first: Vec<String> = re.first_cut_ms.iter().map(|m| format!("{m:.0}")).collect();
        writeln!(out, "LS surge → first BE quota cut: {} ms", first.join(", "))?;
        writeln!(
            out,
            "LS surge → BE quota cut by ≥ 0.5 core: {} ms (median {:.0} ms, max {:.0} ms); released after {} s",
            list.join(", "),
            re.median_ms,
            re.max_ms,
            released.join(", ")
        )?;
    }
    Ok(())
}
