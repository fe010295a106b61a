//! [`Namespaces`]: the namespaces a filter admits, `include` xor `exclude`
//! (LowNodeLoad's `evictableNamespaces`, the migration controller's
//! `namespaces`).

use serde::{Deserialize, Serialize};

/// At most one of the two lists (both set is refused by the args that
/// hold it, naming their field).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespaces {
    /// Only these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Every namespace but these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

impl Namespaces {
    /// Whether both lists are set (invalid).
    pub fn has_both(&self) -> bool {
        !self.include.is_empty() && !self.exclude.is_empty()
    }

    /// Whether `namespace` is admitted; `Err` says which list keeps it out,
    /// under the args' name for this field (`field`).
    pub fn admit(&self, namespace: &str, field: &str) -> Result<(), String> {
        if !self.include.is_empty() && !self.include.iter().any(|n| n == namespace) {
            return Err(format!("namespace {namespace:?} is not in {field}.include"));
        }
        if self.exclude.iter().any(|n| n == namespace) {
            return Err(format!("namespace {namespace:?} is in {field}.exclude"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_xor_exclude() {
        let list = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let include = Namespaces { include: list(&["a"]), exclude: vec![] };
        let exclude = Namespaces { include: vec![], exclude: list(&["a"]) };
        assert_eq!(include.admit("a", "ns"), Ok(()));
        assert_eq!(include.admit("b", "ns").unwrap_err(), "namespace \"b\" is not in ns.include");
        assert_eq!(exclude.admit("b", "ns"), Ok(()));
        assert_eq!(exclude.admit("a", "ns").unwrap_err(), "namespace \"a\" is in ns.exclude");
        assert_eq!(Namespaces::default().admit("any", "ns"), Ok(()));
        assert!(Namespaces { include: list(&["a"]), exclude: list(&["b"]) }.has_both());
        assert!(!include.has_both());
    }
}
