//! `kolo webhook`: the admission webhooks' decisions, offline.
//!
//! `kolo webhook mutate` runs the mutating webhook on pods read from a
//! file, with the ClusterColocationProfiles, Namespaces and PriorityClasses
//! read from others, then validates the result as the validating webhook
//! would. `kolo webhook validate` runs only the validation. Both use the
//! same decision functions and admission state as the webhook server
//! (`kolo_manager::webhook`), so what they print is what the cluster would
//! do; this file only reads the files and prints.
//!
//! Exit status: 0 when every pod is admitted, 1 when one is denied (the
//! output still shows every pod; stderr says which were denied) or the
//! input cannot be read.

use std::collections::BTreeMap;
use std::error::Error;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use kolo_core::snapshot::Snapshot;
use kolo_manager::webhook::mutation::seeded_rng;
use kolo_manager::webhook::{
    AdmissionInputs, AdmissionState, MutateOutcome, Operation, PodAdmission, ValidateOutcome,
    mutate_pod, validate_pod,
};
use serde::Serialize;

/// A boxed error, as `main` reports it.
type BoxError = Box<dyn Error + Send + Sync>;

/// `kolo webhook` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Mutate pods as the mutating webhook would (ClusterColocationProfiles,
    /// resource translation, the ExtendedResourceSpec annotation), then
    /// validate the result; print the mutated pods, the profiles applied and
    /// the verdicts.
    ///
    /// The koord-prod, koord-mid, koord-batch and koord-free PriorityClasses
    /// are assumed to exist with their default values (9500, 7500, 5500,
    /// 3500) unless a file defines them.
    Mutate(MutateArgs),
    /// Validate pods as the validating webhook would and print the verdicts.
    Validate(ValidateArgs),
}

/// Arguments of `kolo webhook mutate`.
#[derive(Debug, clap::Args)]
pub struct MutateArgs {
    /// Files with ClusterColocationProfiles (YAML or JSON, one or many
    /// objects; `-` reads stdin). May repeat. Namespaces and
    /// PriorityClasses in them are used too.
    #[arg(long = "profile", value_name = "FILE")]
    profiles: Vec<PathBuf>,
    /// The pods to admit: every Pod in the file, in order.
    #[arg(long, value_name = "FILE")]
    pod: PathBuf,
    /// Files with Namespaces (their labels) and PriorityClasses. May repeat.
    #[arg(long = "state", value_name = "FILE")]
    state: Vec<PathBuf>,
    /// Labels of the pods' namespaces, as `key=value,key=value` (replaces
    /// what the files say about those namespaces).
    #[arg(long, value_name = "K=V,...", value_parser = parse_labels)]
    namespace_labels: Option<BTreeMap<String, String>>,
    /// The request namespace of pods without `metadata.namespace`.
    #[arg(long, value_name = "NAME", default_value = "default")]
    namespace: String,
    /// Seed for profile probabilities; without it a random seed is used and
    /// printed, so the run can be repeated.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// The admission operation.
    #[arg(long, value_enum, default_value_t = OperationArg::Create)]
    operation: OperationArg,
    /// For `--operation update`: the pods as stored before the update
    /// (matched by namespace and name; default: the pod itself).
    #[arg(long, value_name = "FILE")]
    old_pod: Option<PathBuf>,
    /// Output format: the mutated pods as YAML (with the profiles applied
    /// and the verdicts as comments), everything as JSON, or only each
    /// pod's RFC 6902 JSON patch (one line per pod).
    #[arg(short, long, value_enum, default_value_t = MutateOutput::Yaml)]
    output: MutateOutput,
}

/// Arguments of `kolo webhook validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The pods to validate: every Pod in the file, in order.
    #[arg(long, value_name = "FILE")]
    pod: PathBuf,
    /// The pods as stored before an update (matched by namespace and name):
    /// validates an UPDATE instead of a CREATE.
    #[arg(long, value_name = "FILE")]
    old_pod: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ValidateOutput::Text)]
    output: ValidateOutput,
}

/// `--operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OperationArg {
    /// CREATE.
    Create,
    /// UPDATE.
    Update,
}

/// `kolo webhook mutate -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum MutateOutput {
    /// The mutated pods, as multi-document YAML.
    Yaml,
    /// Every decision, as JSON.
    Json,
    /// Each pod's JSON patch, one line per pod.
    Patch,
}

/// `kolo webhook validate -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ValidateOutput {
    /// One line per pod, then one line per broken rule.
    Text,
    /// JSON.
    Json,
}

/// Why the command failed.
#[derive(Debug, thiserror::Error)]
enum WebhookCliError {
    /// `--namespace-labels` is malformed.
    #[error("--namespace-labels: {0:?} is not key=value")]
    Label(String),
    /// The pod file holds no pod.
    #[error("{0}: no Pod found")]
    NoPods(PathBuf),
    /// An updated pod has no old version.
    #[error("{file}: no Pod {pod} (the old version of the pod being updated)")]
    NoOldPod {
        /// The old-pod file.
        file: PathBuf,
        /// `namespace/name`.
        pod: String,
    },
    /// Some pods were denied.
    #[error("{count} of {total} pod(s) denied: {details}")]
    Denied {
        /// How many.
        count: usize,
        /// Out of.
        total: usize,
        /// `ns/name: message`, `; `-separated.
        details: String,
    },
    /// Output could not be serialized.
    #[error("serializing output: {0}")]
    Serialize(String),
}

/// Runs the command.
pub fn run(command: &Command, out: &mut dyn Write) -> Result<(), BoxError> {
    match command {
        Command::Mutate(args) => mutate(args, out),
        Command::Validate(args) => validate(args, out),
    }
}

fn parse_labels(text: &str) -> Result<BTreeMap<String, String>, WebhookCliError> {
    text.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(WebhookCliError::Label(pair.to_string())),
        })
        .collect()
}

/// Every Pod in a file.
fn load_pods(path: &Path) -> Result<Vec<Pod>, BoxError> {
    let pods: Vec<Pod> = Snapshot::load(path)?.pods.into_iter().map(|p| p.object).collect();
    if pods.is_empty() {
        return Err(WebhookCliError::NoPods(path.to_path_buf()).into());
    }
    Ok(pods)
}

fn pod_key(pod: &Pod, default_namespace: &str) -> String {
    let namespace =
        pod.metadata.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(default_namespace);
    format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or("<no name>"))
}

/// The old version of each pod, when validating or mutating an update.
fn old_pods(
    file: Option<&PathBuf>,
    pods: &[Pod],
    default_namespace: &str,
) -> Result<Vec<Option<Pod>>, BoxError> {
    let Some(file) = file else { return Ok(vec![None; pods.len()]) };
    let old: BTreeMap<String, Pod> =
        load_pods(file)?.into_iter().map(|p| (pod_key(&p, default_namespace), p)).collect();
    pods.iter()
        .map(|p| {
            let key = pod_key(p, default_namespace);
            match old.get(&key) {
                Some(o) => Ok(Some(o.clone())),
                None => Err(WebhookCliError::NoOldPod { file: file.clone(), pod: key }.into()),
            }
        })
        .collect()
}

/// The admission state from the profile and state files, with
/// Koordinator's PriorityClasses assumed and `--namespace-labels` applied
/// to the pods' namespaces.
fn admission_state(args: &MutateArgs, pods: &[Pod]) -> Result<AdmissionState, BoxError> {
    let mut snapshot = Snapshot::default();
    for file in args.profiles.iter().chain(&args.state) {
        snapshot.add_file(file)?;
    }
    let mut inputs = AdmissionInputs::from_snapshot(&snapshot);
    inputs.assume_koordinator_priority_classes();
    if let Some(labels) = &args.namespace_labels {
        for pod in pods {
            let namespace = pod.metadata.namespace.clone().filter(|n| !n.is_empty());
            let namespace = namespace.unwrap_or_else(|| args.namespace.clone());
            inputs.namespaces.insert(namespace, labels.clone());
        }
    }
    Ok(inputs.build())
}

/// A seed nobody chose: std's per-process random hasher keys.
fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x6b6f6c6f);
    hasher.finish()
}

/// One pod's decisions.
#[derive(Debug, Serialize)]
struct PodResult {
    /// `namespace/name`.
    pod: String,
    /// `patched`, `unchanged` or `denied`.
    outcome: &'static str,
    /// The profiles applied, in order.
    applied_profiles: Vec<String>,
    /// Why the mutating webhook denied the pod.
    denied: Option<String>,
    /// The JSON patch (`[]` when unchanged or denied).
    patch: serde_json::Value,
    /// The pod after mutation (the request's pod when unchanged; null when
    /// denied).
    mutated: Option<Pod>,
    /// The validating webhook's verdict on `mutated` (null when denied).
    validation: Option<Verdict>,
}

/// A validation verdict.
#[derive(Debug, Serialize)]
struct Verdict {
    /// Whether the pod is admitted.
    allowed: bool,
    /// The broken rules.
    messages: Vec<String>,
}

impl From<ValidateOutcome> for Verdict {
    fn from(outcome: ValidateOutcome) -> Verdict {
        match outcome {
            ValidateOutcome::Allowed => Verdict { allowed: true, messages: Vec::new() },
            ValidateOutcome::Denied(messages) => Verdict { allowed: false, messages },
        }
    }
}

/// `kolo webhook mutate -o json`.
#[derive(Debug, Serialize)]
struct MutateReport {
    /// The seed of the profile draws.
    seed: u64,
    /// Problems with the profiles.
    warnings: Vec<String>,
    /// One entry per pod, in file order.
    pods: Vec<PodResult>,
}

fn mutate(args: &MutateArgs, out: &mut dyn Write) -> Result<(), BoxError> {
    let pods = load_pods(&args.pod)?;
    let state = admission_state(args, &pods)?;
    let operation = match args.operation {
        OperationArg::Create => Operation::Create,
        OperationArg::Update => Operation::Update,
    };
    let old = old_pods(args.old_pod.as_ref(), &pods, &args.namespace)?;
    let seed = args.seed.unwrap_or_else(random_seed);
    let mut rng = seeded_rng(seed);
    let mut results = Vec::with_capacity(pods.len());
    for (pod, old_pod) in pods.into_iter().zip(old) {
        let key = pod_key(&pod, &args.namespace);
        let old_pod = match operation {
            Operation::Update => Some(old_pod.unwrap_or_else(|| pod.clone())),
            _ => None,
        };
        let request = PodAdmission {
            operation,
            namespace: pod.metadata.namespace.clone().unwrap_or_else(|| args.namespace.clone()),
            sub_resource: None,
            pod,
            old_pod,
        };
        let result = match mutate_pod(&state, &request, &mut rng) {
            MutateOutcome::Denied(message) => PodResult {
                pod: key,
                outcome: "denied",
                applied_profiles: Vec::new(),
                denied: Some(message),
                patch: serde_json::json!([]),
                mutated: None,
                validation: None,
            },
            MutateOutcome::Unchanged => PodResult {
                pod: key,
                outcome: "unchanged",
                applied_profiles: Vec::new(),
                denied: None,
                patch: serde_json::json!([]),
                validation: Some(validate_pod(&request).into()),
                mutated: Some(request.pod),
            },
            MutateOutcome::Patched { pod, patch, applied_profiles } => {
                let validated = PodAdmission { pod: *pod, ..request };
                PodResult {
                    pod: key,
                    outcome: "patched",
                    applied_profiles,
                    denied: None,
                    patch: serde_json::to_value(&patch)
                        .map_err(|e| WebhookCliError::Serialize(e.to_string()))?,
                    validation: Some(validate_pod(&validated).into()),
                    mutated: Some(validated.pod),
                }
            }
        };
        results.push(result);
    }
    let report = MutateReport { seed, warnings: state.warnings(), pods: results };
    match args.output {
        MutateOutput::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)
                .map_err(|e| WebhookCliError::Serialize(e.to_string()))?;
            writeln!(out)?;
        }
        MutateOutput::Yaml => write_yaml(&report, out)?,
        MutateOutput::Patch => {
            for result in report.pods.iter().filter(|r| r.denied.is_none()) {
                serde_json::to_writer(&mut *out, &result.patch)
                    .map_err(|e| WebhookCliError::Serialize(e.to_string()))?;
                writeln!(out)?;
            }
        }
    }
    let denials = report.pods.iter().filter_map(|r| {
        let messages = match (&r.denied, &r.validation) {
            (Some(message), _) => message.clone(),
            (None, Some(v)) if !v.allowed => v.messages.join("; "),
            _ => return None,
        };
        Some(format!("{}: {messages}", r.pod))
    });
    denied_error(denials.collect(), report.pods.len())
}

fn write_yaml(report: &MutateReport, out: &mut dyn Write) -> Result<(), BoxError> {
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
                writeln!(
                    out,
                    "# {}: mutated by {}",
                    result.pod,
                    result.applied_profiles.join(", ")
                )?;
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
            let yaml = serde_saphyr::to_string(pod)
                .map_err(|e| WebhookCliError::Serialize(e.to_string()))?;
            out.write_all(yaml.as_bytes())?;
        }
    }
    Ok(())
}

/// `Ok` when nothing was denied, else the summary error.
fn denied_error(denials: Vec<String>, total: usize) -> Result<(), BoxError> {
    if denials.is_empty() {
        return Ok(());
    }
    Err(WebhookCliError::Denied { count: denials.len(), total, details: denials.join("; ") }.into())
}

/// `kolo webhook validate -o json`: one entry per pod.
#[derive(Debug, Serialize)]
struct ValidateResult {
    /// `namespace/name`.
    pod: String,
    /// `create` or `update`.
    operation: &'static str,
    /// Whether the pod is admitted.
    allowed: bool,
    /// The broken rules.
    messages: Vec<String>,
}

fn validate(args: &ValidateArgs, out: &mut dyn Write) -> Result<(), BoxError> {
    let pods = load_pods(&args.pod)?;
    let default_namespace = "default";
    let old = old_pods(args.old_pod.as_ref(), &pods, default_namespace)?;
    let mut results = Vec::with_capacity(pods.len());
    for (pod, old_pod) in pods.into_iter().zip(old) {
        let operation = if old_pod.is_some() { Operation::Update } else { Operation::Create };
        let key = pod_key(&pod, default_namespace);
        let request = PodAdmission {
            operation,
            namespace: pod
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| default_namespace.to_string()),
            sub_resource: None,
            pod,
            old_pod,
        };
        let verdict = Verdict::from(validate_pod(&request));
        results.push(ValidateResult {
            pod: key,
            operation: if operation == Operation::Update { "update" } else { "create" },
            allowed: verdict.allowed,
            messages: verdict.messages,
        });
    }
    match args.output {
        ValidateOutput::Json => {
            serde_json::to_writer_pretty(&mut *out, &serde_json::json!({ "pods": results }))
                .map_err(|e| WebhookCliError::Serialize(e.to_string()))?;
            writeln!(out)?;
        }
        ValidateOutput::Text => {
            for r in &results {
                writeln!(
                    out,
                    "{} ({}): {}",
                    r.pod,
                    r.operation,
                    if r.allowed { "allowed" } else { "denied" }
                )?;
                for message in &r.messages {
                    writeln!(out, "  - {message}")?;
                }
            }
        }
    }
    let denials = results
        .iter()
        .filter(|r| !r.allowed)
        .map(|r| format!("{}: {}", r.pod, r.messages.join("; ")));
    denied_error(denials.collect(), results.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_labels_parse() {
        assert_eq!(
            parse_labels("a=b, c = d,e=,").unwrap(),
            BTreeMap::from([
                ("a".to_string(), "b".to_string()),
                ("c".to_string(), "d".to_string()),
                ("e".to_string(), String::new())
            ])
        );
        assert_eq!(parse_labels("").unwrap(), BTreeMap::new());
        assert_eq!(
            parse_labels("novalue").unwrap_err().to_string(),
            "--namespace-labels: \"novalue\" is not key=value"
        );
        assert!(parse_labels("=v").is_err());
    }
}
