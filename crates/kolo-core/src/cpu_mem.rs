//! [`CpuMem`]: an amount of CPU and memory, the two resources the manager's
//! batch / mid formulas, the agent's predictor and QoS strategies, and the
//! simulator's node model compute with.
//!
//! CPU is in milli-cores and memory in bytes, both `i64`. Arithmetic
//! saturates at the `i64` bounds, so a pathological input can distort a
//! number but never wrap it around to the opposite sign.

use std::ops::{Add, AddAssign, Sub};

use serde::Serialize;

/// An amount of CPU (milli-cores) and memory (bytes).
///
/// Not a [`ResourceVector`](crate::resources::ResourceVector): that one
/// holds any set of named resources and tells a missing resource from a
/// zero; a `CpuMem` always has exactly these two numbers, as plain fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct CpuMem {
    /// CPU, milli-cores.
    pub cpu: i64,
    /// Memory, bytes.
    pub memory: i64,
}

impl CpuMem {
    /// Zero CPU, zero memory.
    pub const ZERO: CpuMem = CpuMem { cpu: 0, memory: 0 };

    /// `cpu` milli-cores and `memory` bytes.
    pub const fn new(cpu: i64, memory: i64) -> CpuMem {
        CpuMem { cpu, memory }
    }

    /// Per resource, the larger amount (`quotav1.Max` on non-negative lists).
    #[must_use]
    pub fn max(self, other: CpuMem) -> CpuMem {
        CpuMem { cpu: self.cpu.max(other.cpu), memory: self.memory.max(other.memory) }
    }

    /// Per resource, the smaller amount.
    #[must_use]
    pub fn min(self, other: CpuMem) -> CpuMem {
        CpuMem { cpu: self.cpu.min(other.cpu), memory: self.memory.min(other.memory) }
    }

    /// Each amount clamped below at 0 (`quotav1.Max(x, zero)`).
    #[must_use]
    pub fn clamp_non_negative(self) -> CpuMem {
        self.max(CpuMem::ZERO)
    }

    /// `max(self − other, 0)` per resource (saturating).
    #[must_use]
    pub fn sub_non_negative(self, other: CpuMem) -> CpuMem {
        (self - other).clamp_non_negative()
    }
}

impl Add for CpuMem {
    type Output = CpuMem;
    /// Saturating per-resource sum.
    fn add(self, rhs: CpuMem) -> CpuMem {
        CpuMem {
            cpu: self.cpu.saturating_add(rhs.cpu),
            memory: self.memory.saturating_add(rhs.memory),
        }
    }
}

impl AddAssign for CpuMem {
    fn add_assign(&mut self, rhs: CpuMem) {
        *self = *self + rhs;
    }
}

impl Sub for CpuMem {
    type Output = CpuMem;
    /// Saturating per-resource difference (may be negative).
    fn sub(self, rhs: CpuMem) -> CpuMem {
        CpuMem {
            cpu: self.cpu.saturating_sub(rhs.cpu),
            memory: self.memory.saturating_sub(rhs.memory),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Each case: a, b, a + b, a − b, a.sub_non_negative(b).
    #[test]
    fn arithmetic_table() {
        let m = CpuMem::new;
        let cases = [
            (m(100, 5), m(30, 9), m(130, 14), m(70, -4), m(70, 0)),
            (
                m(i64::MAX, i64::MIN),
                m(1, -1),
                m(i64::MAX, i64::MIN),
                m(i64::MAX - 1, i64::MIN + 1),
                m(i64::MAX - 1, 0),
            ),
            (m(i64::MIN, 0), m(1, 0), m(i64::MIN + 1, 0), m(i64::MIN, 0), m(0, 0)),
            (
                m(-5, 7),
                m(i64::MIN, i64::MAX),
                m(i64::MIN, i64::MAX),
                m(i64::MAX - 4, 7 - i64::MAX),
                m(i64::MAX - 4, 0),
            ),
            (CpuMem::ZERO, CpuMem::ZERO, CpuMem::ZERO, CpuMem::ZERO, CpuMem::ZERO),
        ];
        for (a, b, sum, diff, floor) in cases {
            assert_eq!(a + b, sum, "{a:?} + {b:?}");
            let mut acc = a;
            acc += b;
            assert_eq!(acc, sum, "{a:?} += {b:?}");
            assert_eq!(a - b, diff, "{a:?} - {b:?}");
            assert_eq!(a.sub_non_negative(b), floor, "{a:?}.sub_non_negative({b:?})");
        }
    }

    #[test]
    fn min_max_clamp() {
        assert_eq!(CpuMem::new(-5, 7).clamp_non_negative(), CpuMem::new(0, 7));
        assert_eq!(CpuMem::new(1, 9).max(CpuMem::new(3, 2)), CpuMem::new(3, 9));
        assert_eq!(CpuMem::new(1, 9).min(CpuMem::new(3, 2)), CpuMem::new(1, 2));
        assert_eq!(CpuMem::default(), CpuMem::ZERO);
    }

    #[test]
    fn serializes_as_cpu_and_memory() {
        let json = serde_json::to_string(&CpuMem::new(1500, 2048)).unwrap();
        assert_eq!(json, r#"{"cpu":1500,"memory":2048}"#);
    }

    /// The exact result of `a op b` clamped to `i64`, computed in `i128`.
    fn saturate(exact: i128) -> i64 {
        exact.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    proptest! {
        #[test]
        fn add_and_sub_saturate_never_wrap(
            a in any::<(i64, i64)>(),
            b in any::<(i64, i64)>(),
        ) {
            let (x, y) = (CpuMem::new(a.0, a.1), CpuMem::new(b.0, b.1));
            let sum = x + y;
            prop_assert_eq!(sum.cpu, saturate(i128::from(a.0) + i128::from(b.0)));
            prop_assert_eq!(sum.memory, saturate(i128::from(a.1) + i128::from(b.1)));
            let diff = x - y;
            prop_assert_eq!(diff.cpu, saturate(i128::from(a.0) - i128::from(b.0)));
            prop_assert_eq!(diff.memory, saturate(i128::from(a.1) - i128::from(b.1)));
            // Never the opposite sign of the exact result.
            for (got, exact) in [
                (sum.cpu, i128::from(a.0) + i128::from(b.0)),
                (diff.memory, i128::from(a.1) - i128::from(b.1)),
            ] {
                prop_assert!(i128::from(got).signum() == exact.signum());
            }
            let floor = x.sub_non_negative(y);
            prop_assert!(floor.cpu >= 0 && floor.memory >= 0);
            prop_assert_eq!(floor, diff.clamp_non_negative());
        }

        #[test]
        fn min_max_bound_each_resource(a in any::<(i64, i64)>(), b in any::<(i64, i64)>()) {
            let (x, y) = (CpuMem::new(a.0, a.1), CpuMem::new(b.0, b.1));
            let (lo, hi) = (x.min(y), x.max(y));
            prop_assert_eq!(lo + hi, x + y);
            prop_assert!(lo.cpu <= hi.cpu && lo.memory <= hi.memory);
            prop_assert!(hi.cpu == a.0 || hi.cpu == b.0);
            prop_assert!(lo.memory == a.1 || lo.memory == b.1);
        }
    }
}
