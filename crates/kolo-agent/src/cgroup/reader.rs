//! Typed reads of cgroup files (spec §0.3 "Readers"): the parsers are pure
//! functions over the file's text, so every v1 and v2 format is tested
//! without a kernel; [`ReadBuf`] reads a file into a reused buffer.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::{CgroupError, cut};
use super::layout::CgroupVersion;
use crate::sample::Pressure;

/// A reusable read buffer: one allocation for every file read of a
/// collection round, no `fstat` / `lseek` per read (unlike
/// `fs::read_to_string`).
#[derive(Debug, Default)]
pub struct ReadBuf {
    buf: Vec<u8>,
}

impl ReadBuf {
    /// An empty buffer (grows to the largest file read, then stays).
    pub fn new() -> ReadBuf {
        ReadBuf { buf: Vec::with_capacity(4096) }
    }

    /// Reads the whole file; the text borrows the buffer.
    pub fn read(&mut self, path: &Path) -> Result<&str, CgroupError> {
        let read_err = |source| CgroupError::Read { path: path.to_path_buf(), source };
        let mut file = File::open(path).map_err(read_err)?;
        self.buf.clear();
        loop {
            if self.buf.len() == self.buf.capacity() {
                self.buf.reserve(4096);
            }
            let len = self.buf.len();
            self.buf.resize(self.buf.capacity(), 0);
            match file.read(&mut self.buf[len..]) {
                Ok(0) => {
                    self.buf.truncate(len);
                    break;
                }
                Ok(n) => self.buf.truncate(len + n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.buf.truncate(len),
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(read_err(e));
                }
            }
        }
        std::str::from_utf8(&self.buf).map_err(|_| CgroupError::Parse {
            path: path.to_path_buf(),
            reason: "not UTF-8 text".into(),
        })
    }

    /// Reads and parses a file; a parse failure names the file.
    pub fn parse<T>(
        &mut self,
        path: &Path,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, CgroupError> {
        let text = self.read(path)?;
        parse(text).map_err(|reason| CgroupError::Parse { path: path.to_path_buf(), reason })
    }

    /// Reads an [`OpenFile`] from its start with `pread`, opening it first
    /// if needed (and keeping it open if `keep_open`). A descriptor that
    /// went stale (the cgroup was removed and recreated) is reopened once.
    pub fn read_open(&mut self, file: &mut OpenFile, keep_open: bool) -> Result<&str, CgroupError> {
        let read_err = |path: &Path, source| CgroupError::Read { path: path.to_path_buf(), source };
        let mut fresh = None;
        let stale = match &file.file {
            Some(f) => self.pread(f).is_err(),
            None => true,
        };
        if stale {
            file.file = None;
            let f = File::open(&file.path).map_err(|e| read_err(&file.path, e))?;
            self.pread(&f).map_err(|e| read_err(&file.path, e))?;
            fresh = Some(f);
        }
        if keep_open && fresh.is_some() {
            file.file = fresh;
        }
        std::str::from_utf8(&self.buf).map_err(|_| CgroupError::Parse {
            path: file.path.clone(),
            reason: "not UTF-8 text".into(),
        })
    }

    /// [`ReadBuf::read_open`] and parse; a parse failure names the file.
    pub fn parse_open<T>(
        &mut self,
        file: &mut OpenFile,
        keep_open: bool,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, CgroupError> {
        let text = self.read_open(file, keep_open)?;
        parse(text).map_err(|reason| CgroupError::Parse { path: file.path.clone(), reason })
    }

    /// Reads from offset 0. A read shorter than the space offered ends
    /// it: cgroup files are generated whole by one `show` call, so this
    /// saves the extra `read` that would return 0.
    fn pread(&mut self, file: &File) -> io::Result<()> {
        let mut filled = 0;
        loop {
            if self.buf.len() < filled + 4096 {
                let len = (filled + 4096).max(self.buf.capacity());
                self.buf.resize(len, 0);
            }
            let spare = self.buf.len() - filled;
            match file.read_at(&mut self.buf[filled..], filled as u64) {
                Ok(n) => {
                    filled += n;
                    if n < spare {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.buf.clear();
                    return Err(e);
                }
            }
        }
        self.buf.truncate(filled);
        Ok(())
    }
}

/// A cgroup file that may be kept open between collection rounds: opening
/// a cgroup file costs more than reading it (path walk, kernfs open), so
/// the pod collector keeps its hot files open within a budget of file
/// descriptors.
#[derive(Debug)]
pub struct OpenFile {
    path: PathBuf,
    file: Option<File>,
}

impl OpenFile {
    /// A closed file.
    pub fn new(path: PathBuf) -> OpenFile {
        OpenFile { path, file: None }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a descriptor is held.
    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }
}

/// Memory statistics of a cgroup (hierarchical: v1 `total_*` keys), bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryStat {
    /// `total_inactive_anon` / `inactive_anon`.
    pub inactive_anon: u64,
    /// `total_active_anon` / `active_anon`.
    pub active_anon: u64,
    /// `total_inactive_file` / `inactive_file`.
    pub inactive_file: u64,
    /// `total_active_file` / `active_file`.
    pub active_file: u64,
    /// `total_unevictable` / `unevictable`.
    pub unevictable: u64,
    /// `total_cache` / `file` (0 if absent).
    pub cache: u64,
    /// `total_rss` / `anon` (0 if absent).
    pub rss: u64,
}

impl MemoryStat {
    /// Usage without page cache: inactive_anon + active_anon + unevictable.
    pub fn usage(&self) -> u64 {
        self.inactive_anon.saturating_add(self.active_anon).saturating_add(self.unevictable)
    }

    /// Usage with page cache: [`MemoryStat::usage`] + active_file +
    /// inactive_file.
    pub fn usage_with_page_cache(&self) -> u64 {
        self.usage().saturating_add(self.active_file).saturating_add(self.inactive_file)
    }
}

/// `key value` lines.
fn kv(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|line| {
        let mut it = line.split_ascii_whitespace();
        Some((it.next()?, it.next().unwrap_or("")))
    })
}

fn num(key: &str, value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| format!("`{key}` has value {:?}, not a number", cut(value)))
}

/// Parses `memory.stat` (v1: the hierarchical `total_*` keys; v2: `anon`,
/// `file`, `inactive_anon`, ...). The five LRU keys are required.
pub fn parse_memory_stat(version: CgroupVersion, text: &str) -> Result<MemoryStat, String> {
    let prefix = match version {
        CgroupVersion::V1 => "total_",
        CgroupVersion::V2 => "",
    };
    let mut stat = MemoryStat::default();
    let mut seen = 0u8;
    for (key, value) in kv(text) {
        let Some(name) = key.strip_prefix(prefix) else { continue };
        let (slot, bit) = match (version, name) {
            (_, "inactive_anon") => (&mut stat.inactive_anon, 1),
            (_, "active_anon") => (&mut stat.active_anon, 2),
            (_, "inactive_file") => (&mut stat.inactive_file, 4),
            (_, "active_file") => (&mut stat.active_file, 8),
            (_, "unevictable") => (&mut stat.unevictable, 16),
            (CgroupVersion::V1, "cache") | (CgroupVersion::V2, "file") => (&mut stat.cache, 0),
            (CgroupVersion::V1, "rss") | (CgroupVersion::V2, "anon") => (&mut stat.rss, 0),
            _ => continue,
        };
        *slot = num(key, value)?;
        seen |= bit;
    }
    if seen != 31 {
        let missing =
            ["inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable"]
                .iter()
                .enumerate()
                .find(|(i, _)| seen & (1 << i) == 0)
                .map(|(_, k)| *k)
                .unwrap_or("?");
        return Err(format!("no `{prefix}{missing}` line in memory.stat"));
    }
    Ok(stat)
}

/// Parses the CPU usage in nanoseconds: v1 `cpuacct.usage` (ns), v2
/// `cpu.stat` `usage_usec` × 1000.
pub fn parse_cpu_usage(version: CgroupVersion, text: &str) -> Result<u64, String> {
    match version {
        CgroupVersion::V1 => num("cpuacct.usage", text.trim()),
        CgroupVersion::V2 => {
            let (key, value) = kv(text)
                .find(|(k, _)| *k == "usage_usec")
                .ok_or("no `usage_usec` line in cpu.stat")?;
            Ok(num(key, value)?.saturating_mul(1000))
        }
    }
}

/// CFS throttling counters of `cpu.stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuThrottle {
    /// `nr_periods`.
    pub nr_periods: u64,
    /// `nr_throttled`.
    pub nr_throttled: u64,
    /// `throttled_time` (v1, ns) / `throttled_usec` × 1000 (v2).
    pub throttled_ns: u64,
}

impl CpuThrottle {
    /// Throttled ratio since `prev`: Δnr_throttled / Δnr_periods (0 if no
    /// period passed).
    pub fn ratio_since(&self, prev: &CpuThrottle) -> f64 {
        let periods = self.nr_periods.saturating_sub(prev.nr_periods);
        if periods == 0 {
            return 0.0;
        }
        self.nr_throttled.saturating_sub(prev.nr_throttled) as f64 / periods as f64
    }
}

/// Parses the throttling counters of `cpu.stat`.
pub fn parse_cpu_throttle(version: CgroupVersion, text: &str) -> Result<CpuThrottle, String> {
    let mut t = CpuThrottle::default();
    let mut seen = 0u8;
    for (key, value) in kv(text) {
        match (version, key) {
            (_, "nr_periods") => (t.nr_periods, seen) = (num(key, value)?, seen | 1),
            (_, "nr_throttled") => (t.nr_throttled, seen) = (num(key, value)?, seen | 2),
            (CgroupVersion::V1, "throttled_time") => {
                (t.throttled_ns, seen) = (num(key, value)?, seen | 4)
            }
            (CgroupVersion::V2, "throttled_usec") => {
                (t.throttled_ns, seen) = (num(key, value)?.saturating_mul(1000), seen | 4)
            }
            _ => {}
        }
    }
    if seen != 7 {
        return Err("cpu.stat lacks nr_periods / nr_throttled / throttled time".into());
    }
    Ok(t)
}

/// Parses a PSI file (`some avg10=.. avg60=.. avg300=.. total=..`, and an
/// optional `full ...` line); only avg10 is kept.
pub fn parse_psi(text: &str) -> Result<Pressure, String> {
    let mut some = None;
    let mut full = None;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let slot = match fields.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            Some(other) => return Err(format!("unexpected line start {:?}", cut(other))),
            None => continue,
        };
        let avg10 =
            fields.find_map(|f| f.strip_prefix("avg10=")).ok_or("a PSI line without avg10=")?;
        let v: f64 =
            avg10.parse().map_err(|_| format!("avg10={:?} is not a number", cut(avg10)))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("avg10={v} is out of range"));
        }
        *slot = Some(v);
    }
    Ok(Pressure { some_avg10: some.ok_or("no `some` line")?, full_avg10: full })
}

/// Pages in use on one NUMA node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumaPages {
    /// NUMA node id.
    pub node: u32,
    /// Pages (4 KiB).
    pub pages: u64,
}

/// Parses `memory.numa_stat`: v1 the `total=… N0=… N1=…` line (pages); v2
/// the `anon N0=<bytes> …` and `file N0=<bytes> …` lines, bytes / 4096 and
/// summed per node.
pub fn parse_numa_stat(version: CgroupVersion, text: &str) -> Result<Vec<NumaPages>, String> {
    let mut out: Vec<NumaPages> = Vec::new();
    let mut add = |node: u32, pages: u64| match out.iter_mut().find(|n| n.node == node) {
        Some(n) => n.pages = n.pages.saturating_add(pages),
        None => out.push(NumaPages { node, pages }),
    };
    let mut found = false;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(head) = fields.next() else { continue };
        let (wanted, divisor) = match version {
            CgroupVersion::V1 => (head.starts_with("total="), 1),
            CgroupVersion::V2 => (head == "anon" || head == "file", 4096),
        };
        if !wanted {
            continue;
        }
        found = true;
        for field in fields {
            let (node, value) = field
                .strip_prefix('N')
                .and_then(|f| f.split_once('='))
                .ok_or_else(|| format!("field {:?} is not N<node>=<value>", cut(field)))?;
            let node: u32 = node.parse().map_err(|_| format!("bad node id in {:?}", cut(field)))?;
            add(node, num(field, value)? / divisor);
        }
    }
    if !found {
        return Err("no total= (v1) or anon/file (v2) line in memory.numa_stat".into());
    }
    out.sort_by_key(|n| n.node);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use CgroupVersion::{V1, V2};

    const V1_STAT: &str = "cache 9445376\nrss 7929856\ninactive_anon 1\nactive_anon 2\ninactive_file 3\nactive_file 4\nunevictable 5\nhierarchical_memory_limit 9223372036854771712\ntotal_cache 177016832\ntotal_rss 14479360\ntotal_inactive_anon 6365184\ntotal_active_anon 1581056\ntotal_inactive_file 102191104\ntotal_active_file 65740800\ntotal_unevictable 15478784\n";
    const V2_STAT: &str = "anon 104857600\nfile 20971520\nkernel 1024\nsock 0\nshmem 0\nfile_mapped 0\ninactive_anon 4096\nactive_anon 104853504\ninactive_file 10485760\nactive_file 10485760\nunevictable 0\nslab 1\n";

    #[test]
    fn memory_stat_v1_uses_hierarchical_totals() {
        let s = parse_memory_stat(V1, V1_STAT).unwrap();
        assert_eq!(s.usage(), 6365184 + 1581056 + 15478784);
        assert_eq!(s.usage_with_page_cache(), s.usage() + 102191104 + 65740800);
        assert_eq!((s.cache, s.rss), (177016832, 14479360));
    }

    #[test]
    fn memory_stat_v2() {
        let s = parse_memory_stat(V2, V2_STAT).unwrap();
        assert_eq!(s.usage(), 100 << 20);
        assert_eq!(s.usage_with_page_cache(), 120 << 20);
        assert_eq!((s.cache, s.rss), (20 << 20, 100 << 20));
    }

    #[test]
    fn memory_stat_garbage_is_an_error() {
        assert!(parse_memory_stat(V1, "").unwrap_err().contains("total_inactive_anon"));
        let bad = V2_STAT.replace("active_anon 104853504", "active_anon lots");
        assert!(parse_memory_stat(V2, &bad).unwrap_err().contains("lots"));
        assert!(parse_memory_stat(V2, "\u{0}\u{1}garbage").is_err());
    }

    #[test]
    fn cpu_usage_both_versions() {
        assert_eq!(parse_cpu_usage(V1, "123456789\n").unwrap(), 123456789);
        assert_eq!(
            parse_cpu_usage(V2, "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n").unwrap(),
            1_500_000
        );
        assert!(parse_cpu_usage(V1, "-5\n").is_err());
        assert!(parse_cpu_usage(V1, "").is_err());
        assert!(parse_cpu_usage(V2, "user_usec 1\n").is_err());
    }

    #[test]
    fn throttling_both_versions() {
        let v1 = parse_cpu_throttle(
            V1,
            "nr_periods 10\nnr_throttled 2\nthrottled_time 5000\nnr_bursts 0\n",
        )
        .unwrap();
        assert_eq!(v1, CpuThrottle { nr_periods: 10, nr_throttled: 2, throttled_ns: 5000 });
        let v2 = parse_cpu_throttle(
            V2,
            "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 20\nnr_throttled 5\nthrottled_usec 7\n",
        )
        .unwrap();
        assert_eq!(v2.throttled_ns, 7000);
        assert_eq!(v2.ratio_since(&v1), 3.0 / 10.0);
        assert_eq!(v1.ratio_since(&v1), 0.0);
        assert!(parse_cpu_throttle(V2, "usage_usec 1\n").is_err());
    }

    #[test]
    fn psi() {
        let p = parse_psi("some avg10=1.50 avg60=0.00 avg300=0.00 total=12\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=3\n")
            .unwrap();
        assert_eq!(p, Pressure { some_avg10: 1.5, full_avg10: Some(0.25) });
        let p = parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        assert_eq!(p.full_avg10, None);
        for bad in [
            "",
            "some avg60=1\n",
            "some avg10=x\n",
            "weird avg10=1\n",
            "some avg10=NaN\n",
            "some avg10=-1\n",
        ] {
            assert!(parse_psi(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn numa_stat_both_versions() {
        let v1 = "total=300 N0=100 N1=200\nfile=10 N0=5 N1=5\nanon=290 N0=95 N1=195\nunevictable=0 N0=0 N1=0\n";
        assert_eq!(
            parse_numa_stat(V1, v1).unwrap(),
            vec![NumaPages { node: 0, pages: 100 }, NumaPages { node: 1, pages: 200 }]
        );
        let v2 = "anon N0=8192 N1=4096\nfile N0=4096 N1=0\nkernel_stack N0=16384 N1=0\n";
        assert_eq!(
            parse_numa_stat(V2, v2).unwrap(),
            vec![NumaPages { node: 0, pages: 3 }, NumaPages { node: 1, pages: 1 }]
        );
        assert!(parse_numa_stat(V2, "anon X0=1\n").is_err());
        assert!(parse_numa_stat(V1, "").is_err());
    }

    #[test]
    fn read_buf_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("memory.stat");
        std::fs::write(&path, b"\xff\xfe").unwrap();
        let mut buf = ReadBuf::new();
        let err = buf.read(&path).unwrap_err().to_string();
        assert!(err.contains("memory.stat") && err.contains("UTF-8"), "{err}");
        std::fs::write(&path, "total_rss x\n").unwrap();
        let err = buf.parse(&path, |t| parse_memory_stat(V1, t)).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        let big = "x".repeat(10_000);
        std::fs::write(&path, &big).unwrap();
        assert_eq!(buf.read(&path).unwrap(), big);
        let err = buf.read(&tmp.path().join("nope")).unwrap_err();
        assert!(err.is_not_found());
    }

    #[test]
    fn open_files_are_reread_from_the_start_and_reopened_when_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cpuacct.usage");
        std::fs::write(&path, "1\n").unwrap();
        let mut buf = ReadBuf::new();
        let mut file = OpenFile::new(path.clone());
        assert_eq!(buf.read_open(&mut file, false).unwrap(), "1\n");
        assert!(!file.is_open());
        assert_eq!(buf.read_open(&mut file, true).unwrap(), "1\n");
        assert!(file.is_open());
        // Rewritten in place: the open descriptor sees the new content.
        std::fs::write(&path, "22\n").unwrap();
        assert_eq!(buf.read_open(&mut file, true).unwrap(), "22\n");
        // Larger than one read.
        let big = "y".repeat(20_000);
        std::fs::write(&path, &big).unwrap();
        assert_eq!(buf.read_open(&mut file, true).unwrap(), big);
        // Removed: the held descriptor still reads the old inode on a
        // regular file system; a missing file is "not found" once closed.
        std::fs::remove_file(&path).unwrap();
        let mut closed = OpenFile::new(path.clone());
        assert!(buf.read_open(&mut closed, true).unwrap_err().is_not_found());
        assert!(!closed.is_open());
    }
}
