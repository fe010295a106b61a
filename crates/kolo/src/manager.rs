//! `kolo manager`: the manager's long-running components.
//!
//! `kolo manager webhook` runs the admission webhook HTTPS server alone
//! (`kolo_kube::webhook::standalone`), deciding with profiles, namespaces
//! and PriorityClasses read from files; `kolo manager run` is the manager
//! against a cluster (`crate::manager_run`).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use kolo_core::snapshot::Snapshot;
use kolo_kube::webhook::server::tls::{self, CertificateSource, SelfSignedOptions};
use kolo_kube::webhook::server::{DEFAULT_MAX_BODY_BYTES, Limits};
use kolo_kube::webhook::standalone::{self, StandaloneError, StandaloneOptions};
use kolo_manager::webhook::AdmissionState;

use crate::logging::LogFormat;

/// `kolo manager` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run the admission webhook server alone: `/mutate-pod` (colocation
    /// profiles), `/validate-pod` (QoS rules), `/healthz`, `/readyz` and
    /// `/metrics`, over HTTPS.
    ///
    /// The serving certificate comes from `--tls-cert` / `--tls-key` (PEM,
    /// reloaded when the files change), or is generated at start with
    /// `--self-signed`: a new CA and a certificate it signs, the CA written
    /// to `--ca-out` or printed (PEM and base64 for the webhook
    /// configurations' `caBundle`). Stops gracefully on Ctrl-C or SIGTERM.
    #[command(group(clap::ArgGroup::new("certificate").required(true).args(["tls_cert", "self_signed"])))]
    Webhook(WebhookArgs),
    /// Run the SLO controllers against the cluster: batch / mid allocatable
    /// on node status, NodeMetric spec and NodeSLO per node from the
    /// `slo-controller-config` ConfigMap, with leader election; serves
    /// `/healthz`, `/readyz` and `/metrics`.
    Run(Box<crate::manager_run::Args>),
}

/// `kolo manager webhook` options.
#[derive(Debug, clap::Args)]
pub struct WebhookArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:9443")]
    listen: SocketAddr,
    /// Serving certificate chain (PEM), reloaded when it changes.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The serving certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Generate a CA and a serving certificate at start.
    #[arg(long, conflicts_with = "tls_cert")]
    self_signed: bool,
    /// Write the generated CA certificate (PEM) to this file instead of
    /// printing it.
    #[arg(long, value_name = "FILE", requires = "self_signed")]
    ca_out: Option<PathBuf>,
    /// A DNS name the generated certificate covers (repeat for more).
    /// Default: localhost and the kolo-webhook Service in kolo-system
    /// (kolo-webhook, kolo-webhook.kolo-system, kolo-webhook.kolo-system.svc,
    /// kolo-webhook.kolo-system.svc.cluster.local). Giving any --dns-name
    /// or --ip replaces both defaults.
    #[arg(long = "dns-name", value_name = "NAME", requires = "self_signed")]
    dns_names: Vec<String>,
    /// An IP address the generated certificate covers (repeat for more).
    /// Default: 127.0.0.1.
    #[arg(long = "ip", value_name = "IP", requires = "self_signed")]
    ips: Vec<IpAddr>,
    /// Validity of the generated certificates, in days.
    #[arg(long, value_name = "DAYS", default_value_t = 365, requires = "self_signed")]
    validity_days: u32,
    /// Files (YAML or JSON, `kubectl get -o yaml` dumps; `-` reads stdin)
    /// with the ClusterColocationProfiles, Namespaces and PriorityClasses
    /// to decide with. May repeat; other kinds are ignored.
    #[arg(long = "state", value_name = "FILE")]
    state: Vec<PathBuf>,
    /// Largest accepted request body; larger ones get HTTP 413.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// How long a decision may take before the pod is admitted unchanged.
    #[arg(long, value_name = "MS", default_value_t = 500)]
    timeout_ms: u64,
    /// How often to check --tls-cert / --tls-key for changes.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    cert_check_interval_secs: u64,
    /// Log format (the level comes from RUST_LOG, default `info`).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// Why `kolo manager webhook` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A `--state` file could not be loaded.
    #[error("--state: {0}")]
    State(#[from] kolo_core::snapshot::SnapshotError),
    /// The certificate could not be generated, or its CA not written.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The webhooks could not be served.
    #[error(transparent)]
    Webhook(#[from] StandaloneError),
    /// Printing the CA failed.
    #[error("printing the CA: {0}")]
    Print(std::io::Error),
}

/// Runs the command.
pub fn run(command: Command) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match command {
        Command::Webhook(args) => run_webhook(args).map_err(Into::into),
        Command::Run(args) => crate::manager_run::run(*args),
    }
}

fn run_webhook(args: WebhookArgs) -> Result<(), ManagerError> {
    crate::logging::init(args.log_format);
    let limits = Limits {
        max_body_bytes: args.max_body_bytes,
        decision_timeout: Duration::from_millis(args.timeout_ms),
        ..Limits::default()
    };
    // Refuse bad limits before generating, loading or binding anything.
    limits.validate().map_err(StandaloneError::from)?;
    let state = load_state(&args.state)?;
    let (certificate, ca) = certificate(&args)?;
    let options = StandaloneOptions { listen: args.listen, certificate, limits };
    let ca_out = args.ca_out.clone();
    // The CA is published only once the server listens: a failed start
    // (the port in use) leaves an existing --ca-out file alone.
    let started: standalone::StartedHook = Box::new(move |_| match ca {
        Some(ca) => publish_ca(ca_out.as_deref(), &ca).map_err(Into::into),
        None => Ok(()),
    });
    standalone::run(options, state, started, kolo_kube::component::shutdown_signal())?;
    Ok(())
}

/// The admission state of the `--state` files, its problems logged.
fn load_state(files: &[PathBuf]) -> Result<AdmissionState, ManagerError> {
    let snapshot = Snapshot::load_all(files)?;
    let state = AdmissionState::from_snapshot(&snapshot);
    for warning in snapshot.warnings().into_iter().chain(state.warnings()) {
        tracing::warn!("{warning}");
    }
    if files.is_empty() {
        tracing::warn!("no --state given: no colocation profiles, pods are admitted unchanged");
    }
    tracing::info!(
        profiles = snapshot.colocation_profiles.len(),
        namespaces = snapshot.namespaces.len(),
        priority_classes = snapshot.priority_classes.len(),
        "admission state loaded"
    );
    Ok(state)
}

/// The serving certificate the options ask for and, for a generated one,
/// its CA (PEM) to publish once the server listens.
fn certificate(
    args: &WebhookArgs,
) -> Result<(CertificateSource, Option<GeneratedCa>), ManagerError> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let check_interval = Duration::from_secs(args.cert_check_interval_secs.max(1));
        return Ok((
            CertificateSource::Files { cert: cert.clone(), key: key.clone(), check_interval },
            None,
        ));
    }
    let mut options =
        SelfSignedOptions { validity_days: args.validity_days, ..SelfSignedOptions::default() };
    if !args.dns_names.is_empty() || !args.ips.is_empty() {
        options.dns_names = args.dns_names.clone();
        options.ips = args.ips.clone();
    }
    let generated = tls::generate_self_signed(&options)?;
    let ca =
        GeneratedCa { pem: generated.ca_cert_pem.clone(), bundle: generated.ca_bundle_base64() };
    Ok((CertificateSource::Generated(generated), Some(ca)))
}

/// A generated CA: its PEM and the base64 `caBundle` of it.
struct GeneratedCa {
    pem: String,
    bundle: String,
}

/// Writes the CA to `path` (atomically) or prints it.
fn publish_ca(path: Option<&std::path::Path>, ca: &GeneratedCa) -> Result<(), ManagerError> {
    match path {
        Some(path) => {
            tls::write_pem(path, &ca.pem)?;
            tracing::info!(path = %path.display(), "generated CA written");
        }
        None => {
            let mut out = std::io::stdout().lock();
            write!(out, "# kolo webhook CA (PEM):\n{}# caBundle:\n{}\n", ca.pem, ca.bundle)
                .and_then(|()| out.flush())
                .map_err(ManagerError::Print)?;
        }
    }
    Ok(())
}
