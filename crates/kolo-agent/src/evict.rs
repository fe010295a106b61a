//! Carrying out evictions (the act side of the eviction strategies).
//!
//! [`Evictor`] is what the loop calls; in a cluster it is the Eviction API
//! (`kolo_kube::agent::ApiEvictor`), in standalone mode [`KillEvictor`] kills the
//! pod's processes, as Koordinator does by default (it stops the containers
//! through the runtime). [`RateLimit`] caps how many pods go per minute
//! whatever the strategies ask, so a bad reading can never empty a node.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use kolo_core::clock::Timestamp;
use rustix::process::{Pid, Signal, kill_process};

use crate::cgroup::{CgroupDir, Cgroups, Resource};
use crate::qos::PodState;

/// An eviction that could not be carried out.
#[derive(Debug, thiserror::Error)]
#[error("evicting {pod}: {message}")]
pub struct EvictError {
    /// `namespace/name`.
    pub pod: String,
    /// What went wrong.
    pub message: String,
}

/// Carries out an eviction the strategies decided.
pub trait Evictor {
    /// Evicts `pod` (a BE pod: the strategies never pick another).
    fn evict(&mut self, pod: &PodState, reason: &str) -> Result<(), EvictError>;
}

/// Standalone mode: kills every process in the pod's cgroup and its
/// containers' cgroups with SIGKILL.
#[derive(Debug)]
pub struct KillEvictor {
    cgroups: Arc<Cgroups>,
}

impl KillEvictor {
    /// An evictor over the node's cgroups.
    pub fn new(cgroups: Arc<Cgroups>) -> KillEvictor {
        KillEvictor { cgroups }
    }

    /// The processes in `dir` and its containers' directories.
    fn pids(&self, pod: &PodState) -> Result<Vec<i32>, String> {
        let mut dirs: Vec<&CgroupDir> = vec![&pod.dir];
        dirs.extend(pod.containers.iter().filter_map(|c| c.dir.as_ref()));
        let mut pids = Vec::new();
        for dir in dirs {
            let Some(path) = self.cgroups.layout().file_path(dir, Resource::CgroupProcs) else {
                continue;
            };
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        let pid = line.trim().parse::<i32>().map_err(|e| {
                            format!("{}: {line:?} is not a pid: {e}", path.display())
                        })?;
                        if !pids.contains(&pid) {
                            pids.push(pid);
                        }
                    }
                }
                // A container that already went away.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        Ok(pids)
    }
}

impl Evictor for KillEvictor {
    fn evict(&mut self, pod: &PodState, reason: &str) -> Result<(), EvictError> {
        let fail = |message: String| EvictError { pod: pod.pod.id.key(), message };
        if !pod.is_be() {
            // The strategies never ask for this; refuse rather than trust it.
            return Err(fail(format!("refusing to kill a {:?} pod", pod.pod.qos)));
        }
        let pids = self.pids(pod).map_err(fail)?;
        tracing::warn!(pod = %pod.pod.id.key(), processes = pids.len(), %reason, "evicting: killing the pod's processes");
        for pid in pids {
            let Some(pid) = Pid::from_raw(pid) else { continue };
            match kill_process(pid, Signal::KILL) {
                Ok(()) => {}
                // Exited meanwhile.
                Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(fail(format!("kill {}: {e}", pid.as_raw_nonzero()))),
            }
        }
        Ok(())
    }
}

/// At most `max` evictions in any `window` (default 3 per minute).
#[derive(Debug, Clone)]
pub struct RateLimit {
    max: usize,
    window: Duration,
    recent: VecDeque<Timestamp>,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::new(3, Duration::from_secs(60))
    }
}

impl RateLimit {
    /// `max` evictions per `window`.
    pub fn new(max: usize, window: Duration) -> RateLimit {
        RateLimit { max, window, recent: VecDeque::new() }
    }

    /// Whether one more eviction may happen at `now`; if so it is counted.
    pub fn allow(&mut self, now: Timestamp) -> bool {
        while let Some(first) = self.recent.front() {
            if now.duration_since(*first).as_secs_f64() >= self.window.as_secs_f64() {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.max {
            return false;
        }
        self.recent.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn rate_limit_table() {
        let mut r = RateLimit::new(2, Duration::from_secs(60));
        let got: Vec<bool> = [0, 1, 2, 59, 60, 61, 62].iter().map(|s| r.allow(t(*s))).collect();
        // 0 and 1 allowed; 2 and 59 refused (2 in the window); at 60 the
        // first left the window, at 61 the second: allowed; 62 refused.
        assert_eq!(got, vec![true, true, false, false, true, true, false]);
    }
}
