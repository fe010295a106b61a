//! Exact Kubernetes quantities (`k8s.io/apimachinery/pkg/api/resource.Quantity`).
//!
//! A [`Quantity`] is parsed, compared and printed the way Kubernetes does it,
//! without ever going through floating point.
//!
//! # Grammar
//!
//! ```text
//! <quantity>        ::= <signedNumber><suffix>
//! <signedNumber>    ::= <number> | <sign><number>
//! <sign>            ::= "+" | "-"
//! <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//! <suffix>          ::= <binarySI> | <decimalSI> | <decimalExponent>
//! <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei            (powers of 1024)
//! <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E (powers of 1000)
//! <decimalExponent> ::= "e" <sign>? <digits> | "E" <sign>? <digits>
//! ```
//!
//! So `"1.5"`, `".5"`, `"5."`, `"1.G"`, `"-100m"`, `"2Gi"`, `"1e3"`, `"1E-3"`
//! and `"12e+6"` are quantities; `""`, `" 1"`, `"1 "`, `"1.1.M"`, `"12Qi"`,
//! `"1K"` (the kilo prefix is lower case), `"1e"` and `"0x10"` are not.
//! A `"E"` on its own is the exa suffix (`"1E"` is 10^18); followed by an
//! integer it is an exponent (`"1E3"` is 1000).
//!
//! # Value
//!
//! The amount is held exactly as a whole number of nano-units in an `i128`.
//! Like Kubernetes, parsing rounds a value finer than 1n *away from zero* to
//! the next nano (`"0.1n"` is `1n`, `"-1.0000000001"` is `-1000000001n`): a
//! request for a tiny non-zero amount never becomes zero. Every other value is
//! kept exactly.
//!
//! The magnitude must stay below 10^29 ([`Quantity::MAX`]): a decimal
//! quantity at or above it is rejected with [`QuantityError::OutOfRange`].
//! Like Kubernetes, a binary-suffixed quantity is instead silently capped at
//! 2^63-1 in magnitude (`"8Ei"` and `"9223372036854775807Ki"` are
//! 9223372036854775807).
//!
//! # Formatting
//!
//! A quantity remembers the [`Format`] of its suffix and [`Display`] prints the
//! canonical form Kubernetes' `Quantity.String()` emits in that format: no
//! fractional digits, the largest suffix that loses no precision, a sign only
//! when negative, and `"0"` for zero. `1.5` prints as `"1500m"`, `1.5Gi` as
//! `"1536Mi"`, `1000` as `"1k"`, `1e3` as `"1e3"`. A binary quantity whose
//! magnitude is below 1024 or that is not a whole number prints in the decimal
//! SI style (`0.5Ki` is `"512"`, `1.5` in binary format is `"1500m"`), and a
//! decimal SI quantity beyond the exa range falls back to an exponent
//! (`1000E` prints as `"1e21"`).
//!
//! Equality, ordering and hashing compare the amount only: `1`, `1000m`,
//! `1e0` and `0.0009765625Ki` are all equal.
//!
//! # Differences from Kubernetes
//!
//! * A number needs at least one digit: Kubernetes' scanner also reads `"."`,
//!   `"-"`, `"+"`, `"m"` or `"Ki"` as zero, which its documented grammar does
//!   not allow; they are errors here.
//! * The exponent of `e<int>` must fit an `i64`, as in Kubernetes, but is not
//!   then truncated to 32 bits (Kubernetes reads `"1e4294967296"` as `1`; it
//!   is out of range here).
//! * Decimal magnitudes of 10^29 and above are rejected rather than held in
//!   arbitrary precision.
//! * Kubernetes' `String()` sometimes echoes the text a quantity was parsed
//!   from when it believes it canonical (so `"+1k"` and `"1.234k"` print back
//!   unchanged there); [`Display`] always prints the canonical form (`"1k"`,
//!   `"1234"`), which Kubernetes parses to the same value.
//! * A binary-format amount above 2^63-1 in magnitude (only reachable through
//!   [`Quantity::from_value`]`(i64::MIN, ..)` or arithmetic) prints in decimal
//!   SI (`"-9223372036854775808"`), not as Kubernetes' `"-8Ei"`, which parsing
//!   would cap to -(2^63-1): printing then parsing always gives the same
//!   amount back.
//! * [`Quantity::value`], [`Quantity::milli_value`] and
//!   [`Quantity::scaled_value`] saturate at the `i64` bounds where Kubernetes'
//!   results are undefined.
//!
//! [`Display`]: std::fmt::Display

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Neg;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

/// Nano-units in one unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// The largest magnitude, in nano-units: 10^38 - 1, i.e. just under 10^29 units.
const MAX_NANOS: i128 = 99_999_999_999_999_999_999_999_999_999_999_999_999;
/// Decimal digits of `MAX_NANOS`.
const MAX_NANOS_DIGITS: i128 = 38;
/// Where Kubernetes caps binary-suffixed quantities: 2^63-1 units.
const BINARY_CAP_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;
/// At most this many characters of a faulty input are kept in an error.
const MAX_QUOTED_CHARS: usize = 64;
/// Binary suffixes, indexed by their power of 1024.
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

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

/// A malformed or out-of-range quantity; every message quotes the input.
///
/// Inputs longer than 64 characters are quoted up to there, followed by `...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantityError {
    /// The text is not a quantity.
    #[error("invalid quantity {input:?}: {reason}")]
    Invalid {
        /// The text as given (possibly shortened).
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The text holds a character no quantity can have there.
    #[error("invalid quantity {input:?}: unexpected character {character:?} at byte {position}")]
    UnexpectedCharacter {
        /// The text as given (possibly shortened).
        input: String,
        /// The offending character.
        character: char,
        /// Its byte offset in the input.
        position: usize,
    },
    /// The number is followed by something that is not a known suffix.
    #[error("invalid quantity {input:?}: unknown suffix {suffix:?}")]
    UnknownSuffix {
        /// The text as given (possibly shortened).
        input: String,
        /// The suffix (possibly shortened).
        suffix: String,
    },
    /// The magnitude is 10^29 or more.
    #[error("invalid quantity {input:?}: magnitude out of range (must be below 1e29)")]
    OutOfRange {
        /// The text as given (possibly shortened).
        input: String,
    },
}

impl QuantityError {
    /// The (possibly shortened) text that failed to parse.
    pub fn input(&self) -> &str {
        match self {
            QuantityError::Invalid { input, .. }
            | QuantityError::UnexpectedCharacter { input, .. }
            | QuantityError::UnknownSuffix { input, .. }
            | QuantityError::OutOfRange { input } => input,
        }
    }
}

/// `text`, cut after [`MAX_QUOTED_CHARS`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}...", &text[..end]),
    }
}

fn invalid(input: &str, reason: &'static str) -> QuantityError {
    QuantityError::Invalid { input: quote(input), reason }
}

/// An exact Kubernetes quantity: an amount and the [`Format`] to print it in.
///
/// See the [module documentation](self) for the grammar, the rounding and the
/// range. Comparisons look at the amount only.
#[derive(Clone, Copy)]
pub struct Quantity {
    /// The amount in nano-units; `|nanos| <= MAX_NANOS`.
    nanos: i128,
    format: Format,
}

/// What a suffix multiplies the number by.
#[derive(Clone, Copy)]
enum Multiplier {
    /// 10^exponent.
    Decimal(i64, Format),
    /// 1024^power, `power` in 0..=6.
    Binary(u32),
}

impl Quantity {
    /// Zero, in [`Format::DecimalSI`].
    pub const ZERO: Quantity = Quantity { nanos: 0, format: Format::DecimalSI };
    /// The largest quantity: 10^29 - 1n, in [`Format::DecimalSI`].
    pub const MAX: Quantity = Quantity { nanos: MAX_NANOS, format: Format::DecimalSI };
    /// The smallest (most negative) quantity: -(10^29 - 1n), in [`Format::DecimalSI`].
    pub const MIN: Quantity = Quantity { nanos: -MAX_NANOS, format: Format::DecimalSI };

    /// Parses a quantity exactly; see the [module documentation](self).
    ///
    /// Surrounding whitespace is an error here; the conversion from a
    /// `k8s-openapi` quantity and deserialization trim it first, as
    /// Kubernetes' JSON decoding does.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let bytes = input.as_bytes();
        if bytes.is_empty() {
            return Err(invalid(input, "empty string"));
        }
        let mut pos = 0;
        let negative = match bytes[0] {
            b'-' => {
                pos = 1;
                true
            }
            b'+' => {
                pos = 1;
                false
            }
            _ => false,
        };
        let whole_start = pos;
        pos = skip_digits(bytes, pos);
        let whole = &bytes[whole_start..pos];
        let mut fraction: &[u8] = &[];
        if bytes.get(pos) == Some(&b'.') {
            let fraction_start = pos + 1;
            pos = skip_digits(bytes, fraction_start);
            fraction = &bytes[fraction_start..pos];
        }

        // What follows the number is the suffix. Report a character no suffix
        // can hold before a suffix that is merely unknown.
        let suffix_start = pos;
        let stray = if whole.is_empty() && fraction.is_empty() {
            (pos < bytes.len()).then_some(pos)
        } else {
            bytes[pos..]
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'-'))
                .map(|offset| pos + offset)
        };
        if let Some(position) = stray {
            // Everything before `position` is ASCII, so it is a char boundary.
            let character = input[position..].chars().next().unwrap_or_default();
            return Err(QuantityError::UnexpectedCharacter {
                input: quote(input),
                character,
                position,
            });
        }
        if whole.is_empty() && fraction.is_empty() {
            return Err(invalid(input, "no digits"));
        }
        let suffix = &input[suffix_start..];
        let multiplier = interpret_suffix(input, suffix)?;

        let digits: Vec<u8> =
            whole.iter().chain(fraction).skip_while(|&&d| d == b'0').map(|&d| d - b'0').collect();
        // Power of ten that turns `digits` into nano-units, before the suffix.
        let nano_power = 9 - fraction.len() as i128;
        let (magnitude, format) = match multiplier {
            Multiplier::Decimal(exponent, format) => {
                let magnitude = nanos_from_digits(&digits, nano_power + i128::from(exponent))
                    .ok_or_else(|| QuantityError::OutOfRange { input: quote(input) })?;
                (magnitude, format)
            }
            Multiplier::Binary(power) => {
                let scaled = mul_pow2(&digits, 10 * power);
                let magnitude = nanos_from_digits(&scaled, nano_power)
                    .map_or(BINARY_CAP_NANOS, |m| m.min(BINARY_CAP_NANOS));
                // Kubernetes keeps a binary amount below one in decimal form.
                let format = if magnitude != 0 && magnitude < NANOS_PER_UNIT {
                    Format::DecimalSI
                } else {
                    Format::BinarySI
                };
                (magnitude, format)
            }
        };
        let nanos = if negative { -magnitude } else { magnitude };
        Ok(Quantity { nanos, format })
    }

    /// The amount × 1000, rounded up (away from zero) like Kubernetes'
    /// `MilliValue()`, saturating at `i64` bounds: `"0.1m"` gives 1, `"-0.1m"`
    /// gives -1.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// The amount, rounded up (away from zero) like Kubernetes' `Value()`,
    /// saturating at `i64` bounds: `"1.2"` gives 2, `"-0.5"` gives -1.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// The amount in units of 10^`scale`, rounded up (away from zero) like
    /// Kubernetes' `ScaledValue(scale)`, saturating at `i64` bounds:
    /// `scaled_value(-9)` is the amount in nano-units, `scaled_value(6)` in
    /// mega-units.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        let power = i64::from(scale) + 9;
        let scaled = if power >= 0 {
            if power > MAX_NANOS_DIGITS as i64 {
                // The divisor exceeds every magnitude: only the rounding is left.
                self.nanos.signum()
            } else {
                div_away_from_zero(self.nanos, 10i128.pow(power as u32))
            }
        } else {
            let factor = u32::try_from(-power).ok().and_then(|p| 10i128.checked_pow(p));
            match factor.and_then(|f| self.nanos.checked_mul(f)) {
                Some(scaled) => scaled,
                None => self.nanos.signum() * i128::MAX,
            }
        };
        saturate_i64(scaled)
    }

    /// A quantity of `milli` thousandths, in [`Format::DecimalSI`].
    pub fn from_milli(milli: i64) -> Self {
        Quantity { nanos: i128::from(milli) * 1_000_000, format: Format::DecimalSI }
    }

    /// A quantity of `value` whole units in the given format.
    pub fn from_value(value: i64, format: Format) -> Self {
        Quantity { nanos: i128::from(value) * NANOS_PER_UNIT, format }
    }

    /// A quantity of `nanos` nano-units in the given format, or `None` when
    /// the magnitude is 10^29 units or more.
    pub fn from_nanos(nanos: i128, format: Format) -> Option<Self> {
        (-MAX_NANOS..=MAX_NANOS).contains(&nanos).then_some(Quantity { nanos, format })
    }

    /// The exact amount in nano-units (every quantity is a whole number of them).
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// The format the quantity prints in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The same amount, printed in `format`.
    pub fn with_format(self, format: Format) -> Self {
        Quantity { format, ..self }
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Whether the amount is below zero.
    pub fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// -1, 0 or 1 as the amount is negative, zero or positive (Kubernetes' `Sign()`).
    pub fn signum(&self) -> i32 {
        self.nanos.signum() as i32
    }

    /// `self + rhs`, or `None` when the magnitude reaches 10^29.
    ///
    /// As in Kubernetes' `Add`, the result keeps `self`'s format unless `self`
    /// is zero, in which case it takes `rhs`'s.
    pub fn checked_add(&self, rhs: &Quantity) -> Option<Quantity> {
        let format = if self.is_zero() { rhs.format } else { self.format };
        Quantity::from_nanos(self.nanos + rhs.nanos, format)
    }

    /// `self - rhs`, or `None` when the magnitude reaches 10^29.
    ///
    /// As in Kubernetes' `Sub`, the result keeps `self`'s format unless `self`
    /// is zero, in which case it takes `rhs`'s.
    pub fn checked_sub(&self, rhs: &Quantity) -> Option<Quantity> {
        self.checked_add(&-*rhs)
    }
}

/// The index past the ASCII digits of `bytes` that start at `pos`.
fn skip_digits(bytes: &[u8], mut pos: usize) -> usize {
    while pos < bytes.len() && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    pos
}

/// What `suffix` multiplies by, as Kubernetes' suffixer interprets it.
fn interpret_suffix(input: &str, suffix: &str) -> Result<Multiplier, QuantityError> {
    use Format::{DecimalExponent, DecimalSI};
    let multiplier = match suffix {
        "" => Multiplier::Decimal(0, DecimalSI),
        "n" => Multiplier::Decimal(-9, DecimalSI),
        "u" => Multiplier::Decimal(-6, DecimalSI),
        "m" => Multiplier::Decimal(-3, DecimalSI),
        "k" => Multiplier::Decimal(3, DecimalSI),
        "M" => Multiplier::Decimal(6, DecimalSI),
        "G" => Multiplier::Decimal(9, DecimalSI),
        "T" => Multiplier::Decimal(12, DecimalSI),
        "P" => Multiplier::Decimal(15, DecimalSI),
        "E" => Multiplier::Decimal(18, DecimalSI),
        "Ki" => Multiplier::Binary(1),
        "Mi" => Multiplier::Binary(2),
        "Gi" => Multiplier::Binary(3),
        "Ti" => Multiplier::Binary(4),
        "Pi" => Multiplier::Binary(5),
        "Ei" => Multiplier::Binary(6),
        _ => {
            let exponent = suffix
                .strip_prefix(['e', 'E'])
                .and_then(|rest| parse_exponent(input, rest).transpose());
            match exponent {
                Some(exponent) => Multiplier::Decimal(exponent?, DecimalExponent),
                None => {
                    return Err(QuantityError::UnknownSuffix {
                        input: quote(input),
                        suffix: quote(suffix),
                    });
                }
            }
        }
    };
    Ok(multiplier)
}

/// Parses the integer after `e`/`E` like Go's `strconv.ParseInt(s, 10, 64)`:
/// `Ok(None)` when it is not an integer, an error when it overflows `i64`.
fn parse_exponent(input: &str, text: &str) -> Result<Option<i64>, QuantityError> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let mut value: i128 = 0;
    for d in digits.bytes() {
        value = value * 10 + i128::from(d - b'0');
        if value > i128::from(i64::MAX) + 1 {
            return Err(invalid(input, "exponent out of range"));
        }
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).map(Some).map_err(|_| invalid(input, "exponent out of range"))
}

/// `digits` (big-endian decimal digit values) × 2^`shift`, as digits.
fn mul_pow2(digits: &[u8], shift: u32) -> Vec<u8> {
    let factor: u128 = 1 << shift;
    let mut out = Vec::with_capacity(digits.len() + 20);
    let mut carry: u128 = 0;
    for &d in digits.iter().rev() {
        let x = u128::from(d) * factor + carry;
        out.push((x % 10) as u8);
        carry = x / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    out
}

/// ⌈`digits` × 10^`power`⌉ (a non-negative amount, rounded up to a whole
/// nano-unit), or `None` when it exceeds `MAX_NANOS`.
///
/// `digits` are big-endian decimal digit values. Runs in time linear in their
/// number whatever `power` is.
fn nanos_from_digits(digits: &[u8], power: i128) -> Option<i128> {
    let Some(first) = digits.iter().position(|&d| d != 0) else {
        return Some(0);
    };
    let last = digits.iter().rposition(|&d| d != 0).unwrap_or(first);
    let significant = &digits[first..=last];
    let power = power + (digits.len() - 1 - last) as i128;
    let count = significant.len() as i128;
    // 10^(count-1) <= significant < 10^count.
    if count + power > MAX_NANOS_DIGITS {
        return None;
    }
    let value = if power >= 0 {
        // Fewer than 39 digits in all: fits.
        digits_value(significant)?.checked_mul(10i128.checked_pow(power as u32)?)?
    } else if count <= -power {
        // Below one nano-unit and not zero: rounds up to one.
        1
    } else {
        // The digits dropped end in a non-zero one, so round up.
        let kept = (count + power) as usize;
        digits_value(&significant[..kept])? + 1
    };
    (value <= MAX_NANOS).then_some(value)
}

/// The value of at most 38 big-endian decimal digits.
fn digits_value(digits: &[u8]) -> Option<i128> {
    digits.iter().try_fold(0i128, |acc, &d| acc.checked_mul(10)?.checked_add(i128::from(d)))
}

/// `n / d` rounded away from zero; `d > 0`.
fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let quotient = n / d;
    if n % d == 0 { quotient } else { quotient + n.signum() }
}

fn saturate_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let sign = if self.nanos < 0 { "-" } else { "" };
        let magnitude = self.nanos.unsigned_abs();
        let nanos_per_unit = NANOS_PER_UNIT as u128;
        // Kubernetes prints a binary amount below 1024 or with a fraction in
        // decimal SI; so do we one above 2^63-1, which would parse back capped.
        let binary = self.format == Format::BinarySI
            && magnitude >= 1024 * nanos_per_unit
            && magnitude <= BINARY_CAP_NANOS as u128
            && magnitude.is_multiple_of(nanos_per_unit);
        if binary {
            let mut mantissa = magnitude / nanos_per_unit;
            let mut power = 0;
            while power < BINARY_SUFFIXES.len() - 1 && mantissa.is_multiple_of(1024) {
                mantissa /= 1024;
                power += 1;
            }
            return write!(f, "{sign}{mantissa}{}", BINARY_SUFFIXES[power]);
        }
        // Move the factors of ten into the exponent, then back down to a
        // multiple of three.
        let mut mantissa = magnitude;
        let mut exponent: i32 = -9;
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exponent += 1;
        }
        let canonical = exponent.div_euclid(3) * 3;
        mantissa *= 10u128.pow((exponent - canonical) as u32);
        let decimal_si = match canonical {
            -9 => Some("n"),
            -6 => Some("u"),
            -3 => Some("m"),
            0 => Some(""),
            3 => Some("k"),
            6 => Some("M"),
            9 => Some("G"),
            12 => Some("T"),
            15 => Some("P"),
            18 => Some("E"),
            _ => None,
        };
        match (self.format, decimal_si) {
            (Format::DecimalSI | Format::BinarySI, Some(suffix)) => {
                write!(f, "{sign}{mantissa}{suffix}")
            }
            _ if canonical == 0 => write!(f, "{sign}{mantissa}"),
            _ => write!(f, "{sign}{mantissa}e{canonical}"),
        }
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Quantity").field(&format_args!("{self}")).field(&self.format).finish()
    }
}

impl Default for Quantity {
    /// Zero, in [`Format::DecimalSI`].
    fn default() -> Self {
        Quantity::ZERO
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl Neg for Quantity {
    type Output = Quantity;

    /// The opposite amount, in the same format (the range is symmetric).
    fn neg(self) -> Quantity {
        Quantity { nanos: -self.nanos, format: self.format }
    }
}

impl TryFrom<&K8sQuantity> for Quantity {
    type Error = QuantityError;

    /// Parses the string of a `k8s-openapi` quantity, ignoring surrounding
    /// whitespace as Kubernetes' JSON decoding does.
    fn try_from(quantity: &K8sQuantity) -> Result<Self, Self::Error> {
        Quantity::parse(quantity.0.trim())
    }
}

impl TryFrom<K8sQuantity> for Quantity {
    type Error = QuantityError;

    /// Parses the string of a `k8s-openapi` quantity, ignoring surrounding
    /// whitespace as Kubernetes' JSON decoding does.
    fn try_from(quantity: K8sQuantity) -> Result<Self, Self::Error> {
        Quantity::try_from(&quantity)
    }
}

impl From<&Quantity> for K8sQuantity {
    /// The canonical string.
    fn from(quantity: &Quantity) -> Self {
        K8sQuantity(quantity.to_string())
    }
}

impl From<Quantity> for K8sQuantity {
    /// The canonical string.
    fn from(quantity: Quantity) -> Self {
        K8sQuantity(quantity.to_string())
    }
}

/// The amount of a `k8s-openapi` quantity × 1000, rounded up (away from zero)
/// and saturating, like Kubernetes' `MilliValue()`; e.g. CPU in millicores.
pub fn parse_milli(quantity: &K8sQuantity) -> Result<i64, QuantityError> {
    Quantity::try_from(quantity).map(|q| q.milli_value())
}

/// The amount of a `k8s-openapi` quantity, rounded up (away from zero) and
/// saturating, like Kubernetes' `Value()`; e.g. memory in bytes.
pub fn parse_value(quantity: &K8sQuantity) -> Result<i64, QuantityError> {
    Quantity::try_from(quantity).map(|q| q.value())
}

impl serde::Serialize for Quantity {
    /// The canonical string.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    /// A quantity string (surrounding whitespace ignored) or, as Kubernetes
    /// accepts, a number.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

impl QuantityVisitor {
    fn integer<E: serde::de::Error>(value: i128) -> Result<Quantity, E> {
        value
            .checked_mul(NANOS_PER_UNIT)
            .and_then(|nanos| Quantity::from_nanos(nanos, Format::DecimalSI))
            .ok_or_else(|| E::custom(QuantityError::OutOfRange { input: value.to_string() }))
    }
}

impl serde::de::Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes quantity (a string such as \"100m\" or \"1Gi\", or a number)")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
        Quantity::parse(v.trim()).map_err(E::custom)
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Quantity, E> {
        let text = std::str::from_utf8(v)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Bytes(v), &self))?;
        self.visit_str(text)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
        Self::integer(i128::from(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
        Self::integer(i128::from(v))
    }

    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Quantity, E> {
        Self::integer(v)
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Quantity, E> {
        match i128::try_from(v) {
            Ok(v) => Self::integer(v),
            Err(_) => Err(E::custom(QuantityError::OutOfRange { input: v.to_string() })),
        }
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
        if !v.is_finite() {
            return Err(E::invalid_value(serde::de::Unexpected::Float(v), &self));
        }
        // The shortest decimal that reads back as `v`: the number as written,
        // for any number written with at most 17 significant digits.
        self.visit_str(&v.to_string())
    }
}

impl schemars::JsonSchema for Quantity {
    fn schema_name() -> Cow<'static, str> {
        "Quantity".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "kolo_api::quantity::Quantity".into()
    }

    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        kubernetes_schema()
    }
}

/// The pattern the Kubernetes API server's OpenAPI schema gives quantities.
const KUBERNETES_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// The schema of a quantity as the API server validates it: an int-or-string
/// matching [`KUBERNETES_PATTERN`]. Structural, so CRDs can use it.
pub(crate) fn kubernetes_schema() -> schemars::Schema {
    schemars::json_schema!({
        "description": "A Kubernetes quantity: a number with an optional SI, binary or exponent suffix, e.g. \"100m\", \"1.5\", \"2Gi\" or \"1e3\".",
        "x-kubernetes-int-or-string": true,
        "pattern": KUBERNETES_PATTERN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::{BinarySI, DecimalExponent, DecimalSI};

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn nanos(units: i128, scale: i32) -> i128 {
        if scale >= -9 { units * 10i128.pow((scale + 9) as u32) } else { panic!("finer than nano") }
    }

    /// input, amount (mantissa, power of ten), format after parsing.
    const PARSED: &[(&str, i128, i32, Format)] = &[
        // Zero in every spelling.
        ("0", 0, 0, DecimalSI),
        ("0n", 0, 0, DecimalSI),
        ("0u", 0, 0, DecimalSI),
        ("0m", 0, 0, DecimalSI),
        ("0k", 0, 0, DecimalSI),
        ("0M", 0, 0, DecimalSI),
        ("0G", 0, 0, DecimalSI),
        ("0T", 0, 0, DecimalSI),
        ("0P", 0, 0, DecimalSI),
        ("0E", 0, 0, DecimalSI),
        ("0Ki", 0, 0, BinarySI),
        ("0Mi", 0, 0, BinarySI),
        ("0Gi", 0, 0, BinarySI),
        ("0Ti", 0, 0, BinarySI),
        ("0Pi", 0, 0, BinarySI),
        ("0Ei", 0, 0, BinarySI),
        ("0e0", 0, 0, DecimalExponent),
        ("-0", 0, 0, DecimalSI),
        ("+0.000", 0, 0, DecimalSI),
        ("0e999999999", 0, 0, DecimalExponent),
        ("00000", 0, 0, DecimalSI),
        // Plain numbers.
        ("1", 1, 0, DecimalSI),
        ("9", 9, 0, DecimalSI),
        ("007", 7, 0, DecimalSI),
        // Binary suffixes.
        ("1Ki", 1024, 0, BinarySI),
        ("8Ki", 8 * 1024, 0, BinarySI),
        ("7Mi", 7 << 20, 0, BinarySI),
        ("6Gi", 6 << 30, 0, BinarySI),
        ("5Ti", 5 << 40, 0, BinarySI),
        ("4Pi", 4 << 50, 0, BinarySI),
        ("3Ei", 3 << 60, 0, BinarySI),
        ("10Ti", 10 << 40, 0, BinarySI),
        ("100Ti", 100 << 40, 0, BinarySI),
        // Decimal SI suffixes.
        ("5n", 5, -9, DecimalSI),
        ("4u", 4, -6, DecimalSI),
        ("3m", 3, -3, DecimalSI),
        ("8k", 8, 3, DecimalSI),
        ("50k", 5, 4, DecimalSI),
        ("7M", 7, 6, DecimalSI),
        ("6G", 6, 9, DecimalSI),
        ("5T", 5, 12, DecimalSI),
        ("40T", 4, 13, DecimalSI),
        ("300T", 3, 14, DecimalSI),
        ("2P", 2, 15, DecimalSI),
        ("1E", 1, 18, DecimalSI),
        ("12E", 12, 18, DecimalSI),
        // Decimal exponents.
        ("1E-3", 1, -3, DecimalExponent),
        ("1e3", 1, 3, DecimalExponent),
        ("1E6", 1, 6, DecimalExponent),
        ("1e9", 1, 9, DecimalExponent),
        ("1E12", 1, 12, DecimalExponent),
        ("1e13", 1, 13, DecimalExponent),
        ("1e14", 1, 14, DecimalExponent),
        ("1e15", 1, 15, DecimalExponent),
        ("1E18", 1, 18, DecimalExponent),
        ("12e+6", 12, 6, DecimalExponent),
        ("1e0", 1, 0, DecimalExponent),
        ("1e-9", 1, -9, DecimalExponent),
        ("2e007", 2, 7, DecimalExponent),
        ("1e28", 1, 28, DecimalExponent),
        // Fractions.
        ("100.035k", 100035, 0, DecimalSI),
        ("0.001", 1, -3, DecimalSI),
        ("0.0005k", 5, -1, DecimalSI),
        ("0.005", 5, -3, DecimalSI),
        ("0.05", 5, -2, DecimalSI),
        ("0.5", 5, -1, DecimalSI),
        ("0.00050k", 5, -1, DecimalSI),
        ("0.00500", 5, -3, DecimalSI),
        ("0.50000", 5, -1, DecimalSI),
        ("0.5e0", 5, -1, DecimalExponent),
        ("0.5e-1", 5, -2, DecimalExponent),
        ("0.5e-2", 5, -3, DecimalExponent),
        ("10.035M", 10035, 3, DecimalSI),
        ("1.2e3", 12, 2, DecimalExponent),
        ("1.3E+6", 13, 5, DecimalExponent),
        ("1.40e9", 14, 8, DecimalExponent),
        ("1.53E12", 153, 10, DecimalExponent),
        ("1.6e15", 16, 14, DecimalExponent),
        ("1.7E18", 17, 17, DecimalExponent),
        ("9.01", 901, -2, DecimalSI),
        ("8.1k", 81, 2, DecimalSI),
        ("7.123456M", 7123456, 0, DecimalSI),
        ("6.987654321G", 6987654321, 0, DecimalSI),
        ("5.444T", 5444, 9, DecimalSI),
        ("40.1T", 401, 11, DecimalSI),
        ("300.2T", 3002, 11, DecimalSI),
        ("2.5P", 25, 14, DecimalSI),
        ("1.01E", 101, 16, DecimalSI),
        // Rounded up to the next nano, away from zero.
        ("3.001n", 4, -9, DecimalSI),
        ("1.1E-9", 2, -9, DecimalExponent),
        ("0.0000000001", 1, -9, DecimalSI),
        ("0.0000000005", 1, -9, DecimalSI),
        ("0.00000000050", 1, -9, DecimalSI),
        ("0.5e-9", 1, -9, DecimalExponent),
        ("0.9n", 1, -9, DecimalSI),
        ("0.1n", 1, -9, DecimalSI),
        ("0.00000012345", 124, -9, DecimalSI),
        ("0.00000012354", 124, -9, DecimalSI),
        ("1e-30", 1, -9, DecimalExponent),
        ("1e-9223372036854775808", 1, -9, DecimalExponent),
        // Binary quantities are capped at 2^63-1.
        ("8Ei", i64::MAX as i128, 0, BinarySI),
        ("9Ei", i64::MAX as i128, 0, BinarySI),
        ("9223372036854775807Ki", i64::MAX as i128, 0, BinarySI),
        ("100000000000000000000000000000000000000000Ei", i64::MAX as i128, 0, BinarySI),
        ("7.99999Ei", 922336050763972973953024, -5, BinarySI),
        // Fractional binary quantities.
        ("100.035Ki", 10243584, -2, BinarySI),
        ("0.5Mi", 512 * 1024, 0, BinarySI),
        ("0.05Gi", 536870912, -1, BinarySI),
        ("0.025Ti", 274877906944, -1, BinarySI),
        ("1.5Gi", 1536 << 20, 0, BinarySI),
        // Below one, a binary quantity turns decimal.
        ("0.000000000001Ki", 2, -9, DecimalSI),
        (".001Ki", 1024, -3, BinarySI),
        (".000001Ki", 1024, -6, DecimalSI),
        ("0.5Ki", 512, 0, BinarySI),
        // Odd but valid spellings.
        (".001", 1, -3, DecimalSI),
        (".0001k", 100, -3, DecimalSI),
        ("1.", 1, 0, DecimalSI),
        ("1.G", 1, 9, DecimalSI),
        ("+1k", 1, 3, DecimalSI),
        ("-.5", -5, -1, DecimalSI),
    ];

    #[test]
    fn parses_amount_and_format() {
        for &(text, mantissa, scale, format) in PARSED {
            let expected = nanos(mantissa, scale);
            for (prefix, sign) in [("", 1), ("+", 1), ("-", -1)] {
                if !prefix.is_empty() && text.starts_with(['+', '-']) {
                    continue;
                }
                let input = format!("{prefix}{text}");
                let got = q(&input);
                assert_eq!(got.as_nanos(), sign * expected, "{input:?}");
                assert_eq!(got.format(), format, "{input:?}");
            }
        }
    }

    #[test]
    fn rejects_malformed_text() {
        // input, what the message says after quoting it.
        let cases: &[(&str, &str)] = &[
            ("", r#"empty string"#),
            (" 1", r#"unexpected character ' ' at byte 0"#),
            ("1 ", r#"unexpected character ' ' at byte 1"#),
            ("1\n", r#"unexpected character '\n' at byte 1"#),
            ("1.1.M", r#"unexpected character '.' at byte 3"#),
            ("1+1.0M", r#"unexpected character '.' at byte 3"#),
            ("0.1am", r#"unknown suffix "am""#),
            ("aoeu", r#"unexpected character 'a' at byte 0"#),
            ("1µ", r#"unexpected character 'µ' at byte 1"#),
            ("0x10", r#"unknown suffix "x10""#),
            ("1,5", r#"unexpected character ',' at byte 1"#),
            ("--1", r#"unexpected character '-' at byte 1"#),
            ("1e3.5", r#"unexpected character '.' at byte 3"#),
            ("12Qi", r#"unknown suffix "Qi""#),
            ("12Ki ", r#"unexpected character ' ' at byte 4"#),
            ("12ki", r#"unknown suffix "ki""#),
            ("1K", r#"unknown suffix "K""#),
            ("0.1mi", r#"unknown suffix "mi""#),
            (".5i", r#"unknown suffix "i""#),
            ("1i", r#"unknown suffix "i""#),
            ("-3.01i", r#"unknown suffix "i""#),
            ("1e", r#"unknown suffix "e""#),
            ("-3.01e-", r#"unknown suffix "e-""#),
            ("1e+", r#"unknown suffix "e+""#),
            ("1Ee3", r#"unknown suffix "Ee3""#),
            ("1mm", r#"unknown suffix "mm""#),
            ("1m3", r#"unknown suffix "m3""#),
            ("1Ki5", r#"unknown suffix "Ki5""#),
            ("1k+5", r#"unknown suffix "k+5""#),
            ("1e+-3", r#"unknown suffix "e+-3""#),
            (".", r#"no digits"#),
            ("-", r#"no digits"#),
            ("+", r#"no digits"#),
            ("-.", r#"no digits"#),
            ("Ki", r#"unexpected character 'K' at byte 0"#),
            ("m", r#"unexpected character 'm' at byte 0"#),
            ("e3", r#"unexpected character 'e' at byte 0"#),
            ("1e9223372036854775808", r#"exponent out of range"#),
            ("0e-9223372036854775809", r#"exponent out of range"#),
            ("1e29", r#"magnitude out of range (must be below 1e29)"#),
            ("100000000000E", r#"magnitude out of range (must be below 1e29)"#),
            ("1e4294967296", r#"magnitude out of range (must be below 1e29)"#),
        ];
        for &(input, reason) in cases {
            let err = Quantity::parse(input).expect_err(input);
            let message = format!("invalid quantity {input:?}: {reason}");
            assert_eq!(err.to_string(), message, "{input:?}");
            assert_eq!(err.input(), input);
            assert_eq!(input.parse::<Quantity>(), Err(err));
        }
    }

    #[test]
    fn error_quotes_long_input_shortened() {
        let long = format!("1{}x", "0".repeat(100));
        let err = Quantity::parse(&long).unwrap_err();
        let expected_input = format!("1{}...", "0".repeat(63));
        assert_eq!(err.input(), expected_input);
        assert!(err.to_string().starts_with(&format!("invalid quantity {expected_input:?}")));
    }

    #[test]
    fn range_limits() {
        let max = q("99999999999999999999999999999.999999999");
        assert_eq!(max, Quantity::MAX);
        assert_eq!(-max, Quantity::MIN);
        assert_eq!(q("-99999999999999999999999999999.999999999"), Quantity::MIN);
        // Rounding up to a nano can push the magnitude out of range.
        assert!(matches!(
            Quantity::parse("99999999999999999999999999999.9999999991"),
            Err(QuantityError::OutOfRange { .. })
        ));
        assert!(matches!(Quantity::parse("-1e29"), Err(QuantityError::OutOfRange { .. })));
        assert_eq!(q("9.9999e28").as_nanos(), 99999 * 10i128.pow(33));
        assert!(Quantity::from_nanos(MAX_NANOS + 1, DecimalSI).is_none());
        assert!(Quantity::from_nanos(-MAX_NANOS - 1, DecimalSI).is_none());
        assert_eq!(Quantity::from_nanos(-MAX_NANOS, BinarySI).unwrap(), Quantity::MIN);
        assert_eq!(Quantity::MAX.checked_add(&q("1n")), None);
        assert_eq!(Quantity::MIN.checked_sub(&q("1n")), None);
    }

    #[test]
    fn absurd_inputs_are_quick() {
        let many_digits = "9".repeat(1_000_000);
        assert!(Quantity::parse(&many_digits).is_err());
        assert_eq!(q(&format!("{many_digits}Ki")).value(), i64::MAX);
        let tiny = format!("0.{}1", "0".repeat(1_000_000));
        assert_eq!(q(&tiny).as_nanos(), 1);
        assert_eq!(q(&format!("{tiny}Ei")).as_nanos(), 1);
        let zeros = format!("{}e9223372036854775807", "0".repeat(1_000_000));
        assert!(q(&zeros).is_zero());
        assert_eq!(q("1e-9223372036854775808").as_nanos(), 1);
        let exponent = format!("1e{}", "0".repeat(1_000_000));
        assert_eq!(q(&exponent).value(), 1);
        assert_eq!(q(&format!("1{}e-1000000", "0".repeat(1_000_000))).value(), 1);
    }

    #[test]
    fn canonical_formatting() {
        // amount (mantissa, power of ten), format, canonical text.
        let cases: &[(i128, i32, Format, &str)] = &[
            (1 << 30, 0, BinarySI, "1Gi"),
            (300 << 20, 0, BinarySI, "300Mi"),
            (6 * 1024, 0, BinarySI, "6Ki"),
            (1001 << 30, 0, BinarySI, "1001Gi"),
            (1 << 40, 0, BinarySI, "1Ti"),
            (1 << 50, 0, BinarySI, "1Pi"),
            (1 << 60, 0, BinarySI, "1Ei"),
            (7 << 60, 0, BinarySI, "7Ei"),
            ((1 << 63) - (1 << 50), 0, BinarySI, "8191Pi"),
            (1 << 63, 0, BinarySI, "9223372036854775808"),
            (1 << 70, 0, BinarySI, "1180591620717411303424"),
            (i64::MAX as i128, 0, BinarySI, "9223372036854775807"),
            (1536 << 20, 0, BinarySI, "1536Mi"),
            (1024, 0, BinarySI, "1Ki"),
            (1025, 0, BinarySI, "1025"),
            (1023, 0, BinarySI, "1023"),
            (2000, 0, BinarySI, "2000"),
            (1000, 0, BinarySI, "1k"),
            (5, 0, BinarySI, "5"),
            (500, -3, BinarySI, "500m"),
            (1234567, -3, BinarySI, "1234567m"),
            (10241, -1, BinarySI, "1024100m"),
            (0, 0, BinarySI, "0"),
            (1, 9, DecimalSI, "1G"),
            (1000, 6, DecimalSI, "1G"),
            (1000000, 3, DecimalSI, "1G"),
            (1000000000, 0, DecimalSI, "1G"),
            (1, -3, DecimalSI, "1m"),
            (80, -3, DecimalSI, "80m"),
            (1080, -3, DecimalSI, "1080m"),
            (108, -2, DecimalSI, "1080m"),
            (15, -1, DecimalSI, "1500m"),
            (300, 6, DecimalSI, "300M"),
            (100, 6, DecimalSI, "100M"),
            (1, 12, DecimalSI, "1T"),
            (1, 15, DecimalSI, "1P"),
            (1, 18, DecimalSI, "1E"),
            (12, 18, DecimalSI, "12E"),
            (1, 21, DecimalSI, "1e21"),
            (5, 21, DecimalSI, "5e21"),
            (1, 24, DecimalSI, "1e24"),
            (10, 21, DecimalSI, "10e21"),
            (1234567, 6, DecimalSI, "1234567M"),
            (3, 3, DecimalSI, "3k"),
            (0, 0, DecimalSI, "0"),
            (1, -9, DecimalSI, "1n"),
            (80, -9, DecimalSI, "80n"),
            (1080, -9, DecimalSI, "1080n"),
            (108, -8, DecimalSI, "1080n"),
            (1, -6, DecimalSI, "1u"),
            (80, -6, DecimalSI, "80u"),
            (1080, -6, DecimalSI, "1080u"),
            (12345, -4, DecimalSI, "1234500u"),
            (1, 9, DecimalExponent, "1e9"),
            (1, -3, DecimalExponent, "1e-3"),
            (1, -9, DecimalExponent, "1e-9"),
            (80, -3, DecimalExponent, "80e-3"),
            (300, 6, DecimalExponent, "300e6"),
            (1, 12, DecimalExponent, "1e12"),
            (1, 3, DecimalExponent, "1e3"),
            (3, 3, DecimalExponent, "3e3"),
            (1500, 0, DecimalExponent, "1500"),
            (15, -1, DecimalExponent, "1500e-3"),
            (1, 27, DecimalExponent, "1e27"),
            (0, 0, DecimalExponent, "0"),
        ];
        for &(mantissa, scale, format, text) in cases {
            let quantity = Quantity::from_nanos(nanos(mantissa, scale), format).unwrap();
            assert_eq!(quantity.to_string(), text, "{mantissa}e{scale} {format:?}");
            if !quantity.is_zero() {
                assert_eq!((-quantity).to_string(), format!("-{text}"));
            }
            // The canonical text parses back to the same amount.
            assert_eq!(q(text), quantity, "{text}");
        }
    }

    #[test]
    fn parse_then_print() {
        let cases: &[(&str, &str)] = &[
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            ("1.5", "1500m"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("1000", "1k"),
            ("100M", "100M"),
            ("0.1", "100m"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1000e0", "1e3"),
            ("1.5e0", "1500e-3"),
            ("12e+6", "12e6"),
            ("1000E", "1e21"),
            ("+1k", "1k"),
            ("01k", "1k"),
            ("1.234k", "1234"),
            ("0.0", "0"),
            ("-0Ki", "0"),
            ("8Ei", "9223372036854775807"),
            ("4Ei", "4Ei"),
            ("1.0001Ki", "1024102400u"),
            ("0.1n", "1n"),
            ("1.5n", "2n"),
        ];
        for &(input, text) in cases {
            assert_eq!(q(input).to_string(), text, "{input:?}");
            if text != "0" && !input.starts_with('+') {
                assert_eq!(q(&format!("-{input}")).to_string(), format!("-{text}"));
            }
        }
    }

    #[test]
    fn rounding_of_integer_views() {
        // input, milli_value, value.
        let cases: &[(&str, i64, i64)] = &[
            ("0", 0, 0),
            ("1", 1000, 1),
            ("100m", 100, 1),
            ("1500m", 1500, 2),
            ("1.5", 1500, 2),
            ("0.1m", 1, 1),
            ("-0.1m", -1, -1),
            ("1n", 1, 1),
            ("-1n", -1, -1),
            ("0.5", 500, 1),
            ("-0.5", -500, -1),
            ("-1.2", -1200, -2),
            ("1.0001m", 2, 1),
            ("2Gi", 2147483648000, 2147483648),
            ("1Ei", i64::MAX, 1 << 60),
            ("-1Ei", i64::MIN, -(1 << 60)),
            ("8Ei", i64::MAX, i64::MAX),
            ("-8Ei", i64::MIN, -i64::MAX),
            ("9223372036854775807", i64::MAX, i64::MAX),
            ("9223372036854775808", i64::MAX, i64::MAX),
            ("-9223372036854775808", i64::MIN, i64::MIN),
            ("-9223372036854775809", i64::MIN, i64::MIN),
            ("9223372036854775.807", i64::MAX, 9223372036854776),
            ("9223372036854775.808", i64::MAX, 9223372036854776),
            ("-9223372036854775.808", i64::MIN, -9223372036854776),
            ("1e28", i64::MAX, i64::MAX),
            ("-1e28", i64::MIN, i64::MIN),
        ];
        for &(input, milli, value) in cases {
            let quantity = q(input);
            assert_eq!(quantity.milli_value(), milli, "milli_value of {input:?}");
            assert_eq!(quantity.value(), value, "value of {input:?}");
        }
    }

    #[test]
    fn scaled_values() {
        // From Kubernetes' scaled-value table: 1 at one scale, read at another.
        let scales = [-9, -6, -3, 0];
        for from in scales {
            for to in scales {
                let quantity = Quantity::from_nanos(nanos(1, from), DecimalSI).unwrap();
                let expected = if from >= to { 10i64.pow((from - to) as u32) } else { 1 };
                assert_eq!(quantity.scaled_value(to), expected, "1e{from} at 1e{to}");
            }
        }
        let hundred = q("100");
        assert_eq!(hundred.scaled_value(-2), 10_000);
        assert_eq!(hundred.scaled_value(2), 1);
        assert_eq!(hundred.scaled_value(3), 1);
        assert_eq!(hundred.scaled_value(i32::MAX), 1);
        assert_eq!((-hundred).scaled_value(i32::MAX), -1);
        assert_eq!(q("1n").scaled_value(-9), 1);
        assert_eq!(q("1n").scaled_value(-12), 1000);
        assert_eq!(q("1n").scaled_value(-27), 1_000_000_000_000_000_000);
        assert_eq!(q("1n").scaled_value(-28), i64::MAX);
        assert_eq!(q("-1n").scaled_value(i32::MIN), i64::MIN);
        assert_eq!(Quantity::ZERO.scaled_value(i32::MIN), 0);
        assert_eq!(Quantity::ZERO.scaled_value(i32::MAX), 0);
    }

    #[test]
    fn constructors() {
        let cases: &[(i64, &str)] = &[
            (1, "1m"),
            (1000, "1"),
            (1500, "1500m"),
            (1234000, "1234"),
            (-250, "-250m"),
            (0, "0"),
        ];
        for &(milli, text) in cases {
            let quantity = Quantity::from_milli(milli);
            assert_eq!(quantity.to_string(), text);
            assert_eq!(quantity.format(), DecimalSI);
            assert_eq!(quantity.milli_value(), milli);
        }
        for milli in [i64::MIN, i64::MAX] {
            assert_eq!(Quantity::from_milli(milli).milli_value(), milli);
        }

        let cases: &[(i64, Format, &str)] = &[
            (1, DecimalSI, "1"),
            (1000, DecimalSI, "1k"),
            (1234000, DecimalSI, "1234k"),
            (1024, BinarySI, "1Ki"),
            (1024 * 1024, BinarySI, "1Mi"),
            (1000, BinarySI, "1k"),
            (1000000, DecimalExponent, "1e6"),
            (i64::MIN, BinarySI, "-9223372036854775808"),
            (i64::MIN + (1 << 50), BinarySI, "-8191Pi"),
            (i64::MAX, DecimalSI, "9223372036854775807"),
        ];
        for &(value, format, text) in cases {
            let quantity = Quantity::from_value(value, format);
            assert_eq!(quantity.to_string(), text);
            assert_eq!(quantity.format(), format);
            assert_eq!(quantity.value(), value);
            assert_eq!(q(text).value(), value);
        }
    }

    #[test]
    fn comparison_is_by_amount() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |q: &Quantity| {
            let mut hasher = DefaultHasher::new();
            q.hash(&mut hasher);
            hasher.finish()
        };
        let equal = ["1", "1000m", "1e0", "0.001k", "1000000000n", "+1.000", "0.0009765625Ki"];
        for a in equal {
            for b in equal {
                assert_eq!(q(a), q(b), "{a} == {b}");
                assert_eq!(hash(&q(a)), hash(&q(b)));
            }
        }
        let ascending = [
            "-1Ei", "-1G", "-1", "-1m", "-1n", "0", "1n", "1m", "50m", "100m", "1", "1Ki", "1M",
            "1Mi", "100Gi", "10000T", "1E", "1e21",
        ];
        for pair in ascending.windows(2) {
            let (a, b) = (q(pair[0]), q(pair[1]));
            assert!(a < b, "{} < {}", pair[0], pair[1]);
            assert_eq!(b.cmp(&a), Ordering::Greater);
            assert_ne!(a, b);
        }
        assert!(q("100m") > q("50m"));
        assert!(q("50m") < q("100m"));
        assert_eq!(q("0").cmp(&q("0Ki")), Ordering::Equal);
    }

    #[test]
    fn helpers() {
        assert!(q("0Ki").is_zero());
        assert!(!q("1n").is_zero());
        assert_eq!(q("-1n").signum(), -1);
        assert_eq!(q("0").signum(), 0);
        assert_eq!(q("5Gi").signum(), 1);
        assert!(q("-3m").is_negative());
        assert_eq!(Quantity::default(), Quantity::ZERO);
        assert_eq!(Quantity::default().to_string(), "0");
        assert_eq!(q("1.5Gi").with_format(DecimalSI).to_string(), "1610612736");
        assert_eq!(q("1500m").with_format(DecimalExponent).to_string(), "1500e-3");
        let sum = q("0").checked_add(&q("1Gi")).unwrap();
        assert_eq!((sum.to_string(), sum.format()), ("1Gi".to_owned(), BinarySI));
        let sum = q("100m").checked_add(&q("1Ki")).unwrap();
        assert_eq!(sum.to_string(), "1024100m");
        let difference = q("1Gi").checked_sub(&q("512Mi")).unwrap();
        assert_eq!(difference.to_string(), "512Mi");
        assert_eq!(q("0").checked_sub(&q("1Gi")).unwrap().to_string(), "-1Gi");
        assert_eq!(format!("{:?}", q("1.5")), "Quantity(1500m, DecimalSI)");
    }

    #[test]
    fn k8s_openapi_interop() {
        let k8s = K8sQuantity("1500m".to_owned());
        assert_eq!(parse_milli(&k8s), Ok(1500));
        assert_eq!(parse_value(&k8s), Ok(2));
        assert_eq!(Quantity::try_from(&k8s), Ok(q("1.5")));
        assert_eq!(Quantity::try_from(k8s.clone()), Ok(q("1.5")));
        assert_eq!(parse_value(&K8sQuantity(" 2Gi\n".to_owned())), Ok(2 << 30));
        assert_eq!(parse_milli(&K8sQuantity("0.1m".to_owned())), Ok(1));
        let err = parse_milli(&K8sQuantity("12Qi".to_owned())).unwrap_err();
        assert_eq!(err.to_string(), r#"invalid quantity "12Qi": unknown suffix "Qi""#);
        assert_eq!(K8sQuantity::from(q("1.5Gi")), K8sQuantity("1536Mi".to_owned()));
        assert_eq!(K8sQuantity::from(&q("1000")), K8sQuantity("1k".to_owned()));
    }

    #[test]
    fn serde_json_round_trip() {
        let value = q("1.5Gi");
        assert_eq!(serde_json::to_string(&value).unwrap(), r#""1536Mi""#);
        let cases: &[(&str, &str)] = &[
            (r#""100m""#, "100m"),
            (r#"" 1""#, "1"),
            (r#""1 ""#, "1"),
            ("1", "1"),
            (" 1", "1"),
            ("-1", "-1"),
            ("10", "10"),
            ("1.5", "1500m"),
            ("0.1", "100m"),
            ("1e3", "1k"),
            ("1.5e-3", "1500u"),
            ("18446744073709551615", "18446744073709551615"),
        ];
        for &(json, text) in cases {
            let parsed: Quantity =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(parsed.to_string(), text, "{json}");
        }
        for json in [r#""""#, r#""12Qi""#, "true", "[]", "1e300", r#""1e29""#] {
            assert!(serde_json::from_str::<Quantity>(json).is_err(), "{json}");
        }
        let err = serde_json::from_str::<Quantity>(r#""12Qi""#).unwrap_err();
        assert!(err.to_string().contains(r#"invalid quantity "12Qi""#), "{err}");
    }

    #[test]
    fn serde_yaml_numbers_and_strings() {
        #[derive(serde::Deserialize)]
        struct Resources {
            cpu: Quantity,
            memory: Quantity,
            other: Quantity,
        }
        let yaml = "cpu: 1.5\nmemory: 2Gi\nother: 100\n";
        let parsed: Resources = serde_saphyr::from_str(yaml).unwrap();
        assert_eq!(parsed.cpu.to_string(), "1500m");
        assert_eq!(parsed.memory.to_string(), "2Gi");
        assert_eq!(parsed.other.to_string(), "100");
    }

    #[test]
    fn json_schema_is_int_or_string() {
        let schema = schemars::schema_for!(Quantity);
        let json = serde_json::to_value(&schema).unwrap();
        assert_eq!(json["x-kubernetes-int-or-string"], true);
    }
}
