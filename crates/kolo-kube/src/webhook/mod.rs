//! The manager's admission webhooks: the HTTPS server that carries
//! `kolo-manager`'s pure admission decisions ([`server`]), and the two ways
//! it runs:
//!
//! * in a cluster ([`run`]): the admission state fed from watches
//!   ([`admission`]), a serving certificate shared by every replica
//!   through a Secret ([`certs`]) and renewed before it expires
//!   ([`rotation`]), and the Mutating /
//!   ValidatingWebhookConfiguration kept pointing at it with the right
//!   `caBundle` ([`configuration`]);
//! * on its own ([`standalone`]), with a fixed state read from files.
//!
//! The configurations use `failurePolicy: Ignore` and a short timeout: pod
//! creation never depends on kolo being up (a pod admitted while the
//! webhook is away simply is not mutated; the components fall back to the
//! pod's own labels).

pub mod admission;
pub mod certs;
pub mod configuration;
pub mod rotation;
pub mod server;
pub mod standalone;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

pub use configuration::{ClientTarget, WebhookConfigurations};

use self::server::state::SharedState;
use self::server::tls::{self, SelfSignedOptions};
use self::server::{Limits, Webhook, WebhookServer};
use crate::error::KubeError;
use crate::health::Health;

/// How the webhook is served and registered.
#[derive(Debug, Clone)]
pub struct WebhookOptions {
    /// Where the HTTPS server listens.
    pub listen: SocketAddr,
    /// The Secret (namespace, name) holding the CA and serving certificate
    /// every replica uses; created by the first replica that starts.
    pub secret: (String, String),
    /// What the generated certificate covers.
    pub certificate: SelfSignedOptions,
    /// How the API server reaches the webhook, and what it registers.
    pub configurations: WebhookConfigurations,
    /// How long a decision may take before the pod is admitted unchanged.
    pub decision_timeout: Duration,
    /// When the shared certificate is checked and renewed.
    pub rotation: rotation::RotationPolicy,
}

/// Serves the webhook until the process ends: loads (or creates) the
/// shared certificate, starts following profiles, namespaces and
/// PriorityClasses, registers the webhook configurations, and serves.
/// The webhooks' metrics and readiness join the process's `health`.
pub async fn run(
    client: Client,
    options: WebhookOptions,
    health: Arc<Health>,
) -> Result<(), KubeError> {
    let certs = certs::shared_certificates(&client, &options.secret, &options.certificate).await?;
    let (bundle, ca_bundle) = tokio::sync::watch::channel(certs.ca_bundle_base64());
    let webhook_error = |e: tls::TlsError| KubeError::Webhook(e.to_string());
    let resolver = tls::CertResolver::new(certs.certified_key().map_err(webhook_error)?);
    let config = tls::server_config(Arc::clone(&resolver)).map_err(webhook_error)?;
    tokio::spawn(rotation::keep_fresh(
        client.clone(),
        options.secret.clone(),
        options.certificate.clone(),
        options.rotation,
        rotation::Served { resolver, bundle },
        certs,
        Arc::clone(&health),
    ));
    let state = SharedState::pending();
    admission::follow(client.clone(), state.clone());
    let limits = Limits { decision_timeout: options.decision_timeout, ..Limits::default() };
    let webhook = Webhook::new(state).with_limits(limits).with_health(Arc::clone(&health));
    let server = WebhookServer::bind(options.listen, config, webhook)
        .await
        .map_err(|e| KubeError::Webhook(e.to_string()))?;
    tracing::info!(addr = %server.local_addr(), "admission webhook serving");
    let registration =
        configuration::keep_registered(client, options.configurations, ca_bundle, health);
    tokio::select! {
        () = server.serve(std::future::pending()) => Ok(()),
        r = registration => r,
    }
}
