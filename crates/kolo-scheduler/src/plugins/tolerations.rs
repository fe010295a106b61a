//! Pod tolerations, read once per cycle, and the Kubernetes matching rule
//! (shared by TaintToleration and NodeUnschedulable).

use k8s_openapi::api::core::v1::Pod;
use kolo_core::node::{Taint, TaintEffect};

/// One toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Empty with `Exists` tolerates every key.
    pub key: String,
    /// `Exists` ignores the value; `Equal` (the default) compares it.
    pub exists: bool,
    /// Compared with `Equal`.
    pub value: String,
    /// `None` tolerates every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Whether this toleration tolerates `taint` (Kubernetes'
    /// `ToleratesTaint`).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != *taint.key {
            return false;
        }
        self.exists || self.value == *taint.value
    }
}

/// The pod's tolerations. Unknown operators and effects tolerate nothing,
/// as in Kubernetes (validation rejects them before they reach a
/// scheduler).
pub fn tolerations(pod: &Pod) -> Vec<Toleration> {
    let Some(list) = pod.spec.as_ref().and_then(|s| s.tolerations.as_ref()) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|t| {
            let exists = match t.operator.as_deref() {
                None | Some("") | Some("Equal") => false,
                Some("Exists") => true,
                Some(_) => return None,
            };
            let effect = match t.effect.as_deref() {
                None | Some("") => None,
                Some(e) => Some(TaintEffect::parse(e)?),
            };
            Some(Toleration {
                key: t.key.clone().unwrap_or_default(),
                exists,
                value: t.value.clone().unwrap_or_default(),
                effect,
            })
        })
        .collect()
}

/// Whether some toleration tolerates `taint`.
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint { key: key.into(), value: value.into(), effect }
    }

    #[test]
    fn kubernetes_matching_rules() {
        let pod = pod_from_yaml(
            "metadata: {name: p}\nspec:\n  containers: []\n  tolerations:\n  - {key: a, operator: Equal, value: x, effect: NoSchedule}\n  - {key: b, operator: Exists}\n  - {key: c, value: y}\n  - {operator: Exists, effect: NoExecute}\n  - {key: d, operator: Bogus}\n",
        );
        let ts = tolerations(&pod);
        assert_eq!(ts.len(), 4, "the unknown operator is dropped");
        let cases = [
            (taint("a", "x", TaintEffect::NoSchedule), true),
            (taint("a", "z", TaintEffect::NoSchedule), false),
            (taint("a", "x", TaintEffect::PreferNoSchedule), false),
            (taint("b", "anything", TaintEffect::NoSchedule), true),
            (taint("c", "y", TaintEffect::PreferNoSchedule), true),
            (taint("c", "", TaintEffect::NoSchedule), false),
            (taint("zzz", "", TaintEffect::NoExecute), true),
            (taint("zzz", "", TaintEffect::NoSchedule), false),
            (taint("d", "", TaintEffect::NoSchedule), false),
        ];
        for (t, want) in cases {
            assert_eq!(tolerated(&ts, &t), want, "{t:?}");
        }
    }
}
