//! Which fair scheduler the kernel runs: CFS (Linux < 6.6) or EEVDF
//! (Linux ≥ 6.6). The lowest CPU priority for BE work depends on it.
//!
//! On CFS, `cpu.idle = 1` (a SCHED_IDLE group) is the strongest mainline
//! tool: a waking non-idle task preempts an idle one at once. On EEVDF it
//! is not. Measured on this project's test machine (Linux 6.18, HZ=250,
//! 2 vCPUs; `docs/benchmarks.md`): an LS request loop next to BE CPU hogs
//! had 8.4 % of its requests delayed by a whole scheduler tick with the BE
//! group at `cpu.idle = 1`, against 0.5 % with the BE group at the minimal
//! weight (`cpu.shares = 2`) and 0.13 % alone — the LS p99 went from
//! +2 % to +150 %. So on EEVDF kolo isolates BE work by weight, not by
//! `cpu.idle`, unless the NodeSLO asks for `schedIdle: 1`.
//!
//! Detection, feature first: the scheduler's debugfs feature list
//! (`/sys/kernel/debug/sched/features`, root only) names EEVDF-only
//! features (`PLACE_LAG`, `RUN_TO_PARITY`); where it is not readable (not
//! mounted, or locked down as on many hosts) the kernel release decides:
//! EEVDF replaced CFS in 6.6. A release that does not parse counts as CFS,
//! the older and more common case, and is logged by the caller.

use std::path::Path;

/// The kernel's fair-class scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairScheduler {
    /// The Completely Fair Scheduler (Linux < 6.6).
    Cfs,
    /// Earliest Eligible Virtual Deadline First (Linux ≥ 6.6).
    Eevdf,
}

/// Features only EEVDF has (added with it in 6.6).
const EEVDF_FEATURES: [&str; 2] = ["PLACE_LAG", "RUN_TO_PARITY"];

/// The scheduler a debugfs `sched/features` text shows (space-separated
/// names, disabled ones prefixed `NO_`): EEVDF if it lists one of its
/// features, on or off. `None` for an empty text.
pub fn from_sched_features(text: &str) -> Option<FairScheduler> {
    let mut names = text.split_whitespace().peekable();
    names.peek()?;
    let eevdf = names.any(|n| EEVDF_FEATURES.contains(&n.trim_start_matches("NO_")));
    Some(if eevdf { FairScheduler::Eevdf } else { FairScheduler::Cfs })
}

/// The scheduler a kernel release string implies (`6.18.44-fc-v669`,
/// `5.15.0-91-generic`, `4.19.91-27.al7.x86_64`): EEVDF from 6.6 on.
/// `None` if the release does not start with `MAJOR.MINOR`.
pub fn from_release(release: &str) -> Option<FairScheduler> {
    let mut parts = release.trim().splitn(3, ['.', '-']);
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = leading_number(parts.next()?)?;
    Some(if (major, minor) >= (6, 6) { FairScheduler::Eevdf } else { FairScheduler::Cfs })
}

/// The decimal number at the start of `s` (`"18"`, `"6rc1"` → 6).
fn leading_number(s: &str) -> Option<u32> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

/// Detects the scheduler of the kernel whose `/proc` and `/sys` are at
/// `proc_root` and `sys_root`; `None` if neither source answers.
pub fn detect(proc_root: &Path, sys_root: &Path) -> Option<FairScheduler> {
    let features = sys_root.join("kernel/debug/sched/features");
    if let Some(s) = std::fs::read_to_string(features).ok().and_then(|t| from_sched_features(&t)) {
        return Some(s);
    }
    let release = std::fs::read_to_string(proc_root.join("sys/kernel/osrelease")).ok()?;
    from_release(&release)
}

#[cfg(test)]
mod tests {
    use super::FairScheduler::{Cfs, Eevdf};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn release_table() {
        for (release, want) in [
            ("6.18.44-fc-v669\n", Some(Eevdf)),
            ("6.6.0", Some(Eevdf)),
            ("6.6-rc1", Some(Eevdf)),
            ("6.5.13-amd64", Some(Cfs)),
            ("5.15.0-91-generic", Some(Cfs)),
            ("5.19.0", Some(Cfs)),
            ("4.19.91-27.al7.x86_64", Some(Cfs)),
            ("7.0.1", Some(Eevdf)),
            ("10.2", Some(Eevdf)),
            ("6", None),
            ("", None),
            ("linux-6.8", None),
            ("6.x", None),
        ] {
            assert_eq!(from_release(release), want, "{release:?}");
        }
    }

    #[test]
    fn sched_features_table() {
        for (text, want) in [
            ("GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY\n", Some(Cfs)),
            ("PLACE_LAG PLACE_DEADLINE_INITIAL RUN_TO_PARITY\n", Some(Eevdf)),
            ("NO_PLACE_LAG NO_RUN_TO_PARITY WAKEUP_PREEMPTION\n", Some(Eevdf)),
            ("", None),
            ("  \n", None),
        ] {
            assert_eq!(from_sched_features(text), want, "{text:?}");
        }
    }

    #[test]
    fn detect_prefers_debugfs_and_falls_back_to_the_release() {
        let root = tempfile::tempdir().unwrap();
        let (proc_root, sys_root) = (root.path().join("proc"), root.path().join("sys"));
        assert_eq!(detect(&proc_root, &sys_root), None, "nothing to read");
        std::fs::create_dir_all(proc_root.join("sys/kernel")).unwrap();
        std::fs::write(proc_root.join("sys/kernel/osrelease"), "6.1.0-13-amd64\n").unwrap();
        assert_eq!(detect(&proc_root, &sys_root), Some(Cfs));
        std::fs::create_dir_all(sys_root.join("kernel/debug/sched")).unwrap();
        std::fs::write(sys_root.join("kernel/debug/sched/features"), "PLACE_LAG RUN_TO_PARITY\n")
            .unwrap();
        assert_eq!(detect(&proc_root, &sys_root), Some(Eevdf), "a backport shows in debugfs");
    }

    proptest! {
        /// Any `MAJOR.MINOR[.PATCH][-suffix]` parses, EEVDF exactly from 6.6.
        #[test]
        fn release_versions(major in 0u32..100, minor in 0u32..100, patch in 0u32..1000,
                            suffix in "(-[a-z0-9._]{0,12})?") {
            let release = format!("{major}.{minor}.{patch}{suffix}");
            let want = if (major, minor) >= (6, 6) { Eevdf } else { Cfs };
            prop_assert_eq!(from_release(&release), Some(want));
        }

        /// Arbitrary text never panics.
        #[test]
        fn arbitrary_text(s in "\\PC{0,40}") {
            let _ = from_release(&s);
            let _ = from_sched_features(&s);
        }
    }
}
