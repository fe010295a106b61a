//! The manager's admission webhooks in a cluster: the server from
//! `kolo-manager` fed from watches, a serving certificate shared by every
//! replica through a Secret, and the Mutating / ValidatingWebhookConfiguration
//! kept pointing at it with the right `caBundle`.
//!
//! The configurations use `failurePolicy: Ignore` and a short timeout: pod
//! creation never depends on kolo being up (a pod admitted while the
//! webhook is away simply is not mutated; the components fall back to the
//! pod's own labels).

pub mod admission;
pub mod certs;
pub mod configuration;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kolo_manager::webhook::server::state::SharedState;
use kolo_manager::webhook::server::tls::{self, CertResolver, SelfSignedOptions};
use kolo_manager::webhook::server::{Limits, Webhook, WebhookServer};
use kube::Client;

pub use configuration::{ClientTarget, WebhookConfigurations};

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
}

/// Serves the webhook until the process ends: loads (or creates) the
/// shared certificate, starts following profiles, namespaces and
/// PriorityClasses, registers the webhook configurations, and serves.
pub async fn run(
    client: Client,
    options: WebhookOptions,
    health: Arc<Health>,
) -> Result<(), KubeError> {
    let certs = certs::shared_certificates(&client, &options.secret, &options.certificate).await?;
    let key = certs.certified_key().map_err(|e| KubeError::Webhook(e.to_string()))?;
    let config = tls::server_config(CertResolver::new(key))
        .map_err(|e| KubeError::Webhook(e.to_string()))?;
    let state = SharedState::pending();
    admission::follow(client.clone(), state.clone());
    let limits = Limits { decision_timeout: options.decision_timeout, ..Limits::default() };
    let webhook = Webhook::new(state).with_limits(limits);
    let server = WebhookServer::bind(options.listen, config, webhook)
        .await
        .map_err(|e| KubeError::Webhook(e.to_string()))?;
    tracing::info!(addr = %server.local_addr(), "admission webhook serving");
    let registration = configuration::keep_registered(
        client,
        options.configurations,
        certs.ca_bundle_base64(),
        health,
    );
    tokio::select! {
        () = server.serve(std::future::pending()) => Ok(()),
        r = registration => r,
    }
}
