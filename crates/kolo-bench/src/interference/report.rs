//! What `kolo bench interference` reports: one [`Run`] per setup, LS load
//! and arrival pattern, each set against the LS-alone run of the same load
//! and pattern, and the table people read.

use std::io::Write;

use serde::Serialize;

use crate::arrivals::Arrivals;
use crate::request_loop::Percentiles;

/// What runs beside the LS request loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Setup {
    Alone,
    KubeDefaults,
    /// kolo with the defaults (cpuset suppression at 65 %).
    KoloDefaults,
    /// kolo with CFS-quota suppression at `threshold` (0: off).
    Kolo {
        threshold: i64,
    },
}

impl Setup {
    /// The run's name in the report.
    pub(crate) fn name(self) -> String {
        match self {
            Setup::Alone => "LS alone".into(),
            Setup::KubeDefaults => "LS + BE, Kubernetes defaults".into(),
            Setup::KoloDefaults => "LS + BE, kolo defaults (cpuset 65 %)".into(),
            Setup::Kolo { threshold: 0 } => "LS + BE, kolo, no suppression".into(),
            Setup::Kolo { threshold } => format!("LS + BE, kolo, cfsQuota {threshold} %"),
        }
    }
}

/// An LS load and arrival pattern: one run of each setup is made for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Load {
    /// LS load, percent of one core (the LS pod's CPU request).
    pub load_percent: f64,
    /// Mean LS requests per second.
    pub rate_per_second: f64,
    /// When the requests arrive.
    pub arrivals: Arrivals,
}

/// One run's figures.
#[derive(Debug, Serialize)]
pub(crate) struct Run {
    pub name: String,
    #[serde(flatten)]
    pub load: Load,
    pub latency: Percentiles,
    /// CPU the LS pod used, cores.
    pub ls_cores: f64,
    /// CPU the BE pods used, cores (0 in the LS-alone run).
    pub be_cores: f64,
    /// CPU the LS pod left idle: node CPUs − LS cores.
    pub left_by_ls_cores: f64,
    /// BE cores / CPU left by LS, percent.
    pub be_share_of_left_percent: f64,
    /// p99 against the LS-alone run's of the same load, percent (0 for
    /// that run).
    pub p99_vs_alone_percent: f64,
    /// p99.9 against the LS-alone run's of the same load, percent.
    pub p999_vs_alone_percent: f64,
    /// Slowest request against the LS-alone run's, percent.
    pub max_vs_alone_percent: f64,
}

impl Run {
    /// A run of `setup` at `load` on `cpus` CPUs with these figures.
    pub(crate) fn new(
        setup: Setup,
        load: Load,
        latency: Percentiles,
        ls_cores: f64,
        be_cores: f64,
        cpus: usize,
    ) -> Run {
        let left = cpus as f64 - ls_cores;
        Run {
            name: setup.name(),
            load,
            latency,
            ls_cores,
            be_cores,
            left_by_ls_cores: left,
            be_share_of_left_percent: if left > 0.0 { be_cores / left * 100.0 } else { 0.0 },
            p99_vs_alone_percent: 0.0,
            p999_vs_alone_percent: 0.0,
            max_vs_alone_percent: 0.0,
        }
    }
}

/// Sets each run's figures against the LS-alone run of its load and
/// pattern (runs without one keep 0).
pub(crate) fn compare_with_alone(runs: &mut [Run]) {
    let alone: Vec<(Load, Percentiles)> = runs
        .iter()
        .filter(|r| r.name == Setup::Alone.name())
        .map(|r| (r.load, r.latency))
        .collect();
    for run in runs.iter_mut().filter(|r| r.name != Setup::Alone.name()) {
        let Some((_, a)) = alone.iter().find(|(load, _)| *load == run.load) else { continue };
        let pct = |x: f64, base: f64| (x / base - 1.0) * 100.0;
        run.p99_vs_alone_percent = pct(run.latency.p99_us, a.p99_us);
        run.p999_vs_alone_percent = pct(run.latency.p999_us, a.p999_us);
        run.max_vs_alone_percent = pct(run.latency.max_us, a.max_us);
    }
}

/// Writes `runs` as a table for people, grouped by load and pattern.
pub(crate) fn write_runs(runs: &[Run], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>5} {:<7} {:<37} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>7} {:>11}",
        "load",
        "arrive",
        "run",
        "p50",
        "p99",
        "p99.9",
        "max",
        "p99 Δ",
        "p99.9 Δ",
        "LS CPU",
        "BE CPU",
        "BE of idle"
    )?;
    for run in runs {
        let ms = |us: f64| format!("{:.2} ms", us / 1000.0);
        let alone = run.name == Setup::Alone.name();
        let delta = |v: f64| if alone { "-".to_string() } else { format!("{v:+.1} %") };
        let be_share = if run.be_cores > 0.0 {
            format!("{:.0} %", run.be_share_of_left_percent)
        } else {
            "-".into()
        };
        writeln!(
            out,
            "{:>4}% {:<7} {:<37} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7.2} {:>7.2} {:>11}",
            run.load.load_percent,
            run.load.arrivals.name(),
            run.name,
            ms(run.latency.p50_us),
            ms(run.latency.p99_us),
            ms(run.latency.p999_us),
            ms(run.latency.max_us),
            delta(run.p99_vs_alone_percent),
            delta(run.p999_vs_alone_percent),
            run.ls_cores,
            run.be_cores,
            be_share
        )?;
    }
    Ok(())
}
