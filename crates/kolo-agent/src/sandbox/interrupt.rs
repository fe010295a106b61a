//! Clean-up when the process is interrupted (Ctrl-C, SIGTERM): a signal
//! does not run `Drop`, so without this a `kolo agent demo` or a
//! `kolo bench` stopped by Ctrl-C left its cgroups, and a busy-looping
//! workload at 100 % CPU, behind.
//!
//! Every live [`TestCgroups`](super::TestCgroups) registers its test roots
//! and the pids it started here; [`clean_up_after_signal`], called by the
//! binary's signal watcher, kills them and removes the trees. It keeps the
//! registry locked for good, so the interrupted main thread cannot create
//! another cgroup or start another process before the process exits.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rustix::process::{Pid, Signal, kill_process};

/// What a signal must undo.
struct Live {
    /// The test roots (every hierarchy) of the live sandboxes.
    roots: Vec<PathBuf>,
    /// Processes the live sandboxes started and have not reaped.
    pids: Vec<u32>,
}

static LIVE: Mutex<Live> = Mutex::new(Live { roots: Vec::new(), pids: Vec::new() });

/// The registry, locked (a panic elsewhere does not make it unusable).
pub(super) fn live() -> Guard {
    Guard(LIVE.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The locked registry: hold it while creating a cgroup or starting a
/// process, so a signal's clean-up sees all of them or waits.
pub(super) struct Guard(MutexGuard<'static, Live>);

impl Guard {
    /// Registers a test root.
    pub(super) fn add_root(&mut self, root: &Path) {
        if !self.0.roots.iter().any(|r| r == root) {
            self.0.roots.push(root.to_path_buf());
        }
    }

    /// Forgets test roots (the sandbox removed them).
    pub(super) fn remove_roots(&mut self, roots: &[PathBuf]) {
        self.0.roots.retain(|r| !roots.contains(r));
    }

    /// Registers a started process.
    pub(super) fn add_pid(&mut self, pid: u32) {
        self.0.pids.push(pid);
    }

    /// Forgets a process once it is reaped (its pid may be reused).
    pub(super) fn remove_pid(&mut self, pid: u32) {
        self.0.pids.retain(|p| *p != pid);
    }
}

/// Kills every process the live sandboxes started or that is in their
/// cgroups, and removes their cgroup trees; returns how many roots were
/// removed. For a signal handler, just before the process exits: the
/// registry stays locked, so no sandbox of this process creates anything
/// afterwards (its next attempt blocks until the exit).
pub fn clean_up_after_signal() -> usize {
    let guard = live();
    for pid in &guard.0.pids {
        if let Some(pid) = i32::try_from(*pid).ok().and_then(Pid::from_raw) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
    for root in &guard.0.roots {
        super::remove_tree(root);
    }
    let removed = guard.0.roots.len();
    // Never unlocked: see above.
    std::mem::forget(guard);
    removed
}
