//! Measurements on this machine that unit benchmarks cannot make (`kolo
//! bench`). Both build a kubepods-shaped tree as real cgroups (a sandbox
//! under the machine's cgroup v1 mounts, removed at the end) and run
//! `kolo agent --standalone` on it as a separate process.
//!
//! * [`agent_overhead`]: the agent's CPU time and peak RSS at N pods × M
//!   containers.
//! * [`process`]: a process's CPU time from `/proc`.
//! * [`interference`]: an LS request loop's latency alone, next to BE CPU
//!   hogs under Kubernetes defaults, and next to them with the agent
//!   running; plus the agent's reaction time to an LS surge.

pub mod agent_overhead;
mod arrivals;
pub mod interference;
pub mod process;
mod real_node;
mod request_loop;

use std::error::Error;
use std::path::Path;
use std::process::{Child, Stdio};

use kolo_agent::sandbox::TestCgroups;

/// A boxed error: a benchmark reports what went wrong and stops.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Starts `AGENT agent --standalone` (the `kolo` binary at `agent`) on `sandbox`'s tree, with
/// the pods in `pods` and `extra` arguments; its log goes to `log`. The
/// agent runs in the tree's `system` cgroup beside `kubepods`, with the
/// CPU weight a node's daemons have (`TestCgroups::system_cgroup`).
fn spawn_agent(
    agent: &Path,
    sandbox: &mut TestCgroups,
    pods: &Path,
    extra: &[&str],
    log: std::fs::File,
) -> Result<Child, BoxError> {
    let system = sandbox.system_cgroup()?;
    Ok(sandbox
        .command_in(system, agent)
        .args(["agent", "--standalone", "--cgroup-root", kolo_agent::sandbox::CGROUP_ROOT])
        .args(["--cgroup-driver", "cgroupfs", "--kubelet-cgroup-root", sandbox.name()])
        .arg("--pods")
        .arg(pods)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()?)
}
