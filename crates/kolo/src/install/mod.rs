//! `kolo install`: kolo's manifests for `kubectl apply -f -` (CRDs,
//! namespace, PriorityClasses, `slo-controller-config`, RBAC, the
//! Deployments with their PodDisruptionBudgets, the agent's DaemonSet),
//! from templates compiled into the binary and checked values. `deploy/`
//! is this command's output with the defaults (`kolo install --out-dir
//! deploy`; a test keeps them equal).

mod render;
mod values;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::CliError;
use render::{Context, render};
pub use values::Values;

/// `kolo install` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The namespace of kolo's objects (the value `namespace`).
    #[arg(long)]
    namespace: Option<String>,
    /// The image every component runs (the value `image`).
    #[arg(long)]
    image: Option<String>,
    /// The components to install (comma-separated). The CRDs, the
    /// namespace and the PriorityClasses always are.
    #[arg(long, value_delimiter = ',', default_value = "scheduler,manager,descheduler,agent")]
    components: Vec<Component>,
    /// Sets a value by its dotted path, e.g. `scheduler.replicas=3` or
    /// `kubeVersion=1.20` (repeat; `--print-values` lists them).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Writes one file per part and a kustomization.yaml into this
    /// directory (each file replaced atomically) instead of printing.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Prints the values (defaults with the flags applied) as YAML and
    /// exits.
    #[arg(long)]
    print_values: bool,
}

/// A component kolo can install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Component {
    /// The scheduler (a Deployment).
    Scheduler,
    /// The SLO controllers and the admission webhooks (a Deployment).
    Manager,
    /// The descheduler (a Deployment).
    Descheduler,
    /// The node agent (a DaemonSet).
    Agent,
}

impl Component {
    fn name(self) -> &'static str {
        match self {
            Component::Scheduler => "scheduler",
            Component::Manager => "manager",
            Component::Descheduler => "descheduler",
            Component::Agent => "agent",
        }
    }

    /// Replicas of a leader-elected Deployment; `None` for the DaemonSet.
    fn replicas(self, values: &Values) -> Option<u64> {
        match self {
            Component::Scheduler => Some(values.scheduler.replicas),
            Component::Manager => Some(values.manager.replicas),
            Component::Descheduler => Some(values.descheduler.replicas),
            Component::Agent => None,
        }
    }

    /// Its templates: RBAC, then the workload.
    fn templates(self) -> [(&'static str, &'static str); 2] {
        match self {
            Component::Scheduler => [
                ("rbac-scheduler.yaml", include_str!("templates/rbac-scheduler.yaml")),
                ("scheduler.yaml", include_str!("templates/scheduler.yaml")),
            ],
            Component::Manager => [
                ("rbac-manager.yaml", include_str!("templates/rbac-manager.yaml")),
                ("manager.yaml", include_str!("templates/manager.yaml")),
            ],
            Component::Descheduler => [
                ("rbac-descheduler.yaml", include_str!("templates/rbac-descheduler.yaml")),
                ("descheduler.yaml", include_str!("templates/descheduler.yaml")),
            ],
            Component::Agent => [
                ("rbac-agent.yaml", include_str!("templates/rbac-agent.yaml")),
                ("agent.yaml", include_str!("templates/agent.yaml")),
            ],
        }
    }
}

/// Why `kolo install` refused.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// `--set` names no value.
    #[error("--set: unknown key {key}; the keys are: {}", known.join(", "))]
    UnknownKey {
        /// The key given.
        key: String,
        /// Every key there is.
        known: Vec<String>,
    },
    /// `--set` is malformed.
    #[error("--set {set}: {reason}")]
    Set {
        /// The argument.
        set: String,
        /// What is wrong.
        reason: String,
    },
    /// A value is out of its range.
    #[error("value {key} = {value:?}: {reason}")]
    Invalid {
        /// The value's key.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A template is broken (a kolo bug).
    #[error("template {file}: {reason}")]
    Template {
        /// The template.
        file: String,
        /// What is wrong.
        reason: String,
    },
}

/// One file of the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its file name (in `deploy/`).
    pub file: &'static str,
    /// Its YAML documents.
    pub text: String,
}

/// Every part for `components` with `values`, in apply order.
pub fn manifests(values: &Values, components: &[Component]) -> Result<Vec<Part>, InstallError> {
    let mut components = components.to_vec();
    components.sort();
    components.dedup();
    let context = context(values)?;
    let mut crds = Vec::new();
    crate::crds::print_crds(&mut crds).expect("CRDs serialize to memory");
    let mut parts =
        vec![Part { file: "crds.yaml", text: String::from_utf8(crds).expect("YAML is UTF-8") }];
    let always = [
        ("namespace.yaml", include_str!("templates/namespace.yaml")),
        ("priorityclasses.yaml", include_str!("templates/priorityclasses.yaml")),
    ];
    for (file, template) in always {
        parts.push(Part { file, text: render(file, template, &context)? });
    }
    if components.contains(&Component::Manager) {
        let file = "slo-controller-config.yaml";
        let template = include_str!("templates/slo-controller-config.yaml");
        parts.push(Part { file, text: render(file, template, &context)? });
    }
    for component in &components {
        parts.push(rendered(component.templates()[0], &context)?);
    }
    for component in &components {
        let mut part = rendered(component.templates()[1], &context)?;
        if component.replicas(values).is_some_and(|r| r > 1) {
            let mut context = context.clone();
            context.insert("component".to_string(), component.name().to_string());
            let pdb = render("pdb.yaml", include_str!("templates/pdb.yaml"), &context)?;
            part.text.push_str("---\n");
            part.text.push_str(&pdb);
        }
        parts.push(part);
    }
    Ok(parts)
}

fn rendered(
    (file, template): (&'static str, &str),
    context: &Context,
) -> Result<Part, InstallError> {
    Ok(Part { file, text: render(file, template, context)? })
}

/// The placeholders' values: every value by its dotted key, the derived
/// ones (the config namespace, the PodDisruptionBudget API version), and
/// the PriorityClasses' values from `kolo_api`.
fn context(values: &Values) -> Result<Context, InstallError> {
    values.check()?;
    let mut context = values::by_key(values);
    context.insert("manager.configNamespace".to_string(), values.config_namespace().to_string());
    context
        .insert("agent.kubeletSubresource".to_string(), values.kubelet_subresource().to_string());
    let pdb = if values.kube_minor() >= 21 { "policy/v1" } else { "policy/v1beta1" };
    context.insert("pdbApiVersion".to_string(), pdb.to_string());
    for class in kolo_api::PriorityClass::NAMED {
        let key = class.as_str().trim_start_matches("koord-");
        context.insert(format!("priority.{key}.value"), class.installed_value().to_string());
        context.insert(
            format!("priority.{key}.preemptionPolicy"),
            class.installed_preemption_policy().to_string(),
        );
    }
    Ok(context)
}

/// The kustomization.yaml listing `parts`, with the image split into name
/// and tag so `kustomize edit set image` works.
fn kustomization(parts: &[Part], values: &Values) -> String {
    let (name, tag) = match values.image.rsplit_once(':').filter(|(_, t)| !t.contains('/')) {
        Some((name, tag)) => (name, tag),
        None => (values.image.as_str(), "latest"),
    };
    let mut text = String::from(
        "# kolo: everything a cluster needs, as plain manifests, generated by\n\
         # `kolo install --out-dir deploy` (do not edit: change the templates in\n\
         # crates/kolo/src/install/ or pass --set).\n\
         #   kubectl apply -k deploy/\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         resources:\n",
    );
    for part in parts {
        text.push_str(&format!("  - {}\n", part.file));
    }
    text.push_str(&format!(
        "# The one image every component runs; change the tag (or use\n\
         # `kustomize edit set image`) to install a release you built.\n\
         images:\n  - name: {name}\n    newName: {name}\n    newTag: \"{tag}\"\n"
    ));
    text
}

/// Writes `text` to `path` atomically (a temporary file in the same
/// directory, renamed over it).
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Runs `kolo install`.
pub fn run(args: &Args, out: &mut impl Write) -> Result<(), CliError> {
    let mut sets = Vec::new();
    if let Some(ns) = &args.namespace {
        sets.push(format!("namespace={ns}"));
    }
    if let Some(image) = &args.image {
        sets.push(format!("image={image}"));
    }
    sets.extend(args.sets.iter().cloned());
    let command = |e: InstallError| CliError::Command(Box::new(e));
    let values = Values::default().with_sets(&sets).map_err(command)?;
    if args.print_values {
        let yaml =
            serde_saphyr::to_string(&values).map_err(|e| CliError::Serialize(e.to_string()))?;
        out.write_all(yaml.as_bytes())?;
        return Ok(());
    }
    let parts = manifests(&values, &args.components).map_err(command)?;
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            let io = |path: PathBuf| {
                move |e: std::io::Error| {
                    CliError::Io(std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
                }
            };
            for part in &parts {
                let path = dir.join(part.file);
                write_atomic(&path, &part.text).map_err(io(path.clone()))?;
            }
            let path = dir.join("kustomization.yaml");
            write_atomic(&path, &kustomization(&parts, &values)).map_err(io(path.clone()))?;
            writeln!(
                out,
                "wrote {} files and kustomization.yaml to {}",
                parts.len(),
                dir.display()
            )?;
        }
        None => {
            for part in &parts {
                if !part.text.starts_with("---") {
                    out.write_all(b"---\n")?;
                }
                out.write_all(part.text.as_bytes())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
