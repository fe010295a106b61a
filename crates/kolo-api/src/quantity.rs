//! Kubernetes quantities (SKELETON: to be implemented).
use std::fmt;

/// The suffix family a quantity was written in; formatting keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySI,
    /// `n`, `u`, `m`, (none), `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSI,
    /// `e3`, `E6`, ...
    DecimalExponent,
}

/// A malformed or out-of-range quantity; quotes the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text is not a quantity.
    #[error("invalid quantity {input:?}: {reason}")]
    Invalid {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// An exact Kubernetes quantity.
#[derive(Debug, Clone)]
pub struct Quantity {
    _private: (),
}

impl Quantity {
    /// Parses a quantity exactly.
    pub fn parse(_input: &str) -> Result<Self, QuantityError> {
        todo!()
    }
    /// The amount × 1000, rounded up (away from zero), saturating at `i64` bounds.
    pub fn milli_value(&self) -> i64 {
        todo!()
    }
    /// The amount, rounded up (away from zero), saturating at `i64` bounds.
    pub fn value(&self) -> i64 {
        todo!()
    }
    /// A quantity of `milli` thousandths, in `DecimalSI`.
    pub fn from_milli(_milli: i64) -> Self {
        todo!()
    }
    /// A quantity of `value` whole units in the given format.
    pub fn from_value(_value: i64, _format: Format) -> Self {
        todo!()
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
    }
}
