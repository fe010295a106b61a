//! One measured window of `kolo bench interference`, the same in both
//! modes: the request loop runs in a thread moved into the LS container's
//! cgroups, and the LS and BE cgroups' CPU time is read at the window's
//! edges.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kolo_agent::cgroup::CgroupVersion;
use kolo_agent::cgroup::reader::parse_cpu_usage;

use crate::BoxError;
use crate::request_loop::{self, Percentiles, RequestLoop};

/// The figures of one window.
#[derive(Debug)]
pub(crate) struct Window {
    /// The measured requests' latencies.
    pub latency: Percentiles,
    /// CPU the LS cgroup used, cores.
    pub ls_cores: f64,
    /// CPU the BE cgroups used, cores.
    pub be_cores: f64,
}

/// Serves `lp` for `warmup` and then `seconds` in a new thread moved into
/// `ls_dirs` (the LS container's directory in each v1 hierarchy);
/// `usage` gives the LS and BE cgroups' CPU time (ns) and is read when
/// the measured part starts and ends. The thread ends with the window, so
/// nothing of this process stays in the LS cgroups afterwards.
pub(crate) fn measure_window(
    lp: &RequestLoop,
    warmup: Duration,
    seconds: Duration,
    ls_dirs: &[PathBuf],
    usage: impl Fn() -> Result<(u64, u64), BoxError> + Sync,
) -> Result<Window, BoxError> {
    let (latencies, marks) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                request_loop::enter_cgroup(ls_dirs)?;
                let mut marks = Vec::new();
                let latencies = lp.run(warmup, seconds, |_| marks.push((Instant::now(), usage())));
                Ok::<_, BoxError>((latencies, marks))
            })
            .join()
            .map_err(|_| -> BoxError { "the request loop panicked".into() })?
    })?;
    let [(t0, u0), (t1, u1)] =
        <[_; 2]>::try_from(marks).map_err(|_| "the request loop did not mark its window")?;
    let ((ls0, be0), (ls1, be1)) = (u0?, u1?);
    let secs = t1.duration_since(t0).as_secs_f64();
    let cores = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e9 / secs;
    Ok(Window {
        latency: Percentiles::of(&latencies).ok_or("no request was measured")?,
        ls_cores: cores(ls0, ls1),
        be_cores: cores(be0, be1),
    })
}

/// A v1 `cpuacct.usage` file's CPU time, ns.
pub(crate) fn read_usage(path: &std::path::Path) -> Result<u64, BoxError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(parse_cpu_usage(CgroupVersion::V1, text.trim())
        .map_err(|e| format!("{}: {e}", path.display()))?)
}
