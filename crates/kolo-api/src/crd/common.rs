//! Small types and schema helpers shared by the CRD modules.
//!
//! The schema helpers exist because the schemas `schemars` derives for some
//! Kubernetes types are either too verbose (every `Quantity` carries a two
//! kilobyte description) or not what the reference CRDs declare (embedded pod
//! templates are stored schemaless there). Each helper returns a small,
//! structural schema equivalent to what Koordinator's controller-gen output
//! contains for the same Go type.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::{Schema, SchemaGenerator, json_schema};

/// A set of (resource name, quantity) pairs, like Go's `corev1.ResourceList`.
pub type ResourceList = BTreeMap<String, Quantity>;

/// A free-form JSON object, used for the references' `ExtensionsMap` and
/// other fields stored with `x-kubernetes-preserve-unknown-fields`.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Schema of a single quantity: an int-or-string that must look like one.
pub(crate) fn quantity_schema(_: &mut SchemaGenerator) -> Schema {
    crate::quantity::kubernetes_schema()
}

/// Schema of a [`ResourceList`].
pub(crate) fn resource_list_schema(generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": quantity_schema(generator),
    })
}

/// Schema of an `IntOrString` field.
pub(crate) fn int_or_string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
    })
}

/// Schema of a `metav1.Time` field (RFC 3339, second precision).
pub(crate) fn time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "format": "date-time",
    })
}

/// Schema of an object whose content the API server keeps as is.
pub(crate) fn preserved_object_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Schema of a `runtime.RawExtension`: any JSON value, kept as is.
pub(crate) fn raw_extension_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Parses a Go `time.Duration` string such as `5m0s`, `1h30m`, `1.5h`, `300ms`
/// or `0`.
///
/// `metav1.Duration` serializes this way, so `5m` and `5m0s` denote the same
/// duration. Returns `None` for malformed or negative input.
pub fn parse_go_duration(input: &str) -> Option<Duration> {
    let s = input.strip_prefix('+').unwrap_or(input);
    if let Some(negated) = s.strip_prefix('-') {
        // A negative duration has no `std::time::Duration`; only "-0..." is accepted.
        return parse_go_duration(negated).filter(Duration::is_zero);
    }
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() {
        return None;
    }
    let mut total: u128 = 0; // nanoseconds
    let mut rest = s;
    while !rest.is_empty() {
        let int_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, after_num) = match after_int.strip_prefix('.') {
            Some(f) => {
                let frac_len = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
                f.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len =
            after_num.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after_num.len());
        let (unit, next) = after_num.split_at(unit_len);
        let unit_nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            _ => return None,
        };
        let whole: u128 = if int_part.is_empty() { 0 } else { int_part.parse().ok()? };
        total = total.checked_add(whole.checked_mul(unit_nanos)?)?;
        if !frac_part.is_empty() {
            // Exact: scale the fraction digits by the unit, truncating below 1ns.
            let digits = frac_part.len().min(30) as u32;
            let frac: u128 = frac_part[..digits as usize].parse().ok()?;
            total = total.checked_add(frac.checked_mul(unit_nanos)? / 10u128.pow(digits))?;
        }
        rest = next;
    }
    let secs = u64::try_from(total / 1_000_000_000).ok()?;
    Some(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// True if two Go duration strings denote the same duration (`5m` and `5m0s`
/// do); falls back to string equality when either does not parse.
pub fn same_go_duration(a: &str, b: &str) -> bool {
    match (parse_go_duration(a), parse_go_duration(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let cases: &[(&str, Option<Duration>)] = &[
            ("0", Some(Duration::ZERO)),
            ("0s", Some(Duration::ZERO)),
            ("5m0s", Some(Duration::from_secs(300))),
            ("5m", Some(Duration::from_secs(300))),
            ("1h30m", Some(Duration::from_secs(5400))),
            ("24h", Some(Duration::from_secs(86400))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("300ms", Some(Duration::from_millis(300))),
            ("2us", Some(Duration::from_micros(2))),
            ("1h0m0.5s", Some(Duration::from_millis(3_600_500))),
            ("+10s", Some(Duration::from_secs(10))),
            ("-1s", None),
            ("", None),
            ("5", None),
            ("5x", None),
            ("m", None),
        ];
        for (input, want) in cases {
            assert_eq!(parse_go_duration(input), *want, "{input}");
        }
        assert!(same_go_duration("5m", "5m0s"));
        assert!(!same_go_duration("5m", "10m0s"));
        assert!(same_go_duration("weird", "weird"));
    }
}
