//! `kolo webhook`: wiring for [`kolo_manager::whatif::admission`] — reads
//! the pods, profiles and state files, prints the decisions.
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
use kolo_manager::webhook::{AdmissionInputs, AdmissionState, Operation};
use kolo_manager::whatif::admission::{
    mutate_all, pair_old_pods, validate_all, write_verdicts, write_yaml,
};

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
    #[error("{file}: {source}")]
    NoOldPod {
        /// The old-pod file.
        file: PathBuf,
        /// Which pod.
        source: kolo_manager::whatif::admission::MissingOldPod,
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

/// The pods of `--pod`, each with its old version from `--old-pod`.
fn pods_with_old(
    pod_file: &Path,
    old_file: Option<&PathBuf>,
    default_namespace: &str,
) -> Result<Vec<(Pod, Option<Pod>)>, BoxError> {
    let pods = load_pods(pod_file)?;
    let old = match old_file {
        None => vec![None; pods.len()],
        Some(file) => pair_old_pods(load_pods(file)?, &pods, default_namespace)
            .map_err(|source| WebhookCliError::NoOldPod { file: file.clone(), source })?,
    };
    Ok(pods.into_iter().zip(old).collect())
}

/// The admission state from the profile and state files, with
/// Koordinator's PriorityClasses assumed and `--namespace-labels` applied
/// to the pods' namespaces.
fn admission_state(
    args: &MutateArgs,
    pods: &[(Pod, Option<Pod>)],
) -> Result<AdmissionState, BoxError> {
    let snapshot = crate::load_snapshots(&[&args.profiles[..], &args.state[..]].concat())?;
    let mut inputs = AdmissionInputs::from_snapshot(&snapshot);
    inputs.assume_koordinator_priority_classes();
    if let Some(labels) = &args.namespace_labels {
        for (pod, _) in pods {
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

fn mutate(args: &MutateArgs, out: &mut dyn Write) -> Result<(), BoxError> {
    let pods = pods_with_old(&args.pod, args.old_pod.as_ref(), &args.namespace)?;
    let state = admission_state(args, &pods)?;
    let operation = match args.operation {
        OperationArg::Create => Operation::Create,
        OperationArg::Update => Operation::Update,
    };
    let seed = args.seed.unwrap_or_else(random_seed);
    let report = mutate_all(&state, operation, pods, &args.namespace, seed);
    match args.output {
        MutateOutput::Json => crate::write_json(&report, out)?,
        MutateOutput::Yaml => write_yaml(&report, out)?,
        MutateOutput::Patch => {
            for result in report.pods.iter().filter(|r| r.denied.is_none()) {
                serde_json::to_writer(&mut *out, &result.patch)
                    .map_err(|e| WebhookCliError::Serialize(e.to_string()))?;
                writeln!(out)?;
            }
        }
    }
    denied_error(report.denials(), report.pods.len())
}

/// `Ok` when nothing was denied, else the summary error.
fn denied_error(denials: Vec<String>, total: usize) -> Result<(), BoxError> {
    if denials.is_empty() {
        return Ok(());
    }
    Err(WebhookCliError::Denied { count: denials.len(), total, details: denials.join("; ") }.into())
}

fn validate(args: &ValidateArgs, out: &mut dyn Write) -> Result<(), BoxError> {
    let default_namespace = "default";
    let pods = pods_with_old(&args.pod, args.old_pod.as_ref(), default_namespace)?;
    let results = validate_all(pods, default_namespace);
    match args.output {
        ValidateOutput::Json => crate::write_json(&serde_json::json!({ "pods": results }), out)?,
        ValidateOutput::Text => write_verdicts(&results, out)?,
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
