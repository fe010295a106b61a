//! What-if admission (`kolo webhook mutate|validate`): the admission
//! webhooks' decisions on pods read from files, with the same decision
//! functions and admission state as the webhook server, so what a run
//! reports is what the cluster would do.

use std::collections::BTreeMap;
use std::io::{self, Write};

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::webhook::mutation::seeded_rng;
use crate::webhook::{
    AdmissionState, MutateOutcome, Operation, PodAdmission, ValidateOutcome, mutate_pod,
    validate_pod,
};

/// An updated pod has no old version among the old pods.
#[derive(Debug, thiserror::Error)]
#[error("no Pod {0} (the old version of the pod being updated)")]
pub struct MissingOldPod(pub String);

/// `namespace/name`, with `default_namespace` for a pod without one.
pub fn pod_key(pod: &Pod, default_namespace: &str) -> String {
    let namespace =
        pod.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(default_namespace);
    format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or("<no name>"))
}

/// The old version of each pod, matched by namespace and name.
pub fn pair_old_pods(
    old: Vec<Pod>,
    pods: &[Pod],
    default_namespace: &str,
) -> Result<Vec<Option<Pod>>, MissingOldPod> {
    let old: BTreeMap<String, Pod> =
        old.into_iter().map(|p| (pod_key(&p, default_namespace), p)).collect();
    pods.iter()
        .map(|p| {
            let key = pod_key(p, default_namespace);
            old.get(&key).cloned().map(Some).ok_or(MissingOldPod(key))
        })
        .collect()
}

/// The admission request of a pod, in its own namespace or
/// `default_namespace`.
fn admission(
    operation: Operation,
    pod: Pod,
    old_pod: Option<Pod>,
    default_namespace: &str,
) -> PodAdmission {
    let namespace = pod.metadata.namespace.clone();
    PodAdmission {
        operation,
        namespace: namespace.unwrap_or_else(|| default_namespace.to_string()),
        sub_resource: None,
        pod,
        old_pod,
    }
}

/// One pod's decisions.
#[derive(Debug, Serialize)]
pub struct PodResult {
    /// `namespace/name`.
    pub pod: String,
    /// `patched`, `unchanged` or `denied`.
    pub outcome: &'static str,
    /// The profiles applied, in order.
    pub applied_profiles: Vec<String>,
    /// Why the mutating webhook denied the pod.
    pub denied: Option<String>,
    /// The JSON patch (`[]` when unchanged or denied).
    pub patch: serde_json::Value,
    /// The pod after mutation (the request's pod when unchanged; null when
    /// denied).
    pub mutated: Option<Pod>,
    /// The validating webhook's verdict on `mutated` (null when denied).
    pub validation: Option<Verdict>,
}

/// A validation verdict.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// Whether the pod is admitted.
    pub allowed: bool,
    /// The broken rules.
    pub messages: Vec<String>,
}

impl From<ValidateOutcome> for Verdict {
    fn from(outcome: ValidateOutcome) -> Verdict {
        match outcome {
            ValidateOutcome::Allowed => Verdict { allowed: true, messages: Vec::new() },
            ValidateOutcome::Denied(messages) => Verdict { allowed: false, messages },
        }
    }
}

/// The mutation run (`kolo webhook mutate -o json`).
#[derive(Debug, Serialize)]
pub struct MutateReport {
    /// The seed of the profile draws.
    pub seed: u64,
    /// Problems with the profiles.
    pub warnings: Vec<String>,
    /// One entry per pod, in file order.
    pub pods: Vec<PodResult>,
}

impl MutateReport {
    /// `namespace/name: why` of every pod denied by either webhook.
    pub fn denials(&self) -> Vec<String> {
        let denial = |r: &PodResult| {
            let messages = match (&r.denied, &r.validation) {
                (Some(message), _) => message.clone(),
                (None, Some(v)) if !v.allowed => v.messages.join("; "),
                _ => return None,
            };
            Some(format!("{}: {messages}", r.pod))
        };
        self.pods.iter().filter_map(denial).collect()
    }
}

/// Mutates each pod (with its old version for an update; default: the pod
/// itself) as the mutating webhook would, then validates the result.
pub fn mutate_all(
    state: &AdmissionState,
    operation: Operation,
    pods: Vec<(Pod, Option<Pod>)>,
    default_namespace: &str,
    seed: u64,
) -> MutateReport {
    let mut rng = seeded_rng(seed);
    let mut results = Vec::with_capacity(pods.len());
    for (pod, old_pod) in pods {
        let key = pod_key(&pod, default_namespace);
        let old_pod = match operation {
            Operation::Update => Some(old_pod.unwrap_or_else(|| pod.clone())),
            _ => None,
        };
        let request = admission(operation, pod, old_pod, default_namespace);
        let mut result = PodResult {
            pod: key,
            outcome: "denied",
            applied_profiles: Vec::new(),
            denied: None,
            patch: serde_json::json!([]),
            mutated: None,
            validation: None,
        };
        match mutate_pod(state, &request, &mut rng) {
            MutateOutcome::Denied(message) => result.denied = Some(message),
            MutateOutcome::Unchanged => {
                result.outcome = "unchanged";
                result.validation = Some(validate_pod(&request).into());
                result.mutated = Some(request.pod);
            }
            MutateOutcome::Patched { pod, patch, applied_profiles } => {
                let validated = PodAdmission { pod: *pod, ..request };
                result.outcome = "patched";
                result.applied_profiles = applied_profiles;
                // A JSON patch is plain JSON: it always converts.
                result.patch = serde_json::to_value(&patch).unwrap_or_default();
                result.validation = Some(validate_pod(&validated).into());
                result.mutated = Some(validated.pod);
            }
        }
        results.push(result);
    }
    MutateReport { seed, warnings: state.warnings(), pods: results }
}

/// One pod's validation (`kolo webhook validate -o json`).
#[derive(Debug, Serialize)]
pub struct ValidateResult {
    /// `namespace/name`.
    pub pod: String,
    /// `create` or `update`.
    pub operation: &'static str,
    /// Whether the pod is admitted.
    pub allowed: bool,
    /// The broken rules.
    pub messages: Vec<String>,
}

/// Validates each pod as the validating webhook would: an UPDATE when it
/// has an old version, else a CREATE.
pub fn validate_all(pods: Vec<(Pod, Option<Pod>)>, default_namespace: &str) -> Vec<ValidateResult> {
    let validate = |(pod, old_pod): (Pod, Option<Pod>)| {
        let operation = if old_pod.is_some() { Operation::Update } else { Operation::Create };
        let key = pod_key(&pod, default_namespace);
        let request = admission(operation, pod, old_pod, default_namespace);
        let verdict = Verdict::from(validate_pod(&request));
        ValidateResult {
            pod: key,
            operation: if operation == Operation::Update { "update" } else { "create" },
            allowed: verdict.allowed,
            messages: verdict.messages,
        }
    };
    pods.into_iter().map(validate).collect()
}

/// Writes the mutation run as multi-document YAML: the mutated pods, with
/// the profiles applied and the verdicts as comments.
pub fn write_yaml(report: &MutateReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "# seed: {}", report.seed)?;
    for warning in &report.warnings {
        writeln!(out, "# warning: {warning}")?;
    }
    for result in &report.pods {
        writeln!(out, "---")?;
        match result.outcome {
            "patched" if result.applied_profiles.is_empty() => {
                writeln!(out, "# {}: mutated (no profile applied)", result.pod)?;
            }
            "patched" => {
                let profiles = result.applied_profiles.join(", ");
                writeln!(out, "# {}: mutated by {profiles}", result.pod)?;
            }
            "unchanged" => writeln!(out, "# {}: unchanged", result.pod)?,
            _ => {}
        }
        if let Some(message) = &result.denied {
            writeln!(out, "# {}: denied by the mutating webhook: {message}", result.pod)?;
        }
        if let Some(verdict) = &result.validation {
            if verdict.allowed {
                writeln!(out, "# validation: allowed")?;
            } else {
                writeln!(out, "# validation: denied")?;
                for message in &verdict.messages {
                    writeln!(out, "#   - {message}")?;
                }
            }
        }
        if let Some(pod) = &result.mutated {
            let yaml = serde_saphyr::to_string(pod).map_err(io::Error::other)?;
            out.write_all(yaml.as_bytes())?;
        }
    }
    Ok(())
}

/// Writes the validation run: one line per pod, then one per broken rule.
pub fn write_verdicts(results: &[ValidateResult], out: &mut dyn Write) -> io::Result<()> {
    for r in results {
        let verdict = if r.allowed { "allowed" } else { "denied" };
        writeln!(out, "{} ({}): {verdict}", r.pod, r.operation)?;
        for message in &r.messages {
            writeln!(out, "  - {message}")?;
        }
    }
    Ok(())
}
