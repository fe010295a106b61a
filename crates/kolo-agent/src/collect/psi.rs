//! Pressure stall information (PSI).
//!
//! The kernel writes the same format for the node (`/proc/pressure/{cpu,memory,io}`)
//! and for cgroups (`cpu.pressure`, `memory.pressure`, `io.pressure` on v2; on
//! v1 only on kernels that carry the Anolis patch):
//!
//! ```text
//! some avg10=0.00 avg60=1.57 avg300=23.99 total=1314850297
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `avg*` are percentages of wall time over the last 10 / 60 / 300 s; `total`
//! is the accumulated stall time in microseconds. The `full` line is missing
//! from the node's `cpu` file before Linux 5.13.
//!
//! [`parse_psi`] is a pure parser (no I/O, no allocation unless it fails) that
//! both this node reader and the cgroup layer use; [`NodePsiReader`] reads
//! the three node files into one reused buffer.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::sample::{Pressure, PsiSample};

/// One line of a PSI file.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiLine {
    /// Share of time stalled over the last 10 s, percent.
    pub avg10: f64,
    /// Over the last 60 s, percent.
    pub avg60: f64,
    /// Over the last 300 s, percent.
    pub avg300: f64,
    /// Total stall time since boot (or cgroup creation), microseconds.
    pub total_us: u64,
}

/// A whole PSI file.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiFile {
    /// The `some` line: at least one task stalled.
    pub some: PsiLine,
    /// The `full` line: all non-idle tasks stalled (`None` where the kernel
    /// does not write one).
    pub full: Option<PsiLine>,
}

impl PsiFile {
    /// The avg10 figures the agent keeps (as Koordinator does).
    pub fn pressure(&self) -> Pressure {
        Pressure { some_avg10: self.some.avg10, full_avg10: self.full.map(|f| f.avg10) }
    }
}

/// Reading or parsing a PSI file failed (`line` 0: the file as a whole,
/// e.g. no `some` line).
pub type PsiError = super::FileError;

/// The longest piece of input an error message quotes.
const MAX_QUOTED: usize = 64;

fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}...", &text[..end]),
    }
}

/// Parses the text of a PSI file. `path` only names the file in errors.
///
/// Strict about what the agent relies on, lenient about additions: each
/// non-blank line must start with `some` or `full` and carry `avg10`,
/// `avg60`, `avg300` (finite, non-negative) and `total` (an integer), each
/// once; `key=value` fields with other keys are ignored, so a future kernel
/// adding one does not break the agent. A `some` line is required, each kind
/// may appear once, and lines may come in either order.
pub fn parse_psi(text: &str, path: &Path) -> Result<PsiFile, PsiError> {
    let err =
        |line: usize, message: String| PsiError::Parse { path: path.to_path_buf(), line, message };
    let mut some = None;
    let mut full = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split_ascii_whitespace();
        let slot = match fields.next() {
            Some("some") => &mut some,
            Some("full") => &mut full,
            Some(other) => {
                return Err(err(
                    number,
                    format!("expected `some` or `full` at the start, found {}", quote(other)),
                ));
            }
            None => continue,
        };
        if slot.is_some() {
            return Err(err(number, format!("a second {} line", quote(line))));
        }
        let mut avg = [None::<f64>; 3];
        let mut total = None::<u64>;
        for field in fields {
            let Some((key, value)) = field.split_once('=') else {
                return Err(err(number, format!("{} is not key=value", quote(field))));
            };
            let index = match key {
                "avg10" => 0,
                "avg60" => 1,
                "avg300" => 2,
                "total" => {
                    if total.is_some() {
                        return Err(err(number, "`total` appears twice".into()));
                    }
                    total = Some(value.parse::<u64>().map_err(|_| {
                        err(number, format!("total={} is not a whole number", quote(value)))
                    })?);
                    continue;
                }
                _ => continue,
            };
            if avg[index].is_some() {
                return Err(err(number, format!("`{key}` appears twice")));
            }
            match value.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => avg[index] = Some(v),
                _ => {
                    return Err(err(
                        number,
                        format!("{key}={} is not a non-negative number", quote(value)),
                    ));
                }
            }
        }
        let missing = ["avg10", "avg60", "avg300"]
            .iter()
            .zip(&avg)
            .find(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .or(total.is_none().then_some("total"));
        if let Some(key) = missing {
            return Err(err(number, format!("`{key}` is missing from {}", quote(line))));
        }
        *slot = Some(PsiLine {
            avg10: avg[0].unwrap_or_default(),
            avg60: avg[1].unwrap_or_default(),
            avg300: avg[2].unwrap_or_default(),
            total_us: total.unwrap_or_default(),
        });
    }
    match some {
        Some(some) => Ok(PsiFile { some, full }),
        None => Err(err(0, "no `some` line".into())),
    }
}

/// Parses a PSI file straight to the avg10 figures.
pub fn parse_pressure(text: &str, path: &Path) -> Result<Pressure, PsiError> {
    parse_psi(text, path).map(|f| f.pressure())
}

/// Reads a whole file into `buf` (cleared first). `Ok(false)` when the file
/// does not exist or the kernel says PSI is unsupported (booted with `psi=0`:
/// the files exist but reading them fails with `EOPNOTSUPP`).
pub(crate) fn read_optional(path: &Path, buf: &mut Vec<u8>) -> Result<bool, PsiError> {
    buf.clear();
    let io = |source| PsiError::Io { path: path.to_path_buf(), source };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(e)),
    };
    match file.read_to_end(buf) {
        Ok(_) => Ok(true),
        Err(e) if is_unsupported(&e) => Ok(false),
        Err(e) => Err(io(e)),
    }
}

fn is_unsupported(e: &io::Error) -> bool {
    // EOPNOTSUPP is 95 on every Linux architecture but parisc (223) and
    // sparc/alpha (45 there, and 95 means something else) — none of which
    // runs Kubernetes nodes.
    e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(95)
}

/// Reads the node's PSI from `<proc>/pressure/{cpu,memory,io}`.
#[derive(Debug)]
pub struct NodePsiReader {
    paths: [PathBuf; 3],
    buf: Vec<u8>,
    unsupported_logged: bool,
}

impl NodePsiReader {
    /// A reader of `<proc_root>/pressure/*`.
    pub fn new(proc_root: &Path) -> NodePsiReader {
        let dir = proc_root.join("pressure");
        NodePsiReader {
            paths: [dir.join("cpu"), dir.join("memory"), dir.join("io")],
            buf: Vec::with_capacity(256),
            unsupported_logged: false,
        }
    }

    /// One reading. `Ok(None)` when the kernel has no PSI (a file is
    /// missing, or PSI is disabled); that is logged once, at `info`.
    pub fn read(&mut self) -> Result<Option<PsiSample>, PsiError> {
        let mut out = [Pressure::default(); 3];
        for (path, slot) in self.paths.iter().zip(&mut out) {
            if !read_optional(path, &mut self.buf)? {
                if !self.unsupported_logged {
                    self.unsupported_logged = true;
                    tracing::info!(
                        file = %path.display(),
                        "node PSI unsupported (file missing or PSI disabled); not collected"
                    );
                }
                return Ok(None);
            }
            let text = std::str::from_utf8(&self.buf).map_err(|e| PsiError::Parse {
                path: path.clone(),
                line: 0,
                message: format!("not UTF-8: {e}"),
            })?;
            *slot = parse_pressure(text, path)?;
        }
        let [cpu, memory, io] = out;
        Ok(Some(PsiSample { cpu, memory, io }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(avg10: f64, avg60: f64, avg300: f64, total_us: u64) -> PsiLine {
        PsiLine { avg10, avg60, avg300, total_us }
    }

    #[test]
    fn parses_valid_files() {
        let cases: [(&str, PsiFile); 6] = [
            (
                "some avg10=0.00 avg60=1.57 avg300=23.99 total=1314850297\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                PsiFile {
                    some: line(0.0, 1.57, 23.99, 1314850297),
                    full: Some(line(0.0, 0.0, 0.0, 0)),
                },
            ),
            // Node cpu before 5.13: no `full` line.
            (
                "some avg10=12.50 avg60=3.00 avg300=0.25 total=42\n",
                PsiFile { some: line(12.5, 3.0, 0.25, 42), full: None },
            ),
            // No trailing newline, `full` first, extra spaces, blank lines.
            (
                "\nfull avg10=1.00 avg60=2.00 avg300=3.00 total=4\n\n  some  avg10=5.00 avg60=6.00 avg300=7.00 total=8",
                PsiFile { some: line(5.0, 6.0, 7.0, 8), full: Some(line(1.0, 2.0, 3.0, 4)) },
            ),
            // Fields in another order, and an unknown future field.
            (
                "some total=9 avg300=0.10 avg60=0.20 avg10=100.00 avg1=7.00\n",
                PsiFile { some: line(100.0, 0.2, 0.1, 9), full: None },
            ),
            // u64 total near the top.
            (
                "some avg10=0 avg60=0 avg300=0 total=18446744073709551615\n",
                PsiFile { some: line(0.0, 0.0, 0.0, u64::MAX), full: None },
            ),
            (
                "some avg10=99.99 avg60=0 avg300=0 total=0\r\n",
                PsiFile { some: line(99.99, 0.0, 0.0, 0), full: None },
            ),
        ];
        for (text, want) in cases {
            let got = parse_psi(text, Path::new("cpu.pressure"))
                .unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(got, want, "{text:?}");
        }
        let p = parse_pressure(cases_first(), Path::new("x")).unwrap();
        assert_eq!(p, Pressure { some_avg10: 4.25, full_avg10: Some(1.5) });
        let p = parse_pressure("some avg10=4.25 avg60=0 avg300=0 total=1", Path::new("x")).unwrap();
        assert_eq!(p, Pressure { some_avg10: 4.25, full_avg10: None });
    }

    fn cases_first() -> &'static str {
        "some avg10=4.25 avg60=0 avg300=0 total=1\nfull avg10=1.50 avg60=0 avg300=0 total=1\n"
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        let good = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0";
        let cases = [
            ("", 0, "no `some` line"),
            ("\n\n", 0, "no `some` line"),
            ("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0, "no `some` line"),
            ("some avg10=0.00 avg60=0.00 avg300=0.00\n", 1, "`total` is missing"),
            ("some avg60=0.00 avg300=0.00 total=0\n", 1, "`avg10` is missing"),
            ("some avg10=abc avg60=0.00 avg300=0.00 total=0\n", 1, "avg10=\"abc\" is not"),
            ("some avg10=-1 avg60=0.00 avg300=0.00 total=0\n", 1, "avg10=\"-1\" is not"),
            ("some avg10=NaN avg60=0.00 avg300=0.00 total=0\n", 1, "avg10=\"NaN\""),
            ("some avg10=inf avg60=0.00 avg300=0.00 total=0\n", 1, "avg10=\"inf\""),
            ("some avg10=0 avg60=0.00 avg300=0.00 total=1.5\n", 1, "total=\"1.5\" is not a whole"),
            ("some avg10=0 avg60=0.00 avg300=0.00 total=-1\n", 1, "total=\"-1\""),
            ("some avg10=0 avg10=1 avg60=0.00 avg300=0.00 total=0\n", 1, "`avg10` appears twice"),
            ("some avg10=0 avg60=0 avg300=0 total=0 total=1\n", 1, "`total` appears twice"),
            ("some avg10 avg60=0 avg300=0 total=0\n", 1, "\"avg10\" is not key=value"),
            ("\nhalf avg10=0 avg60=0 avg300=0 total=0\n", 2, "expected `some` or `full`"),
            (
                "some avg10=0 avg60=0 avg300=0 total=0\nsome avg10=0 avg60=0 avg300=0 total=0",
                2,
                "a second",
            ),
            ("SOME avg10=0 avg60=0 avg300=0 total=0\n", 1, "found \"SOME\""),
        ];
        for (text, line_no, needle) in cases {
            let e = parse_psi(text, Path::new("/sys/fs/cgroup/a/memory.pressure")).unwrap_err();
            let PsiError::Parse { line, .. } = &e else { panic!("{e:?}") };
            assert_eq!(*line, line_no, "{text:?}: {e}");
            let msg = e.to_string();
            assert!(msg.starts_with("/sys/fs/cgroup/a/memory.pressure: line "), "{msg}");
            assert!(msg.contains(needle), "{text:?}: {msg}");
        }
        // A long garbage token is quoted, cut.
        let long = format!("{} {}", "x".repeat(500), good);
        let msg = parse_psi(&long, Path::new("f")).unwrap_err().to_string();
        assert!(msg.len() < 200 && msg.contains("..."), "{msg}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,120}") {
            let _ = parse_psi(&text, Path::new("f"));
        }

        #[test]
        fn psi_like_text_never_panics(text in "(some|full|avg10|avg60|avg300|total|=| |\n|[0-9.]{1,5}){0,40}") {
            let _ = parse_psi(&text, Path::new("f"));
        }
    }

    #[test]
    fn node_reader_on_fake_and_missing_trees() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = NodePsiReader::new(dir.path());
        assert!(reader.read().unwrap().is_none(), "no pressure dir = unsupported");
        assert!(reader.read().unwrap().is_none(), "still unsupported, logged once");

        let p = dir.path().join("pressure");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("cpu"), "some avg10=1.00 avg60=0 avg300=0 total=5\n").unwrap();
        std::fs::write(
            p.join("memory"),
            "some avg10=2.00 avg60=0 avg300=0 total=5\nfull avg10=0.50 avg60=0 avg300=0 total=1\n",
        )
        .unwrap();
        assert!(reader.read().unwrap().is_none(), "io missing = unsupported");
        std::fs::write(
            p.join("io"),
            "some avg10=3.00 avg60=0 avg300=0 total=5\nfull avg10=2.50 avg60=0 avg300=0 total=1\n",
        )
        .unwrap();
        let s = reader.read().unwrap().unwrap();
        assert_eq!(s.cpu, Pressure { some_avg10: 1.0, full_avg10: None });
        assert_eq!(s.memory, Pressure { some_avg10: 2.0, full_avg10: Some(0.5) });
        assert_eq!(s.io, Pressure { some_avg10: 3.0, full_avg10: Some(2.5) });

        std::fs::write(p.join("memory"), "some avg10=oops\n").unwrap();
        let e = reader.read().unwrap_err().to_string();
        assert!(e.contains("pressure/memory: line 1"), "{e}");
        std::fs::write(p.join("memory"), [0xff, 0xfe]).unwrap();
        let e = reader.read().unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn node_reader_on_the_real_proc() {
        let mut reader = NodePsiReader::new(Path::new("/proc"));
        let present = Path::new("/proc/pressure/cpu").exists();
        match reader.read().unwrap() {
            Some(s) => {
                assert!(present);
                for p in [s.cpu, s.memory, s.io] {
                    assert!((0.0..=100.0).contains(&p.some_avg10), "{s:?}");
                    if let Some(full) = p.full_avg10 {
                        assert!((0.0..=100.0).contains(&full), "{s:?}");
                    }
                }
                assert!(s.memory.full_avg10.is_some() && s.io.full_avg10.is_some(), "{s:?}");
            }
            None => assert!(!present || std::fs::read("/proc/pressure/cpu").is_err()),
        }
    }
}
