//! PodDisruptionBudgets as preemption reads them: which potential victims
//! of a node would be evicted against a budget (kube-scheduler's
//! `filterPodsWithPDBViolation`).
//!
//! Rules, as kube-scheduler's:
//! * a budget applies to pods of its namespace that its selector matches;
//!   a missing or empty selector matches **nothing**;
//! * a pod listed in the budget's `status.disruptedPods` was already
//!   counted by the API server: it neither uses nor violates the budget;
//! * going through the victims most important first, each matching pod
//!   takes one of the budget's `status.disruptionsAllowed`; a pod that
//!   finds none left violates it.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kolo_core::HasMeta;
use kolo_core::selector::LabelSelector;

use crate::framework::PodInfo;

/// One budget, compiled.
#[derive(Debug, Clone, PartialEq)]
struct Budget {
    namespace: String,
    /// `None`: matches nothing (missing, empty or unreadable selector).
    selector: Option<LabelSelector>,
    allowed: i32,
    disrupted: Vec<String>,
}

/// Every budget the scheduler knows, by `namespace/name`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    by_key: BTreeMap<String, Budget>,
}

impl Budgets {
    /// Adds or replaces a budget.
    pub fn apply(&mut self, pdb: &PodDisruptionBudget) {
        let namespace = pdb.metadata.namespace.clone().unwrap_or_default();
        let name = pdb.metadata.name.as_deref().unwrap_or_default();
        let selector = pdb
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .and_then(|s| LabelSelector::compile(s).ok())
            .filter(|s| !s.is_empty());
        let status = pdb.status.as_ref();
        let budget = Budget {
            selector,
            allowed: status.map_or(0, |s| s.disruptions_allowed),
            disrupted: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default(),
            namespace: namespace.clone(),
        };
        self.by_key.insert(format!("{namespace}/{name}"), budget);
    }

    /// Forgets the budget `namespace/name`.
    pub fn remove(&mut self, key: &str) {
        self.by_key.remove(key);
    }

    /// Whether there are none (preemption then skips the check).
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// For victims given most important first, whether evicting each would
    /// violate a budget (the budgets' allowances are shared among them).
    pub fn violations(&self, victims: &[&PodInfo]) -> Vec<bool> {
        let mut allowed: Vec<i32> = self.by_key.values().map(|b| b.allowed).collect();
        victims
            .iter()
            .map(|pod| {
                let view = pod.view();
                let mut violated = false;
                for (budget, left) in self.by_key.values().zip(allowed.iter_mut()) {
                    let matches = budget.namespace == view.namespace()
                        && budget.selector.as_ref().is_some_and(|s| s.matches(view.labels()));
                    if !matches || budget.disrupted.iter().any(|d| d == view.name()) {
                        continue;
                    }
                    *left -= 1;
                    violated |= *left < 0;
                }
                violated
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod_from_yaml;

    fn pdb(yaml: &str) -> PodDisruptionBudget {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn pod(namespace: &str, name: &str, app: &str) -> PodInfo {
        PodInfo::new(pod_from_yaml(&format!(
            "metadata: {{name: {name}, namespace: {namespace}, labels: {{app: {app}}}}}\nspec: {{containers: []}}"
        )))
        .unwrap()
    }

    #[test]
    fn allowances_are_shared_in_importance_order() {
        let mut budgets = Budgets::default();
        budgets.apply(&pdb(
            "metadata: {name: web, namespace: a}\n\
             spec: {selector: {matchLabels: {app: web}}}\n\
             status: {disruptionsAllowed: 1, currentHealthy: 3, desiredHealthy: 2, expectedPods: 3}",
        ));
        let (w1, w2, w3) = (pod("a", "w1", "web"), pod("a", "w2", "web"), pod("a", "w3", "web"));
        let other_ns = pod("b", "w4", "web");
        let other_app = pod("a", "db", "db");
        // The first web pod takes the one allowed disruption; the next
        // ones violate it. Other namespaces and labels are not covered.
        assert_eq!(
            budgets.violations(&[&w1, &other_ns, &w2, &other_app, &w3]),
            [false, false, true, false, true]
        );
        // Each node's check starts from the full allowance.
        assert_eq!(budgets.violations(&[&w3]), [false]);
    }

    #[test]
    fn disrupted_pods_and_empty_selectors_are_not_counted() {
        let mut budgets = Budgets::default();
        budgets.apply(&pdb(
            "metadata: {name: web, namespace: a}\n\
             spec: {selector: {matchLabels: {app: web}}}\n\
             status: {disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2,\n\
                      disruptedPods: {w1: '2026-01-01T00:00:00Z'}}",
        ));
        budgets.apply(&pdb(
            "metadata: {name: all, namespace: a}\n\
             spec: {selector: {}}\n\
             status: {disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2}",
        ));
        let (w1, w2) = (pod("a", "w1", "web"), pod("a", "w2", "web"));
        assert_eq!(budgets.violations(&[&w1, &w2]), [false, true]);
        budgets.remove("a/web");
        assert_eq!(budgets.violations(&[&w1, &w2]), [false, false], "empty selector: nothing");
        assert!(!budgets.is_empty());
    }
}
