//! The pod annotation `scheduling.koordinator.sh/reservation-affinity`:
//! which reservations a pod may use — and that it must use one.
//!
//! Implemented: `name` (exactly that reservation) and
//! `reservationSelector` (every pair must be among the reservation's
//! labels); both, when set, must hold. Refused, with the field named
//! (the pod is not scheduled rather than scheduled as if they were
//! absent): a non-empty `requiredDuringSchedulingIgnoredDuringExecution`
//! (selector terms) and `tolerations` (reservation taints are refused
//! too), and any other key.

use std::collections::BTreeMap;

use kolo_api::names::annotation;
use kolo_core::HasMeta;
use serde_json::Value;

use super::ReservationError;
use crate::framework::PodInfo;

/// A pod's reservation affinity, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReservationAffinity {
    /// `name`: only this reservation.
    pub name: Option<String>,
    /// `reservationSelector`: labels the reservation must have.
    pub selector: BTreeMap<String, String>,
}

impl ReservationAffinity {
    /// The pod's reservation affinity, if it has the annotation; refuses a
    /// malformed or unimplemented one, naming the field.
    pub fn of(pod: &PodInfo) -> Result<Option<ReservationAffinity>, ReservationError> {
        let Some(text) = pod.view().annotation(annotation::RESERVATION_AFFINITY) else {
            return Ok(None);
        };
        let refuse = |field: &str, message: &str| ReservationError::Pod {
            pod: pod.key().to_string(),
            field: format!("annotations[{}]{field}", annotation::RESERVATION_AFFINITY),
            message: message.to_string(),
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| refuse("", &format!("not JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(refuse("", "must be a JSON object"));
        };
        let mut affinity = ReservationAffinity::default();
        for (key, value) in &fields {
            let empty = match value {
                Value::Null => true,
                Value::Array(a) => a.is_empty(),
                Value::Object(o) => o.is_empty(),
                Value::String(s) => s.is_empty(),
                _ => false,
            };
            match key.as_str() {
                "name" => match value {
                    Value::String(s) if !s.is_empty() => affinity.name = Some(s.clone()),
                    _ if empty => {}
                    _ => return Err(refuse(".name", "must be a string")),
                },
                "reservationSelector" => {
                    if !empty {
                        affinity.selector =
                            serde_json::from_value(value.clone()).map_err(|_| {
                                refuse(".reservationSelector", "must map label names to strings")
                            })?;
                    }
                }
                "requiredDuringSchedulingIgnoredDuringExecution" | "tolerations" if empty => {}
                "requiredDuringSchedulingIgnoredDuringExecution" => {
                    return Err(refuse(&format!(".{key}"), "selector terms are not implemented"));
                }
                "tolerations" => {
                    return Err(refuse(
                        ".tolerations",
                        "reservation taints and tolerations are not implemented",
                    ));
                }
                other => return Err(refuse(&format!(".{other}"), "unknown field")),
            }
        }
        Ok(Some(affinity))
    }

    /// Whether the reservation `name` with `labels` satisfies it.
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.name.as_deref().is_none_or(|n| n == name)
            && self.selector.iter().all(|(k, v)| labels.get(k) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn read(annotation_value: &str) -> Result<Option<ReservationAffinity>, ReservationError> {
        let yaml = format!(
            "metadata:\n  name: p\n  namespace: default\n  annotations:\n    {}: '{annotation_value}'\nspec:\n  containers: []\n",
            annotation::RESERVATION_AFFINITY
        );
        ReservationAffinity::of(&PodInfo::new(pod_from_yaml(&yaml)).unwrap())
    }

    #[test]
    fn name_and_selector_are_read_and_matched() {
        let labels: BTreeMap<String, String> =
            [("team".to_string(), "a".to_string()), ("tier".into(), "x".into())].into();
        let cases = [
            (r#"{"name":"r1"}"#, "r1", true),
            (r#"{"name":"r1"}"#, "r2", false),
            (r#"{"reservationSelector":{"team":"a"}}"#, "r2", true),
            (r#"{"reservationSelector":{"team":"b"}}"#, "r2", false),
            (r#"{"name":"r1","reservationSelector":{"team":"a"}}"#, "r1", true),
            (r#"{"name":"r1","reservationSelector":{"team":"b"}}"#, "r1", false),
            // Empty: any reservation, but one is required.
            (r#"{}"#, "r9", true),
            (
                r#"{"tolerations":[],"requiredDuringSchedulingIgnoredDuringExecution":null}"#,
                "r9",
                true,
            ),
        ];
        for (text, name, want) in cases {
            let affinity = read(text).unwrap().unwrap();
            assert_eq!(affinity.matches(name, &labels), want, "{text} vs {name}");
        }
    }

    #[test]
    fn unimplemented_parts_are_refused_naming_the_field() {
        let field = |text: &str| match read(text) {
            Err(ReservationError::Pod { field, .. }) => field,
            other => format!("{other:?}"),
        };
        let prefix = format!("annotations[{}]", annotation::RESERVATION_AFFINITY);
        assert_eq!(field("{not json"), prefix);
        assert_eq!(field(r#"{"tolerations":[{"key":"a"}]}"#), format!("{prefix}.tolerations"));
        assert_eq!(
            field(
                r#"{"requiredDuringSchedulingIgnoredDuringExecution":{"reservationSelectorTerms":[{}]}}"#
            ),
            format!("{prefix}.requiredDuringSchedulingIgnoredDuringExecution")
        );
        assert_eq!(field(r#"{"nmae":"r1"}"#), format!("{prefix}.nmae"));
        assert_eq!(field(r#"{"name":3}"#), format!("{prefix}.name"));
    }
}
