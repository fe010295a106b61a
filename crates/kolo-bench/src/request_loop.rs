//! The LS workload of `kolo bench interference`: a single-threaded server
//! that handles requests arriving at a given mean rate (steadily or in
//! bursts, [`Arrivals`]), each a fixed amount of CPU work, and records each
//! request's latency.
//!
//! Arrivals are open-loop: request k arrives at its scheduled time (steady:
//! `start + k / rate`) whether or not the previous one finished, and its latency runs from that arrival
//! to its completion. A request delayed by interference therefore also
//! delays the ones queued behind it, as in a real server — a closed loop
//! (next request when the last one ends) would hide exactly the delays
//! this benchmark is about.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::arrivals::Arrivals;

/// One request's CPU work: `iterations` rounds of a multiply-add chain
/// (each depends on the previous one, so the compiler cannot skip or
/// vectorise it).
pub(super) fn work(iterations: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15_u64);
    for _ in 0..iterations {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    }
    black_box(x)
}

/// The iterations of [`work`] that take `target` of CPU on this machine,
/// measured now.
///
/// Measured in this thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`), so
/// that other processes running meanwhile do not make the machine look
/// slower than it is, and only after a busy warm-up: a CPU that idled
/// before the benchmark starts at a low clock, and calibrating then would
/// make every request shorter than asked for (seen in CI: 1.4 ms requests
/// for a 2 ms target).
pub(super) fn calibrate(target: Duration) -> u64 {
    let warm_up_until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < warm_up_until {
        work(10_000);
    }
    let probe = 1_000_000;
    let fastest = (0..7)
        .map(|_| {
            let before = thread_cpu_time();
            work(probe);
            thread_cpu_time().saturating_sub(before)
        })
        .min()
        .expect("seven trials");
    let per_iteration = fastest.as_secs_f64().max(1e-9) / probe as f64;
    (target.as_secs_f64() / per_iteration).round().max(1.0) as u64
}

/// The CPU time this thread has run so far.
fn thread_cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The request loop's shape.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestLoop {
    /// Requests per second (the mean).
    pub rate: f64,
    /// [`work`] iterations per request.
    pub iterations: u64,
    /// When the requests arrive.
    pub arrivals: Arrivals,
}

impl RequestLoop {
    /// Serves requests for `warmup` (latencies discarded), calls
    /// `measuring(true)`, serves for `measure`, calls `measuring(false)`,
    /// and returns the measured requests' latencies in arrival order.
    pub fn run(
        &self,
        warmup: Duration,
        measure: Duration,
        mut measuring: impl FnMut(bool),
    ) -> Vec<Duration> {
        let start = Instant::now();
        let measured_from = start + warmup;
        let end = measured_from + measure;
        let mut latencies = Vec::with_capacity((measure.as_secs_f64() * self.rate) as usize + 1);
        let mut started = false;
        for offset in self.arrivals.schedule(self.rate) {
            let arrival = start + offset;
            if arrival >= end {
                break;
            }
            if !started && arrival >= measured_from {
                started = true;
                measuring(true);
            }
            let now = Instant::now();
            if arrival > now {
                std::thread::sleep(arrival - now);
            }
            work(self.iterations);
            if started {
                latencies.push(arrival.elapsed());
            }
        }
        measuring(false);
        latencies
    }
}

/// Moves the calling thread (only it, not its process) into the cgroup
/// directories `dirs` (one per v1 hierarchy) by writing its thread ID to
/// their `tasks` files.
pub(super) fn enter_cgroup(dirs: &[PathBuf]) -> std::io::Result<()> {
    // `/proc/thread-self` → `<pid>/task/<tid>`.
    let link = std::fs::read_link("/proc/thread-self")?;
    let tid = link
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other(format!("unexpected /proc/thread-self: {link:?}")))?
        .to_string();
    for dir in dirs {
        std::fs::write(dir.join("tasks"), &tid)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", dir.join("tasks").display())))?;
    }
    Ok(())
}

/// Latency percentiles of a run, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Percentiles {
    /// Requests measured.
    pub requests: usize,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest.
    pub max_us: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles (the smallest latency that at least q of
    /// the requests did not exceed). `None` for no requests.
    pub fn of(latencies: &[Duration]) -> Option<Percentiles> {
        if latencies.is_empty() {
            return None;
        }
        let mut us: Vec<f64> = latencies.iter().map(|d| d.as_nanos() as f64 / 1000.0).collect();
        us.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let r = (q * us.len() as f64).ceil() as usize;
            us[r.clamp(1, us.len()) - 1]
        };
        Some(Percentiles {
            requests: us.len(),
            mean_us: us.iter().sum::<f64>() / us.len() as f64,
            p50_us: rank(0.5),
            p99_us: rank(0.99),
            p999_us: rank(0.999),
            max_us: us[us.len() - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&u| Duration::from_micros(u)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        // 1..=1000 µs: p50 is the 500th, p99 the 990th, p99.9 the 999th.
        let all: Vec<u64> = (1..=1000).rev().collect();
        let p = Percentiles::of(&us(&all)).unwrap();
        assert_eq!((p.p50_us, p.p99_us, p.p999_us, p.max_us), (500.0, 990.0, 999.0, 1000.0));
        assert_eq!(p.requests, 1000);
        assert!((p.mean_us - 500.5).abs() < 1e-9);
        // One request: every percentile is it.
        let one = Percentiles::of(&us(&[42])).unwrap();
        assert_eq!((one.p50_us, one.p99_us, one.p999_us), (42.0, 42.0, 42.0));
        // Ten requests: p99 and p99.9 are the slowest.
        let ten = Percentiles::of(&us(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 100])).unwrap();
        assert_eq!((ten.p50_us, ten.p99_us, ten.p999_us), (5.0, 100.0, 100.0));
        assert_eq!(Percentiles::of(&[]), None);
    }

    #[test]
    fn work_scales_with_iterations_and_is_not_optimised_away() {
        assert_ne!(work(1), work(2));
        let time = |n| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    work(n);
                    t.elapsed()
                })
                .min()
                .unwrap()
        };
        // Ten times the iterations take clearly more time (not exactly
        // ten times: timer and scheduling noise).
        assert!(time(2_000_000) > time(200_000) * 3);
    }

    #[test]
    fn open_loop_serves_every_arrival_of_the_window() {
        let lp = RequestLoop { rate: 1000.0, iterations: 10, arrivals: Arrivals::Steady };
        let mut calls = Vec::new();
        let lat = lp.run(Duration::from_millis(20), Duration::from_millis(50), |m| calls.push(m));
        assert_eq!(calls, vec![true, false]);
        // 50 ms at 1000/s: 50 arrivals (±1 for the window edges).
        assert!((49..=51).contains(&lat.len()), "{} requests", lat.len());
    }
}
