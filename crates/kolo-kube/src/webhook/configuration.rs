//! The Mutating- and ValidatingWebhookConfiguration that send pods to the
//! webhook, written with server-side apply and kept that way.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::error::KubeError;
use crate::health::Health;

/// How the API server reaches the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientTarget {
    /// Through a Service (in a cluster).
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port.
        port: u16,
    },
    /// At a URL (a webhook outside the cluster, e.g. in tests).
    Url(String),
}

/// What to register.
#[derive(Debug, Clone)]
pub struct WebhookConfigurations {
    /// The name of both configurations.
    pub name: String,
    /// How the API server reaches the webhook.
    pub target: ClientTarget,
    /// Only namespaces with these labels (all when empty).
    pub namespace_selector: BTreeMap<String, String>,
    /// The API server gives up after this many seconds (and, with
    /// `failurePolicy: Ignore`, admits the pod unchanged); written within
    /// the 1 to 30 the API accepts.
    pub timeout_seconds: i32,
}

impl WebhookConfigurations {
    fn client_config(&self, path: &str, ca_bundle: &str) -> Value {
        match &self.target {
            ClientTarget::Service { namespace, name, port } => json!({
                "service": {"namespace": namespace, "name": name, "port": port, "path": format!("/{path}")},
                "caBundle": ca_bundle,
            }),
            ClientTarget::Url(base) => json!({
                "url": format!("{}/{path}", base.trim_end_matches('/')),
                "caBundle": ca_bundle,
            }),
        }
    }

    fn webhook(&self, path: &str, operations: &[&str], ca_bundle: &str) -> Value {
        let mut selector = json!({});
        if !self.namespace_selector.is_empty() {
            selector = json!({"matchLabels": self.namespace_selector});
        }
        json!({
            "name": format!("{path}.kolo.koordinator.sh"),
            "clientConfig": self.client_config(path, ca_bundle),
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations,
                       "resources": ["pods"], "scope": "Namespaced"}],
            "namespaceSelector": selector,
            "failurePolicy": "Ignore",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": self.timeout_seconds.clamp(1, 30),
        })
    }

    /// The MutatingWebhookConfiguration (`/mutate-pod`, on CREATE).
    pub fn mutating(&self, ca_bundle: &str) -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.name, "labels": {"app.kubernetes.io/managed-by": "kolo-manager"}},
            "webhooks": [self.webhook("mutate-pod", &["CREATE"], ca_bundle)],
        })
    }

    /// The ValidatingWebhookConfiguration (`/validate-pod`, on CREATE and
    /// UPDATE).
    pub fn validating(&self, ca_bundle: &str) -> Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.name, "labels": {"app.kubernetes.io/managed-by": "kolo-manager"}},
            "webhooks": [self.webhook("validate-pod", &["CREATE", "UPDATE"], ca_bundle)],
        })
    }
}

/// How often the configurations are re-applied (someone may have edited
/// the `caBundle` away).
const REAPPLY: Duration = Duration::from_secs(60);

/// Applies both configurations now, every minute and whenever the CA
/// bundle changes (a renewed certificate); errors are logged
/// and retried (with a short delay) rather than fatal: the webhook serves
/// whether or not it is registered.
pub async fn keep_registered(
    client: Client,
    configurations: WebhookConfigurations,
    mut ca_bundle: tokio::sync::watch::Receiver<String>,
    health: Arc<Health>,
) -> Result<(), KubeError> {
    let params = PatchParams::apply("kolo-manager").force();
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client);
    let name = configurations.name.clone();
    loop {
        let bundle = ca_bundle.borrow_and_update().clone();
        let ca_bundle_now = &bundle;
        let m = mutating
            .patch(&name, &params, &Patch::Apply(configurations.mutating(ca_bundle_now)))
            .await;
        health.count("apply_webhook_configuration", &m);
        let v = validating
            .patch(&name, &params, &Patch::Apply(configurations.validating(ca_bundle_now)))
            .await;
        health.count("apply_webhook_configuration", &v);
        let wait = match (m, v) {
            (Ok(_), Ok(_)) => {
                tracing::debug!(%name, "webhook configurations applied");
                REAPPLY
            }
            (m, v) => {
                for e in [m.err(), v.err()].into_iter().flatten() {
                    let e = KubeError::api("apply", format!("webhook configuration {name}"), e);
                    tracing::warn!(error = %e, "registering the webhook failed; retrying");
                }
                Duration::from_secs(5)
            }
        };
        // A renewed certificate's bundle is registered at once.
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            changed = ca_bundle.changed() => {
                if changed.is_err() {
                    // The certificate's keeper is gone: keep the last bundle.
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_never_block_pod_creation() {
        let targets = [
            ClientTarget::Service {
                namespace: "kolo-system".into(),
                name: "kolo-webhook".into(),
                port: 443,
            },
            ClientTarget::Url("https://127.0.0.1:9443/".into()),
        ];
        for target in targets {
            let c = WebhookConfigurations {
                name: "kolo".into(),
                target: target.clone(),
                namespace_selector: BTreeMap::new(),
                timeout_seconds: 3,
            };
            for (object, path) in
                [(c.mutating("Q0E="), "/mutate-pod"), (c.validating("Q0E="), "/validate-pod")]
            {
                let hook = &object["webhooks"][0];
                assert_eq!(hook["failurePolicy"], "Ignore");
                assert_eq!(hook["timeoutSeconds"], 3);
                assert_eq!(hook["clientConfig"]["caBundle"], "Q0E=");
                let where_ = match &target {
                    ClientTarget::Service { .. } => hook["clientConfig"]["service"]["path"].clone(),
                    ClientTarget::Url(_) => hook["clientConfig"]["url"].clone(),
                };
                assert!(where_.as_str().unwrap().ends_with(path), "{where_}");
            }
        }
    }

    #[test]
    fn the_timeout_stays_within_what_the_api_accepts() {
        for (asked, written) in [(0, 1), (-5, 1), (1, 1), (30, 30), (31, 30), (600, 30)] {
            let c = WebhookConfigurations {
                name: "kolo".into(),
                target: ClientTarget::Url("https://127.0.0.1:9443".into()),
                namespace_selector: BTreeMap::new(),
                timeout_seconds: asked,
            };
            assert_eq!(c.mutating("Q0E=")["webhooks"][0]["timeoutSeconds"], written, "{asked}");
            assert_eq!(c.validating("Q0E=")["webhooks"][0]["timeoutSeconds"], written, "{asked}");
        }
    }
}
