//! Katalyst's QoS vocabulary: the `katalyst.kubewharf.io/qos_level`
//! annotation and the enhancements that refine it.
//!
//! kolo maps Katalyst levels onto its own classes (see [`crate::qos`]):
//!
//! | Katalyst | kolo |
//! | --- | --- |
//! | `dedicated_cores` + `numa_binding` + `numa_exclusive` | LSE |
//! | `dedicated_cores` (any other enhancements) | LSR |
//! | `shared_cores` | LS |
//! | `reclaimed_cores` | BE |
//! | `system_cores` | SYSTEM |
//!
//! Katalyst's dynamic CPU policy rejects `dedicated_cores` without
//! `numa_binding`; kolo accepts it as LSR (exclusive cores, no NUMA
//! constraint), which is what its documentation promises.

use std::collections::BTreeMap;

use crate::names::{annotation, katalyst_level};
use crate::qos::QoSClass;

/// A Katalyst QoS level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KatalystQoSLevel {
    /// `dedicated_cores`: exclusive cores.
    DedicatedCores,
    /// `shared_cores`: a shared pool (Katalyst's default).
    SharedCores,
    /// `reclaimed_cores`: over-committed, reclaimed resources.
    ReclaimedCores,
    /// `system_cores`: cores for system agents.
    SystemCores,
}

impl KatalystQoSLevel {
    /// Parses an annotation value; unknown values are `None`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            katalyst_level::DEDICATED_CORES => Some(Self::DedicatedCores),
            katalyst_level::SHARED_CORES => Some(Self::SharedCores),
            katalyst_level::RECLAIMED_CORES => Some(Self::ReclaimedCores),
            katalyst_level::SYSTEM_CORES => Some(Self::SystemCores),
            _ => None,
        }
    }

    /// The annotation value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DedicatedCores => katalyst_level::DEDICATED_CORES,
            Self::SharedCores => katalyst_level::SHARED_CORES,
            Self::ReclaimedCores => katalyst_level::RECLAIMED_CORES,
            Self::SystemCores => katalyst_level::SYSTEM_CORES,
        }
    }
}

/// The memory enhancements that decide how a `dedicated_cores` pod maps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryEnhancement {
    /// `numa_binding: "true"`.
    pub numa_binding: bool,
    /// `numa_exclusive: "true"` (only meaningful with `numa_binding`).
    pub numa_exclusive: bool,
}

/// Why a Katalyst annotation could not be used as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KatalystAnnotationError {
    /// The QoS level is not one of the four Katalyst levels.
    #[error("annotation {key}: unknown Katalyst QoS level {value:?}")]
    UnknownLevel {
        /// The annotation key.
        key: &'static str,
        /// The value found.
        value: String,
    },
    /// An enhancement annotation is not a JSON object of strings.
    #[error("annotation {key}: not a JSON object of strings: {reason}")]
    MalformedEnhancement {
        /// The annotation key.
        key: &'static str,
        /// The JSON error.
        reason: String,
    },
}

/// Reads the pod's Katalyst QoS level. `Ok(None)` when the annotation is
/// absent; an error names the annotation and quotes the bad value.
pub fn qos_level(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<Option<KatalystQoSLevel>, KatalystAnnotationError> {
    let Some(value) = annotations.and_then(|a| a.get(annotation::KATALYST_QOS_LEVEL)) else {
        return Ok(None);
    };
    KatalystQoSLevel::parse(value).map(Some).ok_or_else(|| KatalystAnnotationError::UnknownLevel {
        key: annotation::KATALYST_QOS_LEVEL,
        value: value.clone(),
    })
}

/// The CPU enhancements kolo's Katalyst node policy reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuEnhancement {
    /// `cpuset_pool`: the named shared pool of a `shared_cores` pod (the
    /// default pool is `share`), or the `system-*` pool of a
    /// `system_cores` pod. `None` when absent or empty.
    pub cpuset_pool: Option<String>,
}

/// Reads one enhancement annotation as a JSON object of strings; absent
/// means an empty map.
fn enhancement_map(
    annotations: Option<&BTreeMap<String, String>>,
    key: &'static str,
) -> Result<BTreeMap<String, String>, KatalystAnnotationError> {
    let Some(raw) = annotations.and_then(|a| a.get(key)) else {
        return Ok(BTreeMap::new());
    };
    serde_json::from_str(raw)
        .map_err(|e| KatalystAnnotationError::MalformedEnhancement { key, reason: e.to_string() })
}

/// Reads `katalyst.kubewharf.io/memory_enhancement`. Absent means no
/// enhancements; a value that is not a JSON object of strings is an error.
pub fn memory_enhancement(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<MemoryEnhancement, KatalystAnnotationError> {
    let map = enhancement_map(annotations, annotation::KATALYST_MEMORY_ENHANCEMENT)?;
    let flag = |key: &str| map.get(key).is_some_and(|v| v == "true");
    Ok(MemoryEnhancement {
        numa_binding: flag("numa_binding"),
        numa_exclusive: flag("numa_exclusive"),
    })
}

/// Reads `katalyst.kubewharf.io/cpu_enhancement` (same rules as
/// [`memory_enhancement`]).
pub fn cpu_enhancement(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<CpuEnhancement, KatalystAnnotationError> {
    let map = enhancement_map(annotations, annotation::KATALYST_CPU_ENHANCEMENT)?;
    let cpuset_pool = map.get("cpuset_pool").filter(|v| !v.is_empty()).cloned();
    Ok(CpuEnhancement { cpuset_pool })
}

/// kolo's class for a Katalyst level (see the module table).
pub fn to_kolo_qos(level: KatalystQoSLevel, memory: MemoryEnhancement) -> QoSClass {
    match level {
        KatalystQoSLevel::DedicatedCores if memory.numa_binding && memory.numa_exclusive => {
            QoSClass::LSE
        }
        KatalystQoSLevel::DedicatedCores => QoSClass::LSR,
        KatalystQoSLevel::SharedCores => QoSClass::LS,
        KatalystQoSLevel::ReclaimedCores => QoSClass::BE,
        KatalystQoSLevel::SystemCores => QoSClass::System,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn maps_every_level_and_enhancement() {
        let cases: &[(&str, Option<&str>, QoSClass)] = &[
            (
                "dedicated_cores",
                Some(r#"{"numa_binding":"true","numa_exclusive":"true"}"#),
                QoSClass::LSE,
            ),
            ("dedicated_cores", Some(r#"{"numa_binding":"true"}"#), QoSClass::LSR),
            (
                "dedicated_cores",
                Some(r#"{"numa_binding":"true","numa_exclusive":"false"}"#),
                QoSClass::LSR,
            ),
            // numa_exclusive without numa_binding means nothing in Katalyst.
            ("dedicated_cores", Some(r#"{"numa_exclusive":"true"}"#), QoSClass::LSR),
            ("dedicated_cores", None, QoSClass::LSR),
            ("shared_cores", None, QoSClass::LS),
            ("shared_cores", Some(r#"{"numa_binding":"true"}"#), QoSClass::LS),
            ("reclaimed_cores", None, QoSClass::BE),
            ("system_cores", None, QoSClass::System),
        ];
        for (level, memory, expected) in cases {
            let mut pairs = vec![(annotation::KATALYST_QOS_LEVEL, *level)];
            if let Some(memory) = memory {
                pairs.push((annotation::KATALYST_MEMORY_ENHANCEMENT, memory));
            }
            let a = annotations(&pairs);
            let level = qos_level(Some(&a)).unwrap().unwrap();
            let memory = memory_enhancement(Some(&a)).unwrap();
            assert_eq!(to_kolo_qos(level, memory), *expected, "{pairs:?}");
            assert_eq!(KatalystQoSLevel::parse(level.as_str()), Some(level));
        }
    }

    #[test]
    fn absent_annotations_are_none() {
        assert_eq!(qos_level(None), Ok(None));
        assert_eq!(qos_level(Some(&annotations(&[("a", "b")]))), Ok(None));
        assert_eq!(memory_enhancement(None), Ok(MemoryEnhancement::default()));
    }

    #[test]
    fn bad_values_are_errors_that_quote_them() {
        let a = annotations(&[(annotation::KATALYST_QOS_LEVEL, "gold_cores")]);
        let err = qos_level(Some(&a)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "annotation katalyst.kubewharf.io/qos_level: unknown Katalyst QoS level \"gold_cores\""
        );
        let a = annotations(&[(annotation::KATALYST_MEMORY_ENHANCEMENT, "numa_binding=true")]);
        let err = memory_enhancement(Some(&a)).unwrap_err();
        assert!(
            err.to_string().starts_with("annotation katalyst.kubewharf.io/memory_enhancement:"),
            "{err}"
        );
        let a = annotations(&[(annotation::KATALYST_CPU_ENHANCEMENT, "[1]")]);
        let err = cpu_enhancement(Some(&a)).unwrap_err();
        assert!(
            err.to_string().starts_with("annotation katalyst.kubewharf.io/cpu_enhancement:"),
            "{err}"
        );
    }

    #[test]
    fn cpu_enhancement_names_the_pool() {
        // (annotation value, expected pool)
        let table = [
            (None, None),
            (Some(r#"{"cpuset_pool":"batch"}"#), Some("batch")),
            (Some(r#"{"cpuset_pool":""}"#), None),
            (Some(r#"{"numa_share":"false"}"#), None),
        ];
        for (value, want) in table {
            let a = annotations(
                &value
                    .map(|v| (annotation::KATALYST_CPU_ENHANCEMENT, v))
                    .into_iter()
                    .collect::<Vec<_>>(),
            );
            let got = cpu_enhancement(Some(&a)).unwrap();
            assert_eq!(got.cpuset_pool.as_deref(), want, "{value:?}");
        }
    }
}
