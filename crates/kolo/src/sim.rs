//! `kolo sim`: the whole system on a simulated cluster, policies side by
//! side, with a summary table and (with `--out`) an HTML report, CSV and
//! JSON. The simulation itself is `kolo-sim`; this is its act side:
//! progress bar, wall time, files.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use kolo_sim::engine::{self, Event, Phase};
use kolo_sim::policy::Policy;
use kolo_sim::report::{PolicyRun, data, html, table};
use kolo_sim::scenario::{BUILTIN, BUILTIN_NAME, Overrides, Scenario};
use kolo_sim::workload;

use crate::OutputFormat;

/// `kolo sim` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (YAML, see examples/scenarios/ and docs/sim.md);
    /// default: the built-in scenario (240 nodes of 32 CPUs, 24 hours).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Policies to compare, comma-separated: `baseline` (Kubernetes
    /// defaults), `colocation` (kolo), or any the scenario defines under
    /// `policies`.
    #[arg(long, value_delimiter = ',', default_value = "baseline,colocation")]
    pub policies: Vec<String>,
    /// Start from a cluster snapshot (`kubectl get nodes,pods -A -o yaml`,
    /// `-` reads stdin; may repeat, the files are merged): its nodes replace
    /// the scenario's cluster, its non-BE pods the generated LS services
    /// (see docs/sim.md). Cannot be combined with `--nodes`.
    #[arg(long = "snapshot", value_name = "FILE", conflicts_with = "nodes")]
    pub snapshots: Vec<PathBuf>,
    /// Override the number of nodes (the scenario's node groups are scaled
    /// in proportion).
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// Override the simulated duration, hours.
    #[arg(long, value_name = "HOURS")]
    pub hours: Option<f64>,
    /// Override the step length, seconds.
    #[arg(long, value_name = "SECONDS")]
    pub step: Option<u64>,
    /// Override the seed (workload and usage noise).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write report.html, summary.json and steps-<policy>.csv into DIR
    /// (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also print where the wall time went (scheduler, node model, agents,
    /// reports and manager), per policy.
    #[arg(long)]
    pub timings: bool,
    /// Do not draw the progress bar (it is drawn on stderr when it is a
    /// terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Run the policies at the same time, one thread each (same results;
    /// each policy's wall time then includes sharing the machine with the
    /// others).
    #[arg(long)]
    pub parallel: bool,
    /// Output format of the summary on stdout.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Why `kolo sim` failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario file could not be read.
    #[error("reading scenario {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The scenario was refused (names the file and field).
    #[error(transparent)]
    Scenario(#[from] kolo_sim::scenario::ScenarioError),
    /// The snapshot could not start the scenario (names the file and the
    /// object).
    #[error(transparent)]
    Snapshot(#[from] kolo_sim::snapshot::ImportError),
    /// An override is out of range.
    #[error("{0}")]
    Override(String),
    /// A policy was refused.
    #[error(transparent)]
    Policy(#[from] kolo_sim::policy::PolicyError),
    /// The engine stopped.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// An output file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Loads the scenario and applies the command-line overrides.
pub fn load(args: &Args) -> Result<Scenario, SimError> {
    let mut scenario = match &args.scenario {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| SimError::Read { path: path.clone(), source })?;
            Scenario::from_yaml(&text, &path.display().to_string())?
        }
        None => Scenario::from_yaml(BUILTIN, BUILTIN_NAME)?,
    };
    if !args.snapshots.is_empty() {
        // clap refuses `--nodes` with it: the snapshot fixes the nodes.
        let imported = kolo_sim::snapshot::load(&mut scenario, &args.snapshots)?;
        eprintln!("kolo sim: {imported}");
    }
    let overrides = Overrides {
        nodes: args.nodes,
        hours: args.hours,
        step_seconds: args.step,
        seed: args.seed,
    };
    scenario
        .apply(&overrides)
        .map_err(|(field, message)| SimError::Override(format!("{field}: {message}")))?;
    Ok(scenario)
}

/// Runs the simulation and prints / writes its reports.
pub fn run(
    args: &Args,
    out: &mut impl Write,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let scenario = load(args)?;
    let policies = args
        .policies
        .iter()
        .map(|name| Policy::resolve(name.trim(), &scenario))
        .collect::<Result<Vec<_>, _>>()?;
    let workload = workload::generate(&scenario, engine::cluster_size(&scenario));
    let bars = MultiProgress::new();
    let run_one = |policy: &Policy| -> Result<(PolicyRun, Phases), engine::EngineError> {
        let bar = if args.no_progress {
            ProgressBar::hidden()
        } else {
            bars.add(ProgressBar::new(scenario.steps()))
        };
        run_policy(&scenario, &workload, policy, bar)
    };
    let results: Vec<Result<(PolicyRun, Phases), engine::EngineError>> = if args.parallel {
        // One thread per policy; their node phases share rayon's pool, and
        // one policy's sequential phases (scheduler, publishing) overlap
        // the other's. Each run is a pure function of its inputs, so the
        // results are the same as one after the other.
        std::thread::scope(|scope| {
            let handles: Vec<_> =
                policies.iter().map(|policy| scope.spawn(|| run_one(policy))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        })
    } else {
        policies.iter().map(run_one).collect()
    };
    let mut runs = Vec::with_capacity(policies.len());
    let mut timings = Vec::new();
    for (policy, result) in policies.iter().zip(results) {
        let (run, phases) = result?;
        timings.push((policy.name.clone(), phases));
        runs.push(run);
    }
    match args.output {
        OutputFormat::Text => {
            writeln!(
                out,
                "kolo sim: scenario {} — {} nodes, {} h in {} s steps, seed {}; {} LS pods, {} batch pods in {} jobs ({:.0} jobs/h)\n",
                if scenario.name.is_empty() { "(unnamed)" } else { &scenario.name },
                scenario.node_count(),
                scenario.duration_hours,
                scenario.step_seconds,
                scenario.seed,
                workload.ls.len(),
                workload.batch.len(),
                workload.jobs,
                workload.jobs_per_hour
            )?;
            write!(out, "{}", table::render(&runs))?;
            if args.timings {
                writeln!(out, "\nwall time by phase (Publish and Schedule run alongside Nodes):")?;
                for (name, phases) in &timings {
                    let parts: Vec<String> = phases
                        .iter()
                        .map(|(p, d)| format!("{p:?} {:.1} s", d.as_secs_f64()))
                        .collect();
                    writeln!(out, "  {name}: {}", parts.join(", "))?;
                }
            }
        }
        OutputFormat::Json => {
            writeln!(out, "{}", data::summary_json(&scenario.name, scenario.seed, &runs))?;
        }
    }
    if let Some(dir) = &args.out {
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|source| SimError::Write { path, source })
        };
        std::fs::create_dir_all(dir)
            .map_err(|source| SimError::Write { path: dir.clone(), source })?;
        write("summary.json", &data::summary_json(&scenario.name, scenario.seed, &runs))?;
        for r in &runs {
            write(
                &format!("steps-{}.csv", r.result.summary.policy),
                &data::steps_csv(&r.result.steps),
            )?;
        }
        write("report.html", &html::render(&scenario, &runs))?;
        if args.output == OutputFormat::Text {
            writeln!(out, "\nreport: {}", dir.join("report.html").display())?;
        }
    }
    Ok(())
}

/// Wall time by phase of one policy's run.
type Phases = BTreeMap<Phase, Duration>;

/// Runs one policy, drawing its progress on `bar` and timing its phases.
fn run_policy(
    scenario: &Scenario,
    workload: &workload::Workload,
    policy: &Policy,
    bar: ProgressBar,
) -> Result<(PolicyRun, Phases), engine::EngineError> {
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:40}] {percent:>3}% {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(policy.name.clone());
    let hours_per_step = scenario.step_seconds as f64 / 3600.0;
    let started = Instant::now();
    // Phases begin and end on the thread that runs them; the cluster side
    // (Publish, Schedule) overlaps the node side (Nodes).
    let timing: Mutex<(Phases, BTreeMap<Phase, Instant>)> = Mutex::default();
    let result = engine::run(scenario, workload, policy, &|event| match event {
        Event::Begin(phase) => {
            let mut t = timing.lock().unwrap_or_else(|p| p.into_inner());
            t.1.insert(phase, Instant::now());
        }
        Event::End(phase) => {
            let mut t = timing.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(since) = t.1.remove(&phase) {
                *t.0.entry(phase).or_default() += since.elapsed();
            }
        }
        Event::Step { step, steps } => {
            if step % 60 == 0 || step == steps {
                bar.set_position(step);
                bar.set_message(format!("{:.1} h simulated", step as f64 * hours_per_step));
            }
        }
    })?;
    let phases = timing.into_inner().unwrap_or_else(|p| p.into_inner()).0;
    bar.finish_and_clear();
    let run = PolicyRun {
        result,
        description: policy.description.clone(),
        kind: policy.kind,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    Ok((run, phases))
}
