//! A process's CPU time from `/proc`, as the benchmarks read it for the
//! processes they measure (the agent, a scheduler, the API server).

use std::process::Command as Process;
use std::sync::OnceLock;

use crate::BoxError;

/// User + system CPU time of a process (all threads), seconds.
pub fn process_cpu_seconds(pid: u32) -> Result<f64, BoxError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("process {pid} is gone: {e}"))?;
    // Fields after the `(comm)`, which may contain spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("malformed /proc/pid/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13
    // after the state field, which is the first after `)`.
    let field = |i: usize| fields.get(i).ok_or("short /proc/pid/stat");
    let ticks = field(11)?.parse::<u64>()? + field(12)?.parse::<u64>()?;
    Ok(ticks as f64 / clock_ticks_per_second() as f64)
}

/// `getconf CLK_TCK` (100 on Linux unless the kernel says otherwise), asked
/// once.
fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Process::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn cpu_of_this_process_is_read() {
        let start = process_cpu_seconds(std::process::id()).unwrap();
        // Spin until 0.1 s of CPU shows, however busy the machine (a
        // deadline only against a reading that never moves).
        let (mut x, t) = (0u64, Instant::now());
        let mut spent = 0.0;
        while spent < 0.1 && t.elapsed() < Duration::from_secs(60) {
            for _ in 0..1_000_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            spent = process_cpu_seconds(std::process::id()).unwrap() - start;
        }
        assert!(spent >= 0.1, "{spent} s of CPU after spinning {:?} ({x})", t.elapsed());
        assert!(process_cpu_seconds(u32::MAX).is_err(), "no such process");
    }
}
