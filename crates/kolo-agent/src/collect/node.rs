//! Node CPU and memory from `/proc` (and per-NUMA figures from sysfs), as
//! Koordinator's NodeResourceCollector computes them (spec §1.3):
//!
//! * CPU ticks = user + nice + system + irq + softirq of the `cpu` line of
//!   `<proc>/stat` (idle and iowait excluded, steal and guest ignored);
//!   cores = Δticks / (Δt × USER_HZ). The first round only records the
//!   baseline and yields no sample.
//! * Memory = (MemTotal − MemAvailable) × 1024 from `<proc>/meminfo`; with
//!   page cache = (MemTotal − MemFree) × 1024.
//! * Per NUMA node (when [`NodeCollector::set_numa_nodes`] was given the
//!   topology): the per-CPU `cpuN` tick deltas of the node's CPUs over the
//!   same period (a CPU whose ticks went backwards, e.g. after hotplug, is
//!   skipped); memory = max(0, MemTotal − (MemFree + Active(file) +
//!   Inactive(file) + SReclaimable)) × 1024 from
//!   `<sys>/devices/system/node/nodeN/meminfo`, which has no MemAvailable.
//!
//! Deliberate differences from the reference: CPU is capped at the number of
//! `cpuN` lines (tick accounting against a wall-clock Δt can overshoot by a
//! tick or two per CPU), a Δt that is zero or negative (the wall clock went
//! back) restarts from a new baseline instead of producing a negative or
//! infinite rate, and so does a `cpu` tick total that went backwards.
//!
//! Each round reads two files (plus one per NUMA node) into one reused
//! buffer and parses them in place; after the first two rounds (which size
//! the buffer and the two per-CPU tick vectors) nothing is allocated unless
//! an error is reported.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use kolo_core::clock::Timestamp;
use kolo_core::cpuset::MAX_CPU_ID;

use super::topology::NumaNode;
use crate::sample::NodeSample;

/// `USER_HZ`: the unit of `/proc/stat` ticks. 100 on every architecture
/// Kubernetes nodes run on (x86, arm64, ppc64le, s390x, riscv64); the agent
/// cannot ask `sysconf(_SC_CLK_TCK)` without `unsafe`, so it is a setting.
pub const DEFAULT_USER_HZ: u32 = 100;

/// Reading or parsing a `/proc` or sysfs file failed.
pub type NodeCollectError = super::FileError;

/// One NUMA node's usage over the last round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumaSample {
    /// NUMA node id.
    pub node: u32,
    /// CPU in use on its CPUs, cores.
    pub cpu_cores: f64,
    /// Memory in use (without reclaimable page cache), bytes.
    pub memory_bytes: u64,
}

/// The fields of a `meminfo` file the agent uses, in KiB. Works for
/// `/proc/meminfo` and for the NUMA `nodeN/meminfo` (whose lines carry a
/// `Node N ` prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total_kib: u64,
    /// `MemFree`.
    pub free_kib: Option<u64>,
    /// `MemAvailable` (absent from NUMA meminfo and before Linux 3.14).
    pub available_kib: Option<u64>,
    /// `Active(file)`.
    pub active_file_kib: Option<u64>,
    /// `Inactive(file)`.
    pub inactive_file_kib: Option<u64>,
    /// `SReclaimable`.
    pub sreclaimable_kib: Option<u64>,
}

impl MemInfo {
    /// NUMA-style usage: MemTotal − (MemFree + Active(file) + Inactive(file)
    /// + SReclaimable), at least 0, bytes. Missing fields count as 0.
    pub fn numa_usage_bytes(&self) -> u64 {
        let available =
            [self.free_kib, self.active_file_kib, self.inactive_file_kib, self.sreclaimable_kib]
                .iter()
                .map(|v| v.unwrap_or(0))
                .fold(0u64, u64::saturating_add);
        self.total_kib.saturating_sub(available).saturating_mul(1024)
    }
}

/// Parses a `meminfo` file. Lines the agent does not use are skipped
/// unread; a used line whose value is not `<digits> kB` is an error naming
/// `path` and the line. `MemTotal` is required.
pub fn parse_meminfo(text: &[u8], path: &Path) -> Result<MemInfo, NodeCollectError> {
    let mut info = MemInfo::default();
    let mut total = None;
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        let mut line = line;
        if let Some(rest) = line.strip_prefix(b"Node ") {
            // `Node 0 MemTotal: ...`: skip the node number.
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            line = rest[digits..].trim_ascii_start();
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let slot = match &line[..colon] {
            b"MemTotal" => &mut total,
            b"MemFree" => &mut info.free_kib,
            b"MemAvailable" => &mut info.available_kib,
            b"Active(file)" => &mut info.active_file_kib,
            b"Inactive(file)" => &mut info.inactive_file_kib,
            b"SReclaimable" => &mut info.sreclaimable_kib,
            _ => continue,
        };
        let value = line[colon + 1..].trim_ascii();
        let value = value.strip_suffix(b"kB").map_or(value, <[u8]>::trim_ascii_end);
        *slot = Some(parse_u64(value).ok_or_else(|| NodeCollectError::Parse {
            path: path.to_path_buf(),
            line: index + 1,
            message: format!(
                "{} is not a size in kB",
                quote(&line[..line.len().min(colon + 1 + 64)])
            ),
        })?);
    }
    info.total_kib = total.ok_or_else(|| NodeCollectError::Parse {
        path: path.to_path_buf(),
        line: 0,
        message: "no MemTotal line".into(),
    })?;
    Ok(info)
}

/// Decimal digits to u64; `None` for anything else (empty, sign, overflow).
fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

fn quote(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

/// The busy ticks of one `cpu` / `cpuN` line (everything after the name):
/// user + nice + system + irq + softirq.
fn busy_ticks(fields: &[u8]) -> Option<u64> {
    let mut values = fields.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty());
    let mut v = [0u64; 7];
    for slot in &mut v {
        *slot = parse_u64(values.next()?)?;
    }
    let [user, nice, system, _idle, _iowait, irq, softirq] = v;
    Some(
        user.saturating_add(nice)
            .saturating_add(system)
            .saturating_add(irq)
            .saturating_add(softirq),
    )
}

/// The node's capacity from `/proc`: the number of CPUs (`cpuN` lines of
/// `stat`) and `MemTotal` in bytes, read with the collector's own parsers.
pub fn node_capacity(proc_root: &Path) -> Result<(usize, u64), NodeCollectError> {
    let read = |name: &str| {
        let path = proc_root.join(name);
        std::fs::read(&path)
            .map(|text| (text, path.clone()))
            .map_err(|source| NodeCollectError::Io { path, source })
    };
    let (stat, stat_path) = read("stat")?;
    let mut ticks = Ticks::default();
    parse_stat(&stat, &stat_path, &mut ticks)?;
    let (meminfo, meminfo_path) = read("meminfo")?;
    let memory = parse_meminfo(&meminfo, &meminfo_path)?;
    Ok((ticks.cpus, memory.total_kib.saturating_mul(1024)))
}

/// The `cpu` lines of one `/proc/stat` reading.
#[derive(Debug, Default)]
pub struct Ticks {
    /// Node total busy ticks.
    pub total: u64,
    /// Per-CPU busy ticks, indexed by CPU id (`None`: no line, e.g. offline).
    pub per_cpu: Vec<Option<u64>>,
    /// The number of `cpuN` lines.
    pub cpus: usize,
}

/// Parses the `cpu` lines of `/proc/stat` into `out` (reusing its vector).
/// `path` only names the file in errors. Public for the fuzz target.
pub fn parse_stat(text: &[u8], path: &Path, out: &mut Ticks) -> Result<(), NodeCollectError> {
    let err = |line: usize, message: String| NodeCollectError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    out.per_cpu.iter_mut().for_each(|t| *t = None);
    out.cpus = 0;
    let mut total = None;
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        // The kernel writes the `cpu` lines first; stop at the first other.
        let Some(rest) = line.strip_prefix(b"cpu") else { break };
        let name_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (id, fields) = rest.split_at(name_len);
        if !fields.first().is_some_and(u8::is_ascii_whitespace) {
            return Err(err(index + 1, format!("{} is not a cpu line", quote(cut(line)))));
        }
        let ticks = busy_ticks(fields).ok_or_else(|| {
            err(index + 1, format!("{} does not have 7 tick counts", quote(cut(line))))
        })?;
        if id.is_empty() {
            if total.replace(ticks).is_some() {
                return Err(err(index + 1, "a second `cpu` line".into()));
            }
            continue;
        }
        let cpu = parse_u64(id)
            .filter(|&n| n <= u64::from(MAX_CPU_ID))
            .ok_or_else(|| err(index + 1, format!("CPU id {} out of range", quote(id))))?
            as usize;
        if cpu >= out.per_cpu.len() {
            out.per_cpu.resize(cpu + 1, None);
        }
        out.per_cpu[cpu] = Some(ticks);
        out.cpus += 1;
    }
    out.total = total.ok_or_else(|| err(0, "no `cpu` line".into()))?;
    Ok(())
}

fn cut(line: &[u8]) -> &[u8] {
    &line[..line.len().min(80)]
}

/// Reads a whole file into `buf` (cleared first).
fn read_into(path: &Path, buf: &mut Vec<u8>) -> Result<(), NodeCollectError> {
    buf.clear();
    File::open(path)
        .and_then(|mut f| f.read_to_end(buf))
        .map(drop)
        .map_err(|source| NodeCollectError::Io { path: path.to_path_buf(), source })
}

/// A NUMA node being collected.
#[derive(Debug)]
struct NumaTarget {
    id: u32,
    cpus: Vec<u32>,
    meminfo: PathBuf,
}

/// Collects [`NodeSample`]s (and optionally per-NUMA figures) from a proc
/// root and a sys root.
#[derive(Debug)]
pub struct NodeCollector {
    stat: PathBuf,
    meminfo: PathBuf,
    sys_root: PathBuf,
    user_hz: f64,
    buf: Vec<u8>,
    prev: Option<(Timestamp, Ticks)>,
    cur: Ticks,
    numa: Vec<NumaTarget>,
    numa_out: Vec<NumaSample>,
    numa_failing: bool,
}

impl NodeCollector {
    /// A collector reading `<proc_root>/stat`, `<proc_root>/meminfo` and
    /// (for NUMA) `<sys_root>/devices/system/node/nodeN/meminfo`.
    pub fn new(proc_root: &Path, sys_root: &Path) -> NodeCollector {
        NodeCollector {
            stat: proc_root.join("stat"),
            meminfo: proc_root.join("meminfo"),
            sys_root: sys_root.to_path_buf(),
            user_hz: f64::from(DEFAULT_USER_HZ),
            buf: Vec::with_capacity(16 * 1024),
            prev: None,
            cur: Ticks::default(),
            numa: Vec::new(),
            numa_out: Vec::new(),
            numa_failing: false,
        }
    }

    /// Sets `USER_HZ` (default [`DEFAULT_USER_HZ`]; 0 is taken as the default).
    #[must_use]
    pub fn with_user_hz(mut self, user_hz: u32) -> NodeCollector {
        self.user_hz = f64::from(if user_hz == 0 { DEFAULT_USER_HZ } else { user_hz });
        self
    }

    /// Enables per-NUMA figures for these nodes (from
    /// [`CpuTopology`](super::topology::CpuTopology)); an empty slice
    /// disables them. A single node is collected too (it equals the node
    /// figures but keeps consumers uniform).
    pub fn set_numa_nodes(&mut self, nodes: &[NumaNode]) {
        let dir = self.sys_root.join("devices/system/node");
        self.numa = nodes
            .iter()
            .map(|n| NumaTarget {
                id: n.id,
                cpus: n.cpus.iter().collect(),
                meminfo: dir.join(format!("node{}/meminfo", n.id)),
            })
            .collect();
        self.numa_out.clear();
    }

    /// One round at time `at` (the caller's clock; Δt between rounds comes
    /// from it). `Ok(None)` on the first round, and after a reset (the clock
    /// or the tick counter went backwards), which only record the baseline.
    ///
    /// On error the baseline is kept, so the next good round averages over
    /// the whole gap.
    pub fn collect(&mut self, at: Timestamp) -> Result<Option<NodeSample>, NodeCollectError> {
        read_into(&self.stat, &mut self.buf)?;
        parse_stat(&self.buf, &self.stat, &mut self.cur)?;
        read_into(&self.meminfo, &mut self.buf)?;
        let mem = parse_meminfo(&self.buf, &self.meminfo)?;
        let available = mem.available_kib.ok_or_else(|| NodeCollectError::Parse {
            path: self.meminfo.clone(),
            line: 0,
            message: "no MemAvailable line (Linux 3.14 or later is required)".into(),
        })?;
        let free = mem.free_kib.ok_or_else(|| NodeCollectError::Parse {
            path: self.meminfo.clone(),
            line: 0,
            message: "no MemFree line".into(),
        })?;

        let period = match &self.prev {
            Some((prev_at, prev)) => {
                let dt_ns = at.as_nanosecond() - prev_at.as_nanosecond();
                if dt_ns <= 0 || self.cur.total < prev.total {
                    tracing::debug!(
                        dt_ns,
                        "node collector: clock or ticks went back; new baseline"
                    );
                    None
                } else {
                    Some((dt_ns as f64 / 1e9 * self.user_hz, self.cur.total - prev.total))
                }
            }
            None => None,
        };
        let sample = period.map(|(period, busy)| {
            let cap = if self.cur.cpus > 0 { self.cur.cpus as f64 } else { f64::INFINITY };
            NodeSample {
                at,
                cpu_cores: (busy as f64 / period).min(cap),
                memory_bytes: mem.total_kib.saturating_sub(available).saturating_mul(1024),
                memory_with_cache_bytes: mem.total_kib.saturating_sub(free).saturating_mul(1024),
            }
        });
        self.numa_out.clear();
        if let Some((period, _)) = period {
            self.collect_numa(period);
        }
        // The current reading becomes the baseline; the old baseline's
        // vector is reused for the next reading.
        let prev = self.prev.replace((at, std::mem::take(&mut self.cur)));
        if let Some((_, ticks)) = prev {
            self.cur = ticks;
        }
        Ok(sample)
    }

    /// Per-NUMA figures of the last round that returned a sample (empty
    /// when NUMA is not enabled, or when a NUMA `meminfo` could not be read
    /// that round — logged once per failure streak).
    pub fn numa(&self) -> &[NumaSample] {
        &self.numa_out
    }

    fn collect_numa(&mut self, period: f64) {
        let Some((_, prev)) = &self.prev else { return };
        for target in &self.numa {
            let mut delta = 0u64;
            let mut cpus = 0usize;
            for &cpu in &target.cpus {
                let cur = self.cur.per_cpu.get(cpu as usize).copied().flatten();
                let old = prev.per_cpu.get(cpu as usize).copied().flatten();
                if let (Some(cur), Some(old)) = (cur, old) {
                    cpus += 1;
                    // A CPU whose ticks went backwards is skipped.
                    if cur >= old {
                        delta = delta.saturating_add(cur - old);
                    }
                }
            }
            let memory = read_into(&target.meminfo, &mut self.buf)
                .and_then(|()| parse_meminfo(&self.buf, &target.meminfo));
            let memory = match memory {
                Ok(info) => info.numa_usage_bytes(),
                Err(e) => {
                    if !self.numa_failing {
                        tracing::warn!(error = %e, "per-NUMA usage not collected");
                    }
                    self.numa_failing = true;
                    self.numa_out.clear();
                    return;
                }
            };
            self.numa_out.push(NumaSample {
                node: target.id,
                cpu_cores: (delta as f64 / period).min(cpus as f64),
                memory_bytes: memory,
            });
        }
        self.numa_failing = false;
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::collect::topology::CpuSet;
    use crate::collect::topology::tests::put;

    fn ts(secs: f64) -> Timestamp {
        Timestamp::from_nanosecond((secs * 1e9) as i128).unwrap()
    }

    const MEMINFO: &str = "MemTotal:       16000000 kB\nMemFree:         4000000 kB\n\
        MemAvailable:   10000000 kB\nBuffers:          100000 kB\nCached:          5000000 kB\n\
        Active(file):    1000000 kB\nHugePages_Total:       0\n";

    /// `cpu` line with the given user/nice/system/idle/iowait/irq/softirq/steal.
    fn stat(total: [u64; 8], cpus: &[[u64; 8]]) -> String {
        let line = |name: &str, v: &[u64; 8]| {
            let v: Vec<String> = v.iter().map(u64::to_string).collect();
            format!("{name} {} 0 0\n", v.join(" "))
        };
        let mut s = line("cpu ", &total);
        for (i, c) in cpus.iter().enumerate() {
            s += &line(&format!("cpu{i}"), c);
        }
        s + "intr 123 0 0\nctxt 4567\nbtime 1700000000\n"
    }

    #[test]
    fn exact_cores_and_memory_on_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "meminfo", MEMINFO);
        put(root, "stat", &stat([100, 10, 50, 9999, 500, 5, 5, 77], &[[0; 8]; 4]));
        let mut c = NodeCollector::new(root, root);
        assert_eq!(c.collect(ts(1000.0)).unwrap(), None, "first round = baseline only");
        // 2 s later: busy +350 ticks (user 200, nice 40, system 80, irq 20,
        // softirq 10); idle, iowait and steal grow but do not count.
        put(root, "stat", &stat([300, 50, 130, 19999, 900, 25, 15, 500], &[[0; 8]; 4]));
        let s = c.collect(ts(1002.0)).unwrap().unwrap();
        assert_eq!(s.at, ts(1002.0));
        assert!((s.cpu_cores - 1.75).abs() < 1e-9, "{s:?}");
        assert_eq!(s.memory_bytes, 6_000_000 * 1024);
        assert_eq!(s.memory_with_cache_bytes, 12_000_000 * 1024);
        assert!(c.numa().is_empty());
        // Half a second later, +100 ticks = 2 cores.
        put(root, "stat", &stat([400, 50, 130, 19999, 900, 25, 15, 500], &[[0; 8]; 4]));
        let s = c.collect(ts(1002.5)).unwrap().unwrap();
        assert!((s.cpu_cores - 2.0).abs() < 1e-9, "{s:?}");
        // USER_HZ 250: the same ticks are fewer seconds.
        let mut c = NodeCollector::new(root, root).with_user_hz(250);
        c.collect(ts(0.0)).unwrap();
        put(root, "stat", &stat([650, 50, 130, 19999, 900, 25, 15, 500], &[[0; 8]; 4]));
        let s = c.collect(ts(1.0)).unwrap().unwrap();
        assert!((s.cpu_cores - 1.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn cpu_is_capped_and_resets_on_backwards_time_or_ticks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "meminfo", MEMINFO);
        put(root, "stat", &stat([0; 8], &[[0; 8]; 2]));
        let mut c = NodeCollector::new(root, root);
        c.collect(ts(10.0)).unwrap();
        // 2 CPUs, 1 s, 203 ticks: capped at 2 cores.
        put(root, "stat", &stat([203, 0, 0, 0, 0, 0, 0, 0], &[[0; 8]; 2]));
        assert_eq!(c.collect(ts(11.0)).unwrap().unwrap().cpu_cores, 2.0);
        // The clock goes back: new baseline, no sample.
        put(root, "stat", &stat([250, 0, 0, 0, 0, 0, 0, 0], &[[0; 8]; 2]));
        assert_eq!(c.collect(ts(9.0)).unwrap(), None);
        // Same instant: no sample either.
        assert_eq!(c.collect(ts(9.0)).unwrap(), None);
        put(root, "stat", &stat([300, 0, 0, 0, 0, 0, 0, 0], &[[0; 8]; 2]));
        let s = c.collect(ts(10.0)).unwrap().unwrap();
        assert!((s.cpu_cores - 0.5).abs() < 1e-9, "{s:?}");
        // Ticks go back (counter reset): new baseline.
        put(root, "stat", &stat([10, 0, 0, 0, 0, 0, 0, 0], &[[0; 8]; 2]));
        assert_eq!(c.collect(ts(11.0)).unwrap(), None);
        put(root, "stat", &stat([60, 0, 0, 0, 0, 0, 0, 0], &[[0; 8]; 2]));
        let s = c.collect(ts(12.0)).unwrap().unwrap();
        assert!((s.cpu_cores - 0.5).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn errors_keep_the_baseline_and_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut c = NodeCollector::new(root, root);
        let e = c.collect(ts(0.0)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("reading {}", root.join("stat").display())), "{e}");

        put(root, "stat", &stat([100, 0, 0, 0, 0, 0, 0, 0], &[]));
        put(root, "meminfo", MEMINFO);
        assert_eq!(c.collect(ts(0.0)).unwrap(), None);
        // A broken meminfo: error, baseline kept.
        put(root, "stat", &stat([150, 0, 0, 0, 0, 0, 0, 0], &[]));
        put(root, "meminfo", "MemTotal: 100 kB\nMemFree: many kB\n");
        let e = c.collect(ts(1.0)).unwrap_err().to_string();
        assert!(e.contains("meminfo: line 2: \"MemFree: many kB\" is not a size in kB"), "{e}");
        put(root, "meminfo", "MemTotal: 100 kB\nMemFree: 10 kB\n");
        let e = c.collect(ts(1.0)).unwrap_err().to_string();
        assert!(e.contains("no MemAvailable"), "{e}");
        put(root, "meminfo", MEMINFO);
        // Averaged over the 2 s since the baseline; no cpuN lines: uncapped.
        put(root, "stat", &stat([400, 0, 0, 0, 0, 0, 0, 0], &[]));
        let s = c.collect(ts(2.0)).unwrap().unwrap();
        assert!((s.cpu_cores - 1.5).abs() < 1e-9, "{s:?}");

        let bad_stats = [
            ("", "line 0: no `cpu` line"),
            ("intr 1 2\n", "line 0: no `cpu` line"),
            ("cpu  1 2 3 4 5 6\n", "line 1: \"cpu  1 2 3 4 5 6\" does not have 7 tick counts"),
            ("cpu  1 2 3 4 5 6 x\n", "does not have 7 tick counts"),
            (
                "cpu  1 2 3 4 5 6 7\ncpux 1 2 3 4 5 6 7\n",
                "line 2: \"cpux 1 2 3 4 5 6 7\" is not a cpu line",
            ),
            ("cpu  1 2 3 4 5 6 7\ncpu  1 2 3 4 5 6 7\n", "line 2: a second `cpu` line"),
            (
                "cpu  1 2 3 4 5 6 7\ncpu99999999 1 2 3 4 5 6 7\n",
                "line 2: CPU id \"99999999\" out of range",
            ),
            ("cpu  1 2 3 4 5 6 99999999999999999999\n", "does not have 7 tick counts"),
        ];
        for (text, needle) in bad_stats {
            put(root, "stat", text);
            let e = c.collect(ts(3.0)).unwrap_err().to_string();
            assert!(e.contains("stat: line ") && e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn meminfo_parser() {
        let p = Path::new("meminfo");
        let m = parse_meminfo(MEMINFO.as_bytes(), p).unwrap();
        assert_eq!(
            m,
            MemInfo {
                total_kib: 16_000_000,
                free_kib: Some(4_000_000),
                available_kib: Some(10_000_000),
                active_file_kib: Some(1_000_000),
                inactive_file_kib: None,
                sreclaimable_kib: None,
            }
        );
        let numa = "Node 1 MemTotal:       1000 kB\nNode 1 MemFree:         100 kB\n\
            Node 1 MemUsed:         900 kB\nNode 1 Active(file):     200 kB\n\
            Node 1 Inactive(file):   300 kB\nNode 1 SReclaimable:    50 kB\nNode 1 HugePages_Total:     0\n";
        let m = parse_meminfo(numa.as_bytes(), p).unwrap();
        assert_eq!(m.numa_usage_bytes(), 350 * 1024);
        // Available above total: 0, not an underflow.
        let m = parse_meminfo(b"MemTotal: 10 kB\nMemFree: 20 kB\n", p).unwrap();
        assert_eq!(m.numa_usage_bytes(), 0);
        assert!(
            parse_meminfo(b"MemFree: 1 kB\n", p).unwrap_err().to_string().contains("no MemTotal")
        );
        assert!(parse_meminfo(b"MemTotal: -1 kB\n", p).is_err());
        assert!(parse_meminfo(b"MemTotal: kB\n", p).is_err());
        // Lines it does not use are not validated.
        assert!(parse_meminfo(b"MemTotal: 1 kB\nWeird: ???\nno colon here\n", p).is_ok());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_proc_text_never_panics(text in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = parse_meminfo(&text, Path::new("m"));
            let mut t = Ticks::default();
            let _ = parse_stat(&text, Path::new("s"), &mut t);
        }

        #[test]
        fn stat_like_text_never_panics(text in "(cpu|[0-9]{1,22}| |\n|intr){0,40}") {
            let mut t = Ticks::default();
            let _ = parse_stat(text.as_bytes(), Path::new("s"), &mut t);
        }
    }

    #[test]
    fn per_numa_cpu_and_memory_on_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "meminfo", MEMINFO);
        let node = |id: u32, total: u64, free: u64| {
            put(
                root,
                &format!("devices/system/node/node{id}/meminfo"),
                &format!(
                    "Node {id} MemTotal: {total} kB\nNode {id} MemFree: {free} kB\n\
                     Node {id} Active(file): 10 kB\nNode {id} Inactive(file): 20 kB\n\
                     Node {id} SReclaimable: 30 kB\n"
                ),
            )
        };
        node(0, 1000, 100);
        node(1, 2000, 1500);
        let busy = |t: u64| [t, 0, 0, 0, 0, 0, 0, 0];
        put(root, "stat", &stat(busy(0), &[busy(0), busy(0), busy(50), busy(0)]));
        let mut c = NodeCollector::new(root, root);
        c.set_numa_nodes(&[
            NumaNode { id: 0, cpus: CpuSet::parse("0-1").unwrap(), memory_total_bytes: None },
            NumaNode { id: 1, cpus: CpuSet::parse("2-3").unwrap(), memory_total_bytes: None },
        ]);
        c.collect(ts(0.0)).unwrap();
        assert!(c.numa().is_empty(), "first round: nothing");
        // cpu0 +100, cpu1 +50, cpu2 went back (hotplug: skipped), cpu3 +30.
        put(root, "stat", &stat(busy(180), &[busy(100), busy(50), busy(10), busy(30)]));
        c.collect(ts(1.0)).unwrap().unwrap();
        assert_eq!(
            c.numa(),
            &[
                NumaSample { node: 0, cpu_cores: 1.5, memory_bytes: (1000 - 160) * 1024 },
                NumaSample { node: 1, cpu_cores: 0.3, memory_bytes: (2000 - 1560) * 1024 },
            ]
        );
        // A NUMA meminfo disappears: node sample still produced, NUMA empty.
        std::fs::remove_file(root.join("devices/system/node/node1/meminfo")).unwrap();
        put(root, "stat", &stat(busy(200), &[busy(100), busy(50), busy(10), busy(50)]));
        let s = c.collect(ts(2.0)).unwrap().unwrap();
        assert!((s.cpu_cores - 0.2).abs() < 1e-9);
        assert!(c.numa().is_empty());
        node(1, 2000, 1500);
        put(root, "stat", &stat(busy(200), &[busy(100), busy(50), busy(10), busy(50)]));
        c.collect(ts(3.0)).unwrap().unwrap();
        assert_eq!(c.numa().len(), 2);
        c.set_numa_nodes(&[]);
        c.collect(ts(4.0)).unwrap().unwrap();
        assert!(c.numa().is_empty());
    }

    fn real_mem_total() -> u64 {
        let text = std::fs::read("/proc/meminfo").unwrap();
        parse_meminfo(&text, Path::new("/proc/meminfo")).unwrap().total_kib * 1024
    }

    #[test]
    fn sane_on_the_real_proc() {
        let ncpu = std::fs::read_to_string("/proc/stat")
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
            .count() as f64;
        let topo = crate::collect::topology::CpuTopology::read(Path::new("/sys")).unwrap();
        let mut c = NodeCollector::new(Path::new("/proc"), Path::new("/sys"));
        c.set_numa_nodes(&topo.numa_nodes);
        assert_eq!(c.collect(Timestamp::now()).unwrap(), None);
        std::thread::sleep(Duration::from_millis(200));
        let s = c.collect(Timestamp::now()).unwrap().unwrap();
        assert!((0.0..=ncpu).contains(&s.cpu_cores), "{s:?}");
        let total = real_mem_total();
        assert!(s.memory_bytes > 0 && s.memory_bytes <= total, "{s:?}");
        assert!(s.memory_with_cache_bytes <= total, "{s:?}");
        assert_eq!(c.numa().len(), topo.numa_nodes.len(), "{:?}", c.numa());
        for n in c.numa() {
            assert!(n.cpu_cores >= 0.0 && n.cpu_cores <= ncpu, "{n:?}");
            assert!(n.memory_bytes <= total, "{n:?}");
        }
    }

    #[test]
    fn a_busy_thread_shows_up_on_the_real_proc() {
        let mut c = NodeCollector::new(Path::new("/proc"), Path::new("/sys"));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinner = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                x
            })
        };
        // Let it get going, then measure ~1 s of it.
        std::thread::sleep(Duration::from_millis(50));
        c.collect(Timestamp::now()).unwrap();
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(1000));
        let s = c.collect(Timestamp::now()).unwrap().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        // The spinner alone is ~1 core; anything else running only adds.
        assert!(s.cpu_cores >= 0.6, "{s:?} over {:?}", start.elapsed());
    }
}
