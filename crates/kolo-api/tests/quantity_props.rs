//! Property tests of `kolo_api::quantity`: printing and parsing agree, the
//! order agrees with the integer views, and parsing is total.

use kolo_api::quantity::{Format, Quantity};
use proptest::prelude::*;

/// Nano-units in the largest magnitude: 10^38 - 1.
const MAX_NANOS: i128 = 99_999_999_999_999_999_999_999_999_999_999_999_999;
const NANOS_PER_UNIT: i128 = 1_000_000_000;

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![Just(Format::BinarySI), Just(Format::DecimalSI), Just(Format::DecimalExponent),]
}

/// Amounts in nano-units, biased towards the shapes that print differently.
fn nanos() -> impl Strategy<Value = i128> {
    let sign = prop_oneof![Just(1i128), Just(-1i128)];
    prop_oneof![
        // Anything in range.
        -MAX_NANOS..=MAX_NANOS,
        // Small mantissas at every decimal scale.
        (sign.clone(), 0i128..100_000, 0u32..=33).prop_map(|(s, m, p)| s * m * 10i128.pow(p)),
        // Multiples of powers of 1024, in whole units.
        (sign.clone(), 0i128..5000, 0u32..=6)
            .prop_map(|(s, m, p)| s * m * 1024i128.pow(p) * NANOS_PER_UNIT),
        // Whole units and thousandths in the i64 range.
        any::<i64>().prop_map(|v| i128::from(v) * NANOS_PER_UNIT),
        any::<i64>().prop_map(|v| i128::from(v) * 1_000_000),
        // Near the ends of the range.
        (sign, 0i128..1000).prop_map(|(s, d)| s * (MAX_NANOS - d)),
    ]
}

fn quantity() -> impl Strategy<Value = Quantity> {
    (nanos(), format()).prop_map(|(n, f)| Quantity::from_nanos(n, f).expect("in range"))
}

/// Text close to the grammar: mostly valid, sometimes not.
fn quantity_like_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[+-]?[0-9]{0,30}(\\.[0-9]{0,30})?([numkMGTPE]|[KMGTPE]i|[eE][+-]?[0-9]{1,4})?",
        "[+-]?[0-9]{0,5}(\\.[0-9]{0,12})?([eE][+-]?[0-9]{1,25})",
        "[-+.0-9eEinumkKMGTP ]{0,12}",
    ]
}

/// `text` is in the canonical form Kubernetes prints: "0", or an optional
/// "-", a number without leading zeros or a fraction, and a suffix.
fn is_canonical_text(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let digits_end = unsigned.find(|c: char| !c.is_ascii_digit()).unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(digits_end);
    let suffix_ok = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    ) || suffix
        .strip_prefix('e')
        .and_then(|e| e.parse::<i32>().ok())
        .is_some_and(|e| e != 0 && e % 3 == 0);
    !number.is_empty() && !number.starts_with('0') && suffix_ok
}

/// The nano-units of `whole.fraction` × `base`^`power` the simple way, in
/// `u128`, rounded up to a nano; `None` when the arithmetic overflows.
fn oracle(
    whole: u64,
    fraction: &str,
    base: u128,
    power: u32,
    decimal_exponent: i32,
) -> Option<u128> {
    let fraction_digits = fraction.len() as u32;
    let mut numerator = u128::from(whole).checked_mul(10u128.checked_pow(fraction_digits)?)?;
    if !fraction.is_empty() {
        numerator = numerator.checked_add(fraction.parse::<u128>().ok()?)?;
    }
    numerator = numerator.checked_mul(base.checked_pow(power)?)?;
    let scale = decimal_exponent + 9 - fraction_digits as i32;
    if scale >= 0 {
        numerator.checked_mul(10u128.checked_pow(scale as u32)?)
    } else {
        let divisor = 10u128.checked_pow((-scale) as u32)?;
        Some(numerator.div_ceil(divisor))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn printing_then_parsing_gives_the_amount_back(q in quantity()) {
        let text = q.to_string();
        let parsed = Quantity::parse(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(parsed, q, "{}", text);
        prop_assert_eq!(parsed.as_nanos(), q.as_nanos());
        prop_assert!(is_canonical_text(&text), "{}", text);
        // Printing a parsed quantity gives a fixed point. (Not `text` itself: a
        // binary-format amount with no factor of 1024 prints as a plain
        // number, "2000", which then parses and prints as decimal SI, "2k",
        // just as in Kubernetes.)
        let reprinted = parsed.to_string();
        prop_assert_eq!(Quantity::parse(&reprinted).unwrap().to_string(), reprinted.clone());
        if q.format() != Format::BinarySI {
            prop_assert_eq!(reprinted, text);
        }
    }

    #[test]
    fn json_round_trip(q in quantity()) {
        let json = serde_json::to_string(&q).unwrap();
        prop_assert_eq!(json.clone(), format!("\"{q}\""));
        let back: Quantity = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, q);
    }

    #[test]
    fn order_agrees_with_milli_values(a in quantity(), b in quantity()) {
        // Rounding away from zero and saturating are monotonic.
        if a <= b {
            prop_assert!(a.milli_value() <= b.milli_value());
            prop_assert!(a.value() <= b.value());
        }
        prop_assert_eq!(a.cmp(&b), a.as_nanos().cmp(&b.as_nanos()));
        prop_assert_eq!(a == b, a.as_nanos() == b.as_nanos());
    }

    #[test]
    fn order_of_millis_is_the_order_of_quantities(a in any::<i64>(), b in any::<i64>()) {
        let (qa, qb) = (Quantity::from_milli(a), Quantity::from_milli(b));
        prop_assert_eq!(qa.cmp(&qb), a.cmp(&b));
        prop_assert_eq!(qa.milli_value().cmp(&qb.milli_value()), qa.cmp(&qb));
    }

    #[test]
    fn from_milli_keeps_the_millis(m in any::<i64>()) {
        let q = Quantity::from_milli(m);
        prop_assert_eq!(q.milli_value(), m);
        prop_assert_eq!(q.format(), Format::DecimalSI);
        prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap().milli_value(), m);
    }

    #[test]
    fn from_value_keeps_the_value(v in any::<i64>(), f in format()) {
        let q = Quantity::from_value(v, f);
        prop_assert_eq!(q.value(), v);
        prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap().value(), v);
    }

    #[test]
    fn value_rounds_away_from_zero(n in nanos()) {
        let q = Quantity::from_nanos(n, Format::DecimalSI).unwrap();
        let exact = |divisor: i128| {
            let quotient = n / divisor;
            let rounded = if n % divisor == 0 { quotient } else { quotient + n.signum() };
            i64::try_from(rounded).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
        };
        prop_assert_eq!(q.value(), exact(NANOS_PER_UNIT));
        prop_assert_eq!(q.milli_value(), exact(1_000_000));
    }

    #[test]
    fn parse_never_panics(text in any::<String>()) {
        if let Ok(q) = Quantity::parse(&text) {
            prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q);
        }
    }

    #[test]
    fn parse_of_near_grammar_text_round_trips(text in quantity_like_text()) {
        match Quantity::parse(&text) {
            Ok(q) => {
                let printed = q.to_string();
                prop_assert_eq!(Quantity::parse(&printed).unwrap(), q, "{} -> {}", text, printed);
                prop_assert!(is_canonical_text(&printed), "{}", printed);
            }
            Err(e) => {
                // The message quotes the input, shortened past 64 characters.
                let quoted = e.input();
                match quoted.strip_suffix("...") {
                    Some(start) if text.chars().count() > 64 => {
                        prop_assert!(text.starts_with(start));
                        prop_assert_eq!(start.chars().count(), 64);
                    }
                    _ => prop_assert_eq!(quoted, text.as_str()),
                }
                let message = e.to_string();
                prop_assert!(
                    message.starts_with(&format!("invalid quantity {quoted:?}: ")),
                    "{}",
                    message
                );
            }
        }
    }

    #[test]
    fn decimal_parse_matches_simple_arithmetic(
        negative in any::<bool>(),
        whole in any::<u32>(),
        fraction in "[0-9]{0,12}",
        suffix in prop::sample::select(vec![
            ("n", -9), ("u", -6), ("m", -3), ("", 0), ("k", 3), ("M", 6), ("G", 9),
            ("T", 12), ("P", 15), ("E", 18), ("e-12", -12), ("e5", 5), ("E+2", 2),
        ]),
    ) {
        let (suffix, exponent) = suffix;
        let sign = if negative { "-" } else { "" };
        let text = if fraction.is_empty() {
            format!("{sign}{whole}{suffix}")
        } else {
            format!("{sign}{whole}.{fraction}{suffix}")
        };
        let Some(expected) = oracle(u64::from(whole), &fraction, 1, 0, exponent) else {
            return Ok(());
        };
        let parsed = Quantity::parse(&text);
        if expected > MAX_NANOS as u128 {
            prop_assert!(parsed.is_err(), "{}", text);
        } else {
            let expected = expected as i128;
            let expected = if negative { -expected } else { expected };
            prop_assert_eq!(parsed.unwrap().as_nanos(), expected, "{}", text);
        }
    }

    #[test]
    fn binary_parse_matches_simple_arithmetic(
        negative in any::<bool>(),
        whole in 0u64..100_000_000,
        fraction in "[0-9]{0,12}",
        power in 1u32..=6,
    ) {
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power as usize];
        let sign = if negative { "-" } else { "" };
        let text = format!("{sign}{whole}.{fraction}{suffix}");
        let Some(expected) = oracle(whole, &fraction, 1024, power, 0) else {
            return Ok(());
        };
        // Kubernetes caps binary quantities at 2^63-1.
        let capped = expected.min(i64::MAX as u128 * NANOS_PER_UNIT as u128) as i128;
        let parsed = Quantity::parse(&text).unwrap();
        prop_assert_eq!(parsed.as_nanos(), if negative { -capped } else { capped }, "{}", text);
        let below_one = capped != 0 && capped < NANOS_PER_UNIT;
        let expected_format = if below_one { Format::DecimalSI } else { Format::BinarySI };
        prop_assert_eq!(parsed.format(), expected_format);
    }
}
