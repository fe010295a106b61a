//! A set of CPU (or memory node) ids in the kernel's list format
//! (`0-3,8,10-11`), as `cpuset.cpus` / `cpuset.mems` hold them.

use std::fmt;

/// The largest CPU id accepted (the kernel's `NR_CPUS` maximum is 8192); a
/// garbage range like `0-4000000000` is an error, not a 500 MB allocation.
pub const MAX_CPU_ID: u32 = 8191;

/// A set of CPU ids. Compared as sets: `0-1` equals `0,1`.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    /// Bit `i % 64` of word `i / 64` is CPU `i`; no trailing zero words.
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// Parses the kernel list format. Whitespace around the list (the
    /// trailing newline) is ignored; the empty string is the empty set.
    pub fn parse(s: &str) -> Result<CpuSet, String> {
        let mut set = CpuSet::new();
        let s = s.trim();
        if s.is_empty() {
            return Ok(set);
        }
        for part in s.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (parse_id(lo)?, parse_id(hi)?),
                None => {
                    let id = parse_id(part)?;
                    (id, id)
                }
            };
            if lo > hi {
                return Err(format!("range {part:?} is reversed"));
            }
            for cpu in lo..=hi {
                set.insert(cpu);
            }
        }
        Ok(set)
    }

    /// Adds a CPU id (ids above [`MAX_CPU_ID`] are ignored).
    pub fn insert(&mut self, cpu: u32) {
        if cpu > MAX_CPU_ID {
            return;
        }
        let word = (cpu / 64) as usize;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (cpu % 64);
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.words.get((cpu / 64) as usize).is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// Number of CPUs.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// The union of both sets.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let (long, short) =
            if self.words.len() >= other.words.len() { (self, other) } else { (other, self) };
        let mut words = long.words.clone();
        for (w, o) in words.iter_mut().zip(&short.words) {
            *w |= o;
        }
        CpuSet { words }
    }

    /// The ids, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32).filter(move |b| w & (1 << b) != 0).map(move |b| i as u32 * 64 + b)
        })
    }
}

fn parse_id(s: &str) -> Result<u32, String> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{:?} is not a CPU id", super::error::cut(s)));
    }
    match s.parse::<u32>() {
        Ok(id) if id <= MAX_CPU_ID => Ok(id),
        _ => Err(format!("CPU id {:?} is above {MAX_CPU_ID}", super::error::cut(s))),
    }
}

impl fmt::Display for CpuSet {
    /// The canonical kernel list format: ascending, ranges collapsed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut iter = self.iter().peekable();
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while iter.peek() == Some(&(hi + 1)) {
                hi += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_prints_canonically() {
        for (input, canonical, len) in [
            ("", "", 0),
            ("\n", "", 0),
            ("0", "0", 1),
            ("0-3\n", "0-3", 4),
            ("3,0-1,2", "0-3", 4),
            ("0-1,5,7-8", "0-1,5,7-8", 5),
            ("63-65", "63-65", 3),
            ("8191", "8191", 1),
        ] {
            let set = CpuSet::parse(input).unwrap();
            assert_eq!(set.to_string(), canonical, "{input:?}");
            assert_eq!(set.len(), len, "{input:?}");
        }
    }

    #[test]
    fn rejects_garbage() {
        for input in ["a", "1-", "-1", "3-1", "0,,1", "8192", "0-4000000000", "1 2", "½"] {
            assert!(CpuSet::parse(input).is_err(), "{input:?}");
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::parse("0-1").unwrap();
        let b = CpuSet::parse("1,70").unwrap();
        assert!(!b.is_subset(&a));
        assert!(CpuSet::parse("1").unwrap().is_subset(&a));
        assert!(CpuSet::new().is_subset(&a));
        assert_eq!(a.union(&b).to_string(), "0-1,70");
        assert_eq!(b.union(&a), a.union(&b));
        assert!(a.contains(1) && !a.contains(2) && !a.contains(9000));
        assert_eq!(CpuSet::parse("0,1").unwrap(), a);
    }

    proptest! {
        #[test]
        fn display_round_trips(ids in proptest::collection::vec(0u32..300, 0..40)) {
            let mut set = CpuSet::new();
            for id in &ids {
                set.insert(*id);
            }
            let again = CpuSet::parse(&set.to_string()).unwrap();
            prop_assert_eq!(&again, &set);
            prop_assert!(set.is_subset(&set.union(&CpuSet::parse("5").unwrap())));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = CpuSet::parse(&s);
        }
    }
}
