//! One serving certificate for every webhook replica, kept in a Secret.
//!
//! The first replica to start generates a CA and a serving certificate and
//! creates the Secret; the others (and later restarts) read it. Two
//! replicas racing both generate, one create wins (the other gets 409 and
//! reads the winner's), so all serve the certificate the registered
//! `caBundle` trusts.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::server::tls::{self, GeneratedCertificates, SelfSignedOptions};
use crate::error::KubeError;

/// The Secret's key of the CA bundle.
pub const CA: &str = "ca.crt";
/// The Secret's key of the serving certificate chain.
pub const CERT: &str = "tls.crt";
/// The Secret's key of the serving key.
pub const KEY: &str = "tls.key";

/// The certificates a Secret holds; `None` when a key is missing.
pub fn from_secret(secret: &Secret) -> Option<GeneratedCertificates> {
    let data = secret.data.as_ref()?;
    let text = |k: &str| data.get(k).and_then(|b| String::from_utf8(b.0.clone()).ok());
    Some(GeneratedCertificates {
        ca_cert_pem: text(CA)?,
        cert_chain_pem: text(CERT)?,
        key_pem: text(KEY)?,
    })
}

/// The certificates in Secret `namespace/name`, created with new ones if
/// it does not exist.
pub async fn shared_certificates(
    client: &Client,
    (namespace, name): &(String, String),
    options: &SelfSignedOptions,
) -> Result<GeneratedCertificates, KubeError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let object = format!("Secret/{namespace}/{name}");
    for _ in 0..2 {
        if let Some(secret) =
            api.get_opt(name).await.map_err(|e| KubeError::api("get", &object, e))?
        {
            return from_secret(&secret).ok_or_else(|| {
                KubeError::Webhook(format!("{object} lacks {CA}, {CERT} or {KEY}"))
            });
        }
        let generated =
            tls::generate_self_signed(options).map_err(|e| KubeError::Webhook(e.to_string()))?;
        let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/tls".into()),
            data: Some(BTreeMap::from([
                (CA.to_string(), bytes(&generated.ca_cert_pem)),
                (CERT.to_string(), bytes(&generated.cert_chain_pem)),
                (KEY.to_string(), bytes(&generated.key_pem)),
            ])),
            ..Secret::default()
        };
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => {
                tracing::info!(secret = %object, "generated the webhook certificate");
                return Ok(generated);
            }
            // Another replica was first: use its certificate.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(KubeError::api("create", object, e)),
        }
    }
    Err(KubeError::Webhook(format!("{object}: created and gone again; giving up")))
}
