//! Kubernetes label selectors (`metav1.LabelSelector`), compiled once and
//! matched against any label map.
//!
//! Semantics are Kubernetes' (`LabelSelectorAsSelector`): `matchLabels` and
//! every `matchExpressions` requirement must all hold; an empty selector
//! matches everything. Operators are `In`, `NotIn`, `Exists` and
//! `DoesNotExist`; `In` / `NotIn` need at least one value and `Exists` /
//! `DoesNotExist` none. What a *missing* selector means (everything or
//! nothing) differs between APIs, so callers decide that themselves.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;

/// Why a selector could not be compiled. The message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The operator is not one of the four label-selector operators.
    #[error(
        "matchExpressions[{index}].operator: {operator:?} is not one of In, NotIn, Exists, DoesNotExist"
    )]
    UnknownOperator {
        /// Position of the requirement in `matchExpressions`.
        index: usize,
        /// The operator given.
        operator: String,
    },
    /// `In` / `NotIn` without values, or `Exists` / `DoesNotExist` with values.
    #[error("matchExpressions[{index}].values: {message}")]
    Values {
        /// Position of the requirement in `matchExpressions`.
        index: usize,
        /// What is wrong.
        message: &'static str,
    },
}

/// One compiled requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Requirement::Equals(key, value) => get(key) == Some(value.as_str()),
            Requirement::In(key, values) => get(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => get(key).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(key) => get(key).is_some(),
            Requirement::DoesNotExist(key) => get(key).is_none(),
        }
    }
}

/// A compiled label selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// A selector that matches every label set.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// Compiles a Kubernetes label selector.
    pub fn compile(selector: &KubeLabelSelector) -> Result<LabelSelector, SelectorError> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement::Equals(k.clone(), v.clone()))
            .collect();
        for (index, expr) in selector.match_expressions.iter().flatten().enumerate() {
            let values: BTreeSet<String> = expr.values.iter().flatten().cloned().collect();
            let key = expr.key.clone();
            let need_values = |present: bool, message| {
                if values.is_empty() == present {
                    Err(SelectorError::Values { index, message })
                } else {
                    Ok(())
                }
            };
            let requirement = match expr.operator.as_str() {
                "In" => {
                    need_values(true, "operator In needs at least one value")?;
                    Requirement::In(key, values)
                }
                "NotIn" => {
                    need_values(true, "operator NotIn needs at least one value")?;
                    Requirement::NotIn(key, values)
                }
                "Exists" => {
                    need_values(false, "operator Exists takes no values")?;
                    Requirement::Exists(key)
                }
                "DoesNotExist" => {
                    need_values(false, "operator DoesNotExist takes no values")?;
                    Requirement::DoesNotExist(key)
                }
                other => {
                    return Err(SelectorError::UnknownOperator {
                        index,
                        operator: other.to_string(),
                    });
                }
            };
            requirements.push(requirement);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector has no requirements (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the labels `get` looks up satisfy every requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&get))
    }

    /// Whether a label map satisfies every requirement.
    pub fn matches<M>(&self, labels: &M) -> bool
    where
        M: LabelMap + ?Sized,
    {
        self.matches_with(|key| labels.label(key))
    }
}

/// Something labels can be looked up in.
pub trait LabelMap {
    /// The value of label `key`, if set.
    fn label(&self, key: &str) -> Option<&str>;
}

impl LabelMap for std::collections::BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl LabelMap for crate::meta::StringMap {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

impl<T: LabelMap + ?Sized> LabelMap for Option<&T> {
    fn label(&self, key: &str) -> Option<&str> {
        self.and_then(|m| m.label(key))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn selector(labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> KubeLabelSelector {
        KubeLabelSelector {
            match_labels: (!labels.is_empty())
                .then(|| labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            match_expressions: (!exprs.is_empty()).then(|| {
                exprs
                    .iter()
                    .map(|(k, op, vs)| LabelSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: (!vs.is_empty())
                            .then(|| vs.iter().map(|v| v.to_string()).collect()),
                    })
                    .collect()
            }),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn matching_table() {
        type Case<'a> = (&'a str, KubeLabelSelector, &'a [(&'a str, &'a str)], bool);
        let cases: Vec<Case> = vec![
            ("empty matches all", selector(&[], &[]), &[("a", "1")], true),
            ("empty matches none set", selector(&[], &[]), &[], true),
            ("matchLabels equal", selector(&[("a", "1")], &[]), &[("a", "1")], true),
            ("matchLabels differ", selector(&[("a", "1")], &[]), &[("a", "2")], false),
            ("matchLabels missing", selector(&[("a", "1")], &[]), &[], false),
            ("In hit", selector(&[], &[("a", "In", &["1", "2"])]), &[("a", "2")], true),
            ("In miss", selector(&[], &[("a", "In", &["1"])]), &[("a", "3")], false),
            ("In absent", selector(&[], &[("a", "In", &["1"])]), &[], false),
            ("NotIn absent", selector(&[], &[("a", "NotIn", &["1"])]), &[], true),
            ("NotIn hit", selector(&[], &[("a", "NotIn", &["1"])]), &[("a", "1")], false),
            ("Exists", selector(&[], &[("a", "Exists", &[])]), &[("a", "")], true),
            ("Exists absent", selector(&[], &[("a", "Exists", &[])]), &[], false),
            ("DoesNotExist", selector(&[], &[("a", "DoesNotExist", &[])]), &[], true),
            (
                "all must hold",
                selector(&[("a", "1")], &[("b", "Exists", &[])]),
                &[("a", "1")],
                false,
            ),
        ];
        for (name, sel, set, want) in cases {
            let compiled = LabelSelector::compile(&sel).unwrap();
            assert_eq!(compiled.matches(&labels(set)), want, "{name}");
        }
    }

    #[test]
    fn invalid_selectors_name_the_field() {
        let err = LabelSelector::compile(&selector(&[], &[("a", "Gt", &["1"])])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "matchExpressions[0].operator: \"Gt\" is not one of In, NotIn, Exists, DoesNotExist"
        );
        let err = LabelSelector::compile(&selector(&[], &[("a", "In", &[])])).unwrap_err();
        assert!(err.to_string().starts_with("matchExpressions[0].values:"), "{err}");
        let err = LabelSelector::compile(&selector(
            &[],
            &[("a", "Exists", &[]), ("b", "Exists", &["x"])],
        ))
        .unwrap_err();
        assert!(err.to_string().starts_with("matchExpressions[1].values:"), "{err}");
    }
}
