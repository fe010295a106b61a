//! The probability with which a matching profile is applied
//! (`spec.probability`: an integer percentage or a string such as `"50%"`).
//!
//! # Differences from the reference
//!
//! * The reference skips a profile when `randIntn(100) > percent`, so a
//!   profile at 50% applies for 51 of the 100 possible draws. kolo applies it
//!   when `draw < percent` (`draw` uniform in `0..100`): 50% means exactly
//!   half, 1% means 1 in 100.
//! * No random number is drawn at 0% or 100%, so a seeded run only consumes
//!   randomness for profiles that need it.
//! * Values outside 0–100 are clamped (the reference already never applies a
//!   negative percentage and always applies one above 100); the clamping is
//!   reported as a warning. A string without `%` (`"50"`) is read as a
//!   percentage too, where the reference refuses it. Anything else is an
//!   error, and the profile is ignored until it is fixed.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use rand::{Rng, RngCore, SeedableRng};

/// At most this many characters of a bad value are quoted in an error.
const MAX_QUOTED_CHARS: usize = 64;

/// A probability in whole percent, 0 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Probability {
    percent: u8,
}

/// A `spec.probability` that is not a percentage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "spec.probability: {value:?} is not a percentage (write an integer from 0 to 100, or a string such as \"50%\")"
)]
pub struct ProbabilityError {
    /// The value as written (shortened when long).
    pub value: String,
}

/// A parsed probability, and the value it was clamped from if it lay
/// outside 0–100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedProbability {
    /// The probability to use.
    pub probability: Probability,
    /// The out-of-range percentage that was clamped, if any.
    pub clamped_from: Option<i128>,
}

impl Probability {
    /// Always applies (the default when the field is absent).
    pub const ALWAYS: Probability = Probability { percent: 100 };
    /// Never applies.
    pub const NEVER: Probability = Probability { percent: 0 };

    /// A probability of `percent`, clamped to 0–100.
    pub fn from_percent(percent: i128) -> Probability {
        Probability { percent: percent.clamp(0, 100) as u8 }
    }

    /// The percentage, 0 to 100.
    pub fn percent(self) -> u8 {
        self.percent
    }

    /// Parses `spec.probability`; absent means [`Probability::ALWAYS`].
    pub fn parse(value: Option<&IntOrString>) -> Result<ParsedProbability, ProbabilityError> {
        let percent: i128 = match value {
            None => 100,
            Some(IntOrString::Int(n)) => i128::from(*n),
            Some(IntOrString::String(s)) => parse_percent(s)?,
        };
        let probability = Probability::from_percent(percent);
        let clamped_from = (i128::from(probability.percent) != percent).then_some(percent);
        Ok(ParsedProbability { probability, clamped_from })
    }

    /// Whether the profile applies this time. Draws from `random` only when
    /// the probability is strictly between 0 and 100.
    pub fn draw(self, random: &mut dyn RngCore) -> bool {
        match self.percent {
            0 => false,
            100.. => true,
            percent => random.random_range(0..100u8) < percent,
        }
    }
}

/// Reads `"50%"`, `" 50 % "` or `"50"`. Huge numbers saturate (and are then
/// clamped by the caller).
fn parse_percent(text: &str) -> Result<i128, ProbabilityError> {
    let error = || ProbabilityError { value: quote(text) };
    let trimmed = text.trim();
    let number = trimmed.strip_suffix('%').unwrap_or(trimmed).trim_end();
    let (negative, digits) = match number.as_bytes().first() {
        Some(b'-') => (true, &number[1..]),
        Some(b'+') => (false, &number[1..]),
        _ => (false, number),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error());
    }
    // Only the sign matters once the value exceeds 100 in magnitude.
    let significant = digits.trim_start_matches('0');
    let magnitude: i128 =
        if significant.len() > 30 { i128::MAX } else { significant.parse().unwrap_or(0) };
    Ok(if negative { -magnitude } else { magnitude })
}

fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}...", &text[..end]),
    }
}

/// A deterministic random source for `seed`, for callers (the CLI, tests,
/// the simulator) that need reproducible profile draws.
pub fn seeded_rng(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }

    fn string(s: &str) -> IntOrString {
        IntOrString::String(s.to_string())
    }

    #[test]
    fn parse_table() {
        // (value, percent, clamped from)
        let cases: &[(Option<IntOrString>, u8, Option<i128>)] = &[
            (None, 100, None),
            (Some(int(50)), 50, None),
            (Some(int(0)), 0, None),
            (Some(int(100)), 100, None),
            (Some(int(-5)), 0, Some(-5)),
            (Some(int(150)), 100, Some(150)),
            (Some(int(i32::MAX)), 100, Some(i128::from(i32::MAX))),
            (Some(int(i32::MIN)), 0, Some(i128::from(i32::MIN))),
            (Some(string("50%")), 50, None),
            (Some(string(" 7 % ")), 7, None),
            (Some(string("50")), 50, None),
            (Some(string("+20%")), 20, None),
            (Some(string("0%")), 0, None),
            (Some(string("007%")), 7, None),
            (Some(string("100%")), 100, None),
            (Some(string("101%")), 100, Some(101)),
            (Some(string("-1%")), 0, Some(-1)),
            (Some(string("99999999999999999999999999999999999999999%")), 100, Some(i128::MAX)),
            (Some(string("-99999999999999999999999999999999999999999%")), 0, Some(-i128::MAX)),
        ];
        for (value, percent, clamped) in cases {
            let parsed = Probability::parse(value.as_ref()).unwrap();
            assert_eq!(parsed.probability.percent(), *percent, "{value:?}");
            assert_eq!(parsed.clamped_from, *clamped, "{value:?}");
        }
    }

    #[test]
    fn bad_strings_are_errors_that_quote_them() {
        for bad in ["", "%", "half", "50%%", "5 0%", "0.5", "12.5%", "1e2%", "-", "%50", "５０%"]
        {
            let err = Probability::parse(Some(&string(bad))).unwrap_err();
            assert_eq!(err.value, bad);
            assert!(err.to_string().starts_with("spec.probability: "), "{err}");
        }
        let long = "x".repeat(500);
        let err = Probability::parse(Some(&string(&long))).unwrap_err();
        assert_eq!(err.value.len(), MAX_QUOTED_CHARS + 3);
    }

    #[test]
    fn edges_never_draw() {
        let mut rng = seeded_rng(1);
        let before = rng.clone().next_u64();
        assert!(Probability::ALWAYS.draw(&mut rng));
        assert!(!Probability::NEVER.draw(&mut rng));
        assert_eq!(rng.next_u64(), before, "no randomness consumed at 0% and 100%");
    }

    /// A percentage is that frequency: over a long seeded run the share of
    /// applied draws is within 1% of it.
    #[test]
    fn percent_means_percent() {
        for percent in [1u8, 25, 50, 99] {
            let p = Probability::from_percent(i128::from(percent));
            let mut rng = seeded_rng(u64::from(percent));
            let trials = 100_000;
            let hits = (0..trials).filter(|_| p.draw(&mut rng)).count();
            let expected = trials * usize::from(percent) / 100;
            let tolerance = trials / 100;
            assert!(hits.abs_diff(expected) < tolerance, "{percent}%: {hits} of {trials}");
        }
    }

    #[test]
    fn same_seed_same_draws() {
        let p = Probability::from_percent(50);
        let draws = |seed| {
            let mut rng = seeded_rng(seed);
            (0..64).map(|_| p.draw(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
    }
}
