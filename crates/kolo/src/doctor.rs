//! `kolo doctor`: run on a node, says whether kolo's agent will work there
//! and which QoS features it will use ([`kolo_agent::doctor`]).

use std::io::Write;
use std::path::PathBuf;

use kolo_agent::doctor::{Report, Roots, Status, probe};

use crate::{CliError, OutputFormat, write_json};

/// `kolo doctor` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cgroup mount root (`/host-cgroup` in a DaemonSet).
    #[arg(long, default_value = "/sys/fs/cgroup")]
    pub cgroup_root: PathBuf,
    /// The kubelet's `--cgroup-root` below it.
    #[arg(long, default_value = "")]
    pub kubelet_cgroup_root: String,
    /// `/proc` of the node.
    #[arg(long, default_value = "/proc")]
    pub proc_root: PathBuf,
    /// `/sys` of the node.
    #[arg(long, default_value = "/sys")]
    pub sys_root: PathBuf,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Probes the node and prints the report; `Ok(false)` when a check failed
/// (the agent cannot run here).
pub fn run(args: &Args, out: &mut impl Write) -> Result<bool, CliError> {
    let roots = Roots {
        cgroup: args.cgroup_root.clone(),
        kubelet_root: args.kubelet_cgroup_root.clone(),
        proc: args.proc_root.clone(),
        sys: args.sys_root.clone(),
        may_create: true,
    };
    let report = Report::from_facts(&probe(&roots));
    match args.output {
        OutputFormat::Json => write_json(&report, out)?,
        OutputFormat::Text => write_text(&report, out)?,
    }
    Ok(report.exit_code() == 0)
}

fn write_text(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let width = report.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    writeln!(out, "{:<6} {:<width$}  DETAIL", "STATUS", "CHECK")?;
    for c in &report.checks {
        let status = match c.status {
            Status::Ok => "ok",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Info => "info",
        };
        writeln!(out, "{status:<6} {:<width$}  {}", c.name, c.detail)?;
    }
    if report.features.is_empty() {
        return Ok(());
    }
    let width = report.features.iter().map(|f| f.name.len()).max().unwrap_or(0);
    writeln!(out, "\n{:<width$}  ON   HOW / WHY NOT", "QOS FEATURE")?;
    for f in &report.features {
        writeln!(out, "{:<width$}  {:<4} {}", f.name, if f.on { "yes" } else { "no" }, f.why)?;
    }
    Ok(())
}
