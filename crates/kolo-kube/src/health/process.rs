//! The process's own footprint in Prometheus' standard names, read from
//! `/proc/self` at each scrape: `process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_open_fds`, `process_threads`
//! and `process_start_time_seconds`. Every kolo component exports them
//! (the agent's own CPU and memory on each node, the others' leaks).

use std::fmt::Write;

/// Clock ticks per second of `/proc` times (`USER_HZ`, fixed at 100 in
/// Linux's ABI on every architecture kolo builds for).
const USER_HZ: f64 = 100.0;

/// What `/proc/self` says, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessStats {
    /// User plus system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident set size, bytes.
    pub resident_bytes: u64,
    /// Threads.
    pub threads: u64,
    /// Start time since boot, seconds.
    pub started_after_boot_seconds: f64,
}

/// Parses `/proc/<pid>/stat` (utime, stime, num_threads, starttime) and
/// the `VmRSS` line of `/proc/<pid>/status`; `None` when malformed.
pub fn parse(stat: &str, status: &str) -> Option<ProcessStats> {
    // The command name is in parentheses and may hold spaces: the fields
    // after it start at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // `rest` starts at field 3 (state): field n is fields[n - 3].
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let (utime, stime, threads, start) = (field(14)?, field(15)?, field(20)?, field(22)?);
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())?;
    Some(ProcessStats {
        cpu_seconds: (utime + stime) as f64 / USER_HZ,
        resident_bytes: rss_kb * 1024,
        threads,
        started_after_boot_seconds: start as f64 / USER_HZ,
    })
}

/// Appends the process metrics as OpenMetrics text (nothing when `/proc`
/// cannot be read).
pub fn encode(text: &mut String) {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let Some(stats) =
        read("/proc/self/stat").zip(read("/proc/self/status")).and_then(|(a, b)| parse(&a, &b))
    else {
        return;
    };
    let boot = read("/proc/stat").and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse::<f64>().ok())
    });
    let fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        let sample = if kind == "counter" { format!("{name}_total") } else { name.to_string() };
        let _ = write!(text, "# HELP {name} {help}.\n# TYPE {name} {kind}\n{sample} {value}\n");
    };
    metric(
        "process_cpu_seconds",
        "counter",
        "User and system CPU time spent",
        stats.cpu_seconds.to_string(),
    );
    metric(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size",
        stats.resident_bytes.to_string(),
    );
    metric("process_threads", "gauge", "Threads", stats.threads.to_string());
    if let Some(fds) = fds {
        metric("process_open_fds", "gauge", "Open file descriptors", fds.to_string());
    }
    if let Some(boot) = boot {
        let start = boot + stats.started_after_boot_seconds;
        metric(
            "process_start_time_seconds",
            "gauge",
            "Start time since the Unix epoch",
            start.to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tkolo\nVmRSS:\t   20480 kB\nThreads:\t7\n";

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A command name with spaces and a ')' of its own.
        let stat = "42 (kolo (a) b) S 1 42 42 0 -1 4194560 500 0 0 0 250 150 0 0 20 0 7 0 12345 \
                    100000 5000 18446744073709551615";
        let s = parse(stat, STATUS).unwrap();
        assert_eq!(s.cpu_seconds, 4.0, "(250 + 150) ticks / 100");
        assert_eq!(s.threads, 7);
        assert_eq!(s.started_after_boot_seconds, 123.45);
        assert_eq!(s.resident_bytes, 20 << 20);
    }

    #[test]
    fn malformed_input_is_none() {
        for (stat, status) in [
            ("", STATUS),
            ("1 (x) S 1", STATUS),
            ("42 (k) S 1 42 42 0 -1 0 0 0 0 0 1 1 0 0 20 0 7 0 1 1 1", "Name: x\n"),
        ] {
            assert_eq!(parse(stat, status), None, "{stat:?}");
        }
    }

    #[test]
    fn this_process_reads() {
        let mut text = String::new();
        encode(&mut text);
        for name in
            ["process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds "]
        {
            assert!(text.lines().any(|l| l.starts_with(name)), "{name} in\n{text}");
        }
    }
}
