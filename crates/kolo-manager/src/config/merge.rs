//! Layered configuration: a later layer overrides only the fields it sets.
//!
//! The reference (`MergeCfg`) marshals the new layer to JSON and unmarshals
//! it over a copy of the old one. With Go's `omitempty` that means: objects
//! merge field by field, recursively; arrays and scalars present in the new
//! layer replace the old ones; absent (or `null`) fields keep the old value.
//! [`merge_json`] does exactly that on JSON values.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Merges `overlay` into `base` in place (see the module docs).
pub fn merge_json(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (_, Value::Null) => {}
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(slot) => merge_json(slot, value),
                    None if value.is_null() => {}
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// Merges the JSON form of `overlay` over the JSON form of `base` and reads
/// the result back as `T`.
///
/// Both inputs are values of `T`, so the result always deserializes; the
/// error case only exists for types whose serialization does not round-trip.
pub fn merge_typed<T: Serialize + DeserializeOwned>(
    base: &T,
    overlay: &Value,
) -> Result<T, serde_json::Error> {
    let mut merged = serde_json::to_value(base)?;
    merge_json(&mut merged, overlay);
    serde_json::from_value(merged)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_table() {
        let cases = [
            ("scalar replaced", json!({"a":1,"b":2}), json!({"a":3}), json!({"a":3,"b":2})),
            ("null keeps", json!({"a":1}), json!({"a":null}), json!({"a":1})),
            ("absent null not added", json!({}), json!({"a":null}), json!({})),
            (
                "objects merge deeply",
                json!({"p":{"x":1,"y":2}}),
                json!({"p":{"y":3,"z":4}}),
                json!({"p":{"x":1,"y":3,"z":4}}),
            ),
            ("arrays replace", json!({"d":["5m","10m"]}), json!({"d":["1m"]}), json!({"d":["1m"]})),
            ("empty array replaces", json!({"d":["5m"]}), json!({"d":[]}), json!({"d":[]})),
            ("new keys added", json!({"a":1}), json!({"b":{"c":2}}), json!({"a":1,"b":{"c":2}})),
            ("type change replaces", json!({"a":{"x":1}}), json!({"a":5}), json!({"a":5})),
        ];
        for (name, mut base, overlay, want) in cases {
            merge_json(&mut base, &overlay);
            assert_eq!(base, want, "{name}");
        }
    }
}
