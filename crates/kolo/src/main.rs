//! `kolo`: QoS-based co-location for Kubernetes.
//!
//! One binary carries every kolo component and tool as a subcommand; one
//! container image serves every Deployment and the DaemonSet.

mod agent;
mod agent_cluster;
mod bench;
mod cluster;
mod crds;
mod deschedule;
mod descheduler_run;
mod doctor;
mod inspect;
mod install;
mod interrupt;
mod logging;
mod manager;
mod manager_run;
mod noderesource;
mod nodeslo;
mod runtime_proxy;
mod schedule;
mod scheduler_run;
mod sim;
mod slo_config;
mod webhook;
mod why;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// mimalloc instead of the system allocator: every component parses and
/// builds Kubernetes objects (strings, maps) at a high rate, and the
/// simulator does so for a thousand nodes per step. With glibc's malloc,
/// allocation was a quarter of `kolo sim`'s CPU time (see
/// docs/benchmarks.md). Built without transparent huge pages (Cargo.toml
/// says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// QoS-based co-location for Kubernetes: reclaim what latency-sensitive pods
/// request but do not use, and run batch work on it safely.
#[derive(Debug, Parser)]
#[command(name = "kolo", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every CustomResourceDefinition kolo uses, as YAML for
    /// `kubectl apply -f -`.
    Crds,
    /// Print kolo's manifests for `kubectl apply --server-side -f -`: CRDs,
    /// namespace, PriorityClasses, slo-controller-config, RBAC, the
    /// components with their probes and PodDisruptionBudgets. `deploy/` is
    /// this output with the defaults.
    Install(Box<install::Args>),
    /// Work with cluster snapshots (`kubectl get ... -o yaml` dumps).
    Snapshot {
        #[command(subcommand)]
        command: SnapshotCommand,
    },
    /// What-if scheduling: place a snapshot's pending pods with kolo's
    /// scheduler and explain each decision (nothing is written anywhere).
    ///
    /// Pending pods are pods without `spec.nodeName`, not terminated, whose
    /// `schedulerName` is one of the configured profiles' (default
    /// `kolo-scheduler`). Each gets one scheduling cycle, in queue order
    /// (priority, then creation time); pods placed earlier count on their
    /// nodes for later ones.
    ///
    /// The pods are scheduled as of `--now`, by default the newest NodeMetric
    /// `status.updateTime` in the snapshot (so a dump is judged as of when it
    /// was taken: load-aware scheduling treats metrics older than 180 s as
    /// expired), else the system clock.
    Schedule {
        /// Snapshot files (YAML or JSON; `-` reads stdin). May repeat; the
        /// files are merged.
        #[arg(long = "snapshot", required = true, value_name = "FILE")]
        snapshots: Vec<PathBuf>,
        /// A KubeSchedulerConfiguration file (profiles, plugins, plugin
        /// args); default: one `kolo-scheduler` profile with kolo's default
        /// plugins.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
        /// Schedule every pending pod, whatever its `schedulerName`, as if it
        /// asked for the first profile.
        #[arg(long)]
        all: bool,
        /// Also show the best N feasible nodes of each pod with their
        /// per-plugin scores.
        #[arg(long, value_name = "N", conflicts_with = "explain_all")]
        explain: Option<usize>,
        /// Also show every evaluated node of each pod: its filter verdict and
        /// reason, and its scores when feasible.
        #[arg(long)]
        explain_all: bool,
        /// The time to schedule at (RFC 3339, e.g. 2026-11-22T04:00:00Z).
        #[arg(long, value_name = "RFC3339", value_parser = kolo_core::snapshot::parse_now)]
        now: Option<kolo_core::clock::Timestamp>,
    },
    /// What-if descheduling: run one round of kolo's descheduler
    /// (LowNodeLoad, then the migration controller's next pass) on a
    /// snapshot and explain it (nothing is written anywhere).
    ///
    /// For each node pool: every node's class (source, low, normal, ...)
    /// with its usage against the thresholds, every candidate pod of the
    /// source nodes in the order considered with its verdict (evicted,
    /// filtered, no fit, ...) and why, then the PodMigrationJobs the round
    /// would create, in order. Usage comes from the NodeMetrics
    /// (systemUsage + podsMetric).
    ///
    /// The round runs as of `--now`, by default the newest NodeMetric
    /// `status.updateTime` in the snapshot (NodeMetrics older than
    /// `nodeMetricExpirationSeconds` are not trusted), else the system
    /// clock.
    Deschedule(Box<deschedule::Args>),
    /// What-if batch / mid overcommit: compute each node's batch and mid
    /// allocatable from a snapshot (nodes, pods, NodeMetrics) and explain
    /// every term of the formula (nothing is written anywhere).
    Noderesource(noderesource::Args),
    /// What-if NodeSLO: render the NodeSLO kolo's manager would write for
    /// each node of a snapshot from an slo-controller-config ConfigMap, and
    /// check that ConfigMap (every malformed key is reported with its JSON
    /// path). Nothing is written anywhere.
    Nodeslo(nodeslo::Args),
    /// Try admission webhooks offline: mutate a pod with colocation
    /// profiles, or validate it, without a cluster.
    Webhook {
        #[command(subcommand)]
        command: webhook::Command,
    },
    /// Run kolo's node agent: collect node, pod and container usage from
    /// /proc and cgroups, serve /metrics, and build the NodeMetric.
    Agent(Box<agent::Args>),
    /// Run kolo's scheduler against the cluster: watch nodes, pods and
    /// NodeMetrics, schedule the pods whose `schedulerName` is kolo's, bind
    /// them, record Events; leader-elected. Serves /healthz, /readyz and
    /// /metrics.
    Scheduler(Box<scheduler_run::Args>),
    /// Run kolo's descheduler against the cluster: watch nodes, pods,
    /// NodeMetrics, PodMigrationJobs and Reservations; move pods off nodes
    /// whose usage is over LowNodeLoad's high thresholds through
    /// PodMigrationJobs (evictions through the Eviction API, so
    /// PodDisruptionBudgets hold); record Events; leader-elected. Serves
    /// /healthz, /readyz and /metrics.
    Descheduler(Box<descheduler_run::Args>),
    /// Run kolo's CRI runtime proxy: between the kubelet and the container
    /// runtime, it calls the node agent's hooks so a container starts with
    /// kolo's cpuset and limits already in place.
    RuntimeProxy(Box<runtime_proxy::Args>),
    /// Run kolo's manager components.
    Manager {
        #[command(subcommand)]
        command: manager::Command,
    },
    /// Measure kolo on this machine (e.g. the agent's footprint on real
    /// cgroups).
    Bench {
        #[command(subcommand)]
        command: bench::Command,
    },
    /// Simulate a cluster and compare policies (baseline Kubernetes vs kolo
    /// co-location) on a synthetic day of LS services and batch jobs, running
    /// kolo's real scheduler, manager and agent decisions. No cluster needed.
    Sim(Box<sim::Args>),
    /// Check this node for kolo's agent: the kernel and its fair
    /// scheduler (CFS / EEVDF), the cgroup version and driver, the
    /// controllers and files kolo writes, cpu.idle, CFS burst, memory QoS,
    /// PSI and resctrl support, and whether the kubelet's own cgroup writes
    /// conflict with kolo's isolation; then which QoS features the agent
    /// will use here. Creates and removes a cgroup of its own where no
    /// kubepods cgroup shows the kernel's files (run it as root). Exits 1
    /// when the agent cannot run here.
    Doctor(doctor::Args),
    /// Why is this pod pending, throttled or evicted; why does this node
    /// have the batch / mid allocatable it has? From the live cluster and
    /// the node agents' `/actions`.
    Why(why::Args),
    /// Print kolo's version.
    Version,
}

#[derive(Debug, Subcommand)]
enum SnapshotCommand {
    /// Summarise a snapshot: nodes, pods per QoS and priority class,
    /// requested vs allocatable, batch resources, kolo objects.
    Inspect {
        /// Snapshot files (YAML or JSON; `-` reads stdin). Several files are
        /// merged.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
        output: OutputFormat,
    },
}

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// A table for people (`-o table` works too).
    #[value(alias = "table")]
    Text,
    /// JSON for programs.
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds => crds::print_crds(&mut std::io::stdout().lock()),
        Command::Install(args) => install::run(&args, &mut std::io::stdout().lock()),
        Command::Version => {
            writeln!(std::io::stdout(), "kolo {}", env!("CARGO_PKG_VERSION")).map_err(Into::into)
        }
        Command::Snapshot { command: SnapshotCommand::Inspect { files, output } } => {
            inspect::run(&files, output, &mut std::io::stdout().lock())
        }
        Command::Deschedule(args) => deschedule::run(&args, &mut std::io::stdout().lock()),
        Command::Doctor(args) => match doctor::run(&args, &mut std::io::stdout().lock()) {
            Ok(true) => Ok(()),
            Ok(false) => Err(CliError::Command(
                "the agent cannot run on this node: see the FAIL rows".into(),
            )),
            Err(e) => Err(e),
        },
        Command::Why(args) => why::run(&args, &mut std::io::stdout().lock()),
        Command::Noderesource(args) => noderesource::run(&args, &mut std::io::stdout().lock()),
        Command::Nodeslo(args) => nodeslo::run(&args, &mut std::io::stdout().lock()),
        Command::Webhook { command } => {
            webhook::run(&command, &mut std::io::stdout().lock()).map_err(CliError::Command)
        }
        Command::Agent(args) => {
            agent::run(*args, &mut std::io::stdout().lock()).map_err(CliError::Command)
        }
        Command::Bench { command } => {
            bench::run(command, &mut std::io::stdout().lock()).map_err(CliError::Command)
        }
        Command::Scheduler(args) => {
            scheduler_run::run(*args).map_err(|e| CliError::Command(e.into()))
        }
        Command::Descheduler(args) => {
            descheduler_run::run(*args).map_err(|e| CliError::Command(e.into()))
        }
        Command::Manager { command } => manager::run(command).map_err(CliError::Command),
        Command::RuntimeProxy(args) => {
            runtime_proxy::run(*args).map_err(|e| CliError::Command(e.into()))
        }
        Command::Sim(args) => {
            sim::run(&args, &mut std::io::stdout().lock()).map_err(CliError::Command)
        }
        Command::Schedule { snapshots, config, output, all, explain, explain_all, now } => {
            let options = kolo_scheduler::whatif::Options {
                config,
                all,
                explain: kolo_scheduler::whatif::explain_level(explain, explain_all),
                now,
            };
            schedule::run(&snapshots, &options, output, &mut std::io::stdout().lock())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`kolo schedule ... | head`): nothing left
        // to tell anyone, and like other CLI tools that is no failure.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kolo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `error` (or what caused it, however deeply boxed) is a write to a
/// pipe whose reader has gone (`EPIPE`).
fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        return io.kind() == std::io::ErrorKind::BrokenPipe;
    }
    // serde_json's `source()` skips the I/O error it wraps.
    if let Some(json) = error.downcast_ref::<serde_json::Error>() {
        return json.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe);
    }
    // `#[error(transparent)]` forwards `source()` past the wrapped error
    // itself, so unwrap kolo's own wrappers by hand.
    match error.downcast_ref::<CliError>() {
        Some(CliError::Command(inner)) => is_broken_pipe(inner.as_ref()),
        Some(CliError::Io(io)) => io.kind() == std::io::ErrorKind::BrokenPipe,
        _ => error.source().is_some_and(is_broken_pipe),
    }
}

/// Errors a subcommand reports before exiting with status 1.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// The snapshot could not be loaded.
    #[error(transparent)]
    Snapshot(#[from] kolo_core::snapshot::SnapshotError),
    /// `kolo schedule` could not run.
    #[error(transparent)]
    Schedule(#[from] kolo_scheduler::whatif::ScheduleError),
    /// A subcommand failed; the error says why.
    #[error(transparent)]
    Command(Box<dyn std::error::Error + Send + Sync>),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Io(#[from] std::io::Error),
    /// Output could not be serialized.
    #[error("serializing output: {0}")]
    Serialize(String),
}

/// Writes `value` as pretty JSON and a newline.
fn write_json(
    value: &impl serde::Serialize,
    out: &mut (impl Write + ?Sized),
) -> Result<(), CliError> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(|e| match e.io_error_kind() {
        Some(kind) => CliError::Io(kind.into()),
        None => CliError::Serialize(e.to_string()),
    })?;
    writeln!(out)?;
    Ok(())
}

/// Loads and merges snapshot files (`-` is stdin), printing what loaded
/// but looks wrong (empty inputs, duplicate objects) as warnings.
fn load_snapshots(
    files: &[impl AsRef<std::path::Path>],
) -> Result<kolo_core::snapshot::Snapshot, kolo_core::snapshot::SnapshotError> {
    let snapshot = kolo_core::snapshot::Snapshot::load_all(files)?;
    warn_all(&snapshot.warnings());
    Ok(snapshot)
}

/// Prints warnings to stderr: they never abort a command, and a closed
/// stderr is no reason to fail either.
fn warn_all<'a>(warnings: impl IntoIterator<Item = &'a String>) {
    let mut stderr = std::io::stderr().lock();
    for warning in warnings {
        let _ = writeln!(stderr, "kolo: warning: {warning}");
    }
}
