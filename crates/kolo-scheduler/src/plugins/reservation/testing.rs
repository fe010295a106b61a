//! Builders for this module's tests.

use kolo_api::crd::Reservation;

/// Reservation `name` (uid `uid-<name>`, created at 1,800,000,000 s)
/// reserving `requests` (flow-style YAML map body, `cpu: 2, memory: 1Gi`)
/// for pods labelled `owner: <name>`, with `extra` lines of `spec` (joined
/// by `\n  `).
pub fn reservation(name: &str, requests: &str, extra: &str) -> Reservation {
    let yaml = format!(
        "metadata:\n  name: {name}\n  uid: uid-{name}\n  creationTimestamp: \"2027-01-15T08:00:00Z\"\nspec:\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: c\n        resources:\n          requests: {{{requests}}}\n  owners:\n  - labelSelector: {{matchLabels: {{owner: {name}}}}}\n  {extra}\n"
    );
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("test reservation: {e}\n{yaml}"))
}
