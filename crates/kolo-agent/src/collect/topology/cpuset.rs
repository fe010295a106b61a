//! [`CpuSet`]: a set of logical CPU ids with the Linux cpulist text form
//! (`"0-3,8,10-11"`), the format of cgroup `cpuset.cpus`, of sysfs CPU lists
//! and of every cpuset Koordinator writes into an annotation.
//!
//! A verbatim copy of `kolo_scheduler::plugins::node_numa_resource::cpuset`:
//! component crates do not depend on each other, and kolo-core has no
//! cpuset yet. Moving this module to kolo-core and re-exporting it from both
//! places removes the copy without changing either API.

use std::fmt;
use std::str::FromStr;

/// The largest CPU id [`CpuSet::parse`] accepts.
///
/// The Linux kernel's `CONFIG_NR_CPUS` tops out at 8192; twice that leaves
/// room for future machines while bounding what a hostile annotation can
/// make the scheduler allocate (16384 bits = 2 KiB per set).
pub const MAX_CPU_ID: u32 = 16_383;

/// How much of a rejected input an error quotes.
const MAX_QUOTED_CHARS: usize = 64;

/// A cpulist that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cpuset {input:?}: {reason}")]
pub struct CpuSetError {
    /// The text as given (cut after 64 characters).
    pub input: String,
    /// What is wrong, naming the offending element.
    pub reason: String,
}

impl CpuSetError {
    fn new(input: &str, reason: String) -> CpuSetError {
        let input = match input.char_indices().nth(MAX_QUOTED_CHARS) {
            None => input.to_owned(),
            Some((end, _)) => format!("{}...", &input[..end]),
        };
        CpuSetError { input, reason }
    }
}

/// A set of logical CPU ids.
///
/// A bitset over 64-bit words. Machines have at most a few hundred CPUs, so
/// every operation is a handful of word operations and a set is a few words.
/// Trailing zero words are trimmed, so equal sets have equal
/// representations and the derived `Eq`/`Hash` are set equality.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> CpuSet {
        CpuSet { words: Vec::new() }
    }

    /// The CPUs `first..=last` (empty when `first > last`).
    pub fn from_range(first: u32, last: u32) -> CpuSet {
        let mut set = CpuSet::new();
        set.insert_range(first, last);
        set
    }

    /// Parses a Linux cpulist: comma-separated ids and inclusive ranges
    /// `a-b`, e.g. `"0-3,8,10-11"`.
    ///
    /// Like the kernel (which writes lists with a trailing newline), spaces
    /// and newlines around the list and around each element are ignored,
    /// and an empty (or all-blank) list is the empty set. Elements may
    /// overlap and come in any order. Rejected: empty elements (`"1,,2"`),
    /// signs, reversed ranges (`"3-1"`), ids above [`MAX_CPU_ID`], and the
    /// kernel's stride form `a-b:u/g`, which no Kubernetes component writes.
    /// Errors quote the input and name the bad element; nothing panics.
    pub fn parse(input: &str) -> Result<CpuSet, CpuSetError> {
        let text = input.trim();
        let mut set = CpuSet::new();
        if text.is_empty() {
            return Ok(set);
        }
        for element in text.split(',') {
            let element = element.trim();
            if element.is_empty() {
                return Err(CpuSetError::new(input, "empty element".to_owned()));
            }
            let (first, last) = match element.split_once('-') {
                None => {
                    let id = parse_id(input, element)?;
                    (id, id)
                }
                Some((a, b)) => {
                    let first = parse_id(input, a.trim())?;
                    let last = parse_id(input, b.trim())?;
                    if first > last {
                        return Err(CpuSetError::new(
                            input,
                            format!("range {element:?} ends before it starts"),
                        ));
                    }
                    (first, last)
                }
            };
            set.insert_range(first, last);
        }
        Ok(set)
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        let (word, bit) = split(cpu);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Adds `cpu`; returns whether it was new.
    ///
    /// The set grows to hold `cpu`; ids reach kolo only through
    /// [`parse`](Self::parse) and the CPU topology, which both bound them by
    /// [`MAX_CPU_ID`].
    pub fn insert(&mut self, cpu: u32) -> bool {
        let (word, bit) = split(cpu);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let new = self.words[word] & (1 << bit) == 0;
        self.words[word] |= 1 << bit;
        new
    }

    /// Adds `first..=last`.
    pub fn insert_range(&mut self, first: u32, last: u32) {
        if first > last {
            return;
        }
        let (last_word, _) = split(last);
        if last_word >= self.words.len() {
            self.words.resize(last_word + 1, 0);
        }
        // Word-at-a-time: a range like 0-16383 costs 256 word writes.
        let mut cpu = first;
        loop {
            let (word, bit) = split(cpu);
            let span = (last - cpu).min(63 - bit);
            let mask = if span == 63 { u64::MAX } else { ((1u64 << (span + 1)) - 1) << bit };
            self.words[word] |= mask;
            match cpu.checked_add(span + 1) {
                Some(next) if next <= last => cpu = next,
                _ => break,
            }
        }
    }

    /// Removes `cpu`; returns whether it was present.
    pub fn remove(&mut self, cpu: u32) -> bool {
        let (word, bit) = split(cpu);
        let Some(w) = self.words.get_mut(word) else {
            return false;
        };
        let present = *w & (1 << bit) != 0;
        *w &= !(1 << bit);
        self.trim();
        present
    }

    /// The number of CPUs.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> CpuSetIter<'_> {
        CpuSetIter {
            words: &self.words,
            index: 0,
            current: self.words.first().copied().unwrap_or(0),
        }
    }

    /// The lowest CPU.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// `self ∪ other`.
    #[must_use]
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Adds every CPU of `other`.
    pub fn union_with(&mut self, other: &CpuSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// `self ∖ other`.
    #[must_use]
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.difference_with(other);
        out
    }

    /// Removes every CPU of `other`.
    pub fn difference_with(&mut self, other: &CpuSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
        self.trim();
    }

    /// `self ∩ other`.
    #[must_use]
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut out =
            CpuSet { words: self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect() };
        out.trim();
        out
    }

    /// The number of CPUs in `self ∩ other`, without building it.
    pub fn intersection_len(&self, other: &CpuSet) -> usize {
        self.words.iter().zip(&other.words).map(|(a, b)| (a & b).count_ones() as usize).sum()
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Whether the sets share a CPU.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

/// Parses one decimal CPU id of `input`.
fn parse_id(input: &str, text: &str) -> Result<u32, CpuSetError> {
    // `u32::from_str` accepts a leading `+`; a cpulist never has one.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuSetError::new(input, format!("{text:?} is not a CPU id")));
    }
    match text.parse::<u32>() {
        Ok(id) if id <= MAX_CPU_ID => Ok(id),
        _ => Err(CpuSetError::new(
            input,
            format!("CPU id {text} is above the supported maximum {MAX_CPU_ID}"),
        )),
    }
}

fn split(cpu: u32) -> (usize, u32) {
    ((cpu / 64) as usize, cpu % 64)
}

/// Ascending iterator over a [`CpuSet`].
#[derive(Debug, Clone)]
pub struct CpuSetIter<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl Iterator for CpuSetIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros();
                self.current &= self.current - 1;
                return Some(self.index as u32 * 64 + bit);
            }
            self.index += 1;
            self.current = *self.words.get(self.index)?;
        }
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = u32;
    type IntoIter = CpuSetIter<'a>;
    fn into_iter(self) -> CpuSetIter<'a> {
        self.iter()
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> CpuSet {
        let mut set = CpuSet::new();
        set.extend(iter);
        set
    }
}

impl Extend<u32> for CpuSet {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, iter: I) {
        for cpu in iter {
            self.insert(cpu);
        }
    }
}

impl fmt::Display for CpuSet {
    /// The canonical cpulist: ascending, runs of two or more as `a-b`
    /// (`"0-3,8,10-11"`), the empty set as `""`. This is what the kernel and
    /// Kubernetes' cpuset package print.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.iter().peekable();
        let mut first = true;
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({:?})", self.to_string())
    }
}

impl FromStr for CpuSet {
    type Err = CpuSetError;
    fn from_str(s: &str) -> Result<CpuSet, CpuSetError> {
        CpuSet::parse(s)
    }
}

impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CpuSet, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        CpuSet::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_and_format_table() {
        let cases = [
            ("", vec![], ""),
            ("  \n", vec![], ""),
            ("0", vec![0], "0"),
            ("0-3,8,10-11", vec![0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"),
            ("0-3\n", vec![0, 1, 2, 3], "0-3"),
            (" 1 , 3 - 4 ", vec![1, 3, 4], "1,3-4"),
            ("8,0-2,1", vec![0, 1, 2, 8], "0-2,8"),
            ("5-5", vec![5], "5"),
            ("63-65", vec![63, 64, 65], "63-65"),
            ("007", vec![7], "7"),
        ];
        for (input, cpus, canonical) in cases {
            let set = CpuSet::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(set.iter().collect::<Vec<_>>(), cpus, "{input:?}");
            assert_eq!(set.to_string(), canonical, "{input:?}");
            assert_eq!(set.len(), cpus.len());
        }
    }

    #[test]
    fn parse_errors_quote_input_and_element() {
        let cases = [
            ("1,,2", "empty element"),
            ("1,", "empty element"),
            ("3-1", "\"3-1\" ends before it starts"),
            ("a", "\"a\" is not a CPU id"),
            ("-1", "\"\" is not a CPU id"),
            ("+1", "\"+1\" is not a CPU id"),
            ("1-2-3", "\"2-3\" is not a CPU id"),
            ("0-15:2/4", "\"15:2/4\" is not a CPU id"),
            ("0-4294967295", "4294967295 is above the supported maximum 16383"),
            ("99999999999999999999", "above the supported maximum"),
            ("16384", "16384 is above"),
        ];
        for (input, needle) in cases {
            let err = CpuSet::parse(input).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(&format!("{input:?}")), "{text}");
            assert!(text.contains(needle), "{input:?}: {text}");
        }
        let long = "x".repeat(200);
        assert!(CpuSet::parse(&long).unwrap_err().input.ends_with("..."));
        assert_eq!(CpuSet::parse("0-16383").unwrap().len(), 16384);
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::parse("0-7").unwrap();
        let b = CpuSet::parse("4-11,100").unwrap();
        assert_eq!(a.union(&b).to_string(), "0-11,100");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert_eq!(b.difference(&a).to_string(), "8-11,100");
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        assert_eq!(a.intersection_len(&b), 4);
        assert!(CpuSet::parse("1-2").unwrap().is_subset(&a));
        assert!(!b.is_subset(&a));
        assert!(a.intersects(&b));
        // Trimmed representation: removing the high CPU gives an equal set.
        let mut c = CpuSet::parse("0-3,100").unwrap();
        assert!(c.remove(100));
        assert!(!c.remove(100));
        assert_eq!(c, CpuSet::parse("0-3").unwrap());
        assert_eq!(b.difference(&b), CpuSet::new());
        assert_eq!(a.first(), Some(0));
        assert_eq!(CpuSet::new().first(), None);
    }

    #[test]
    fn serde_as_string() {
        let set = CpuSet::parse("0-3,8").unwrap();
        assert_eq!(serde_json::to_string(&set).unwrap(), "\"0-3,8\"");
        assert_eq!(serde_json::from_str::<CpuSet>("\"8,0-3\"").unwrap(), set);
        let err = serde_json::from_str::<CpuSet>("\"3-1\"").unwrap_err().to_string();
        assert!(err.contains("3-1"), "{err}");
    }

    proptest! {
        #[test]
        fn round_trip(cpus in proptest::collection::btree_set(0u32..600, 0..80)) {
            let set: CpuSet = cpus.iter().copied().collect();
            let text = set.to_string();
            let back = CpuSet::parse(&text).unwrap();
            prop_assert_eq!(&back, &set);
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), cpus.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(back.to_string(), text);
        }

        #[test]
        fn range_insert_matches_single_inserts(first in 0u32..300, len in 0u32..300) {
            let last = first + len;
            let set = CpuSet::from_range(first, last);
            let expected: CpuSet = (first..=last).collect();
            prop_assert_eq!(set, expected);
        }

        /// Arbitrary text never panics, and whatever parses re-parses from
        /// its canonical form to the same set (the fuzz target's property,
        /// run here because cargo-fuzz needs a nightly toolchain).
        #[test]
        fn arbitrary_text_never_panics(text in "[0-9,\\- \n:/a+]{0,40}") {
            if let Ok(set) = CpuSet::parse(&text) {
                prop_assert_eq!(CpuSet::parse(&set.to_string()).unwrap(), set);
            }
        }

        #[test]
        fn arbitrary_unicode_never_panics(text in "\\PC{0,40}") {
            let _ = CpuSet::parse(&text);
        }
    }
}
