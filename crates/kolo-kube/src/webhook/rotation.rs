//! Renewing the shared webhook certificate before it expires, without a
//! restart and without a window in which the API server distrusts a
//! replica.
//!
//! Every replica checks the Secret every [`RotationPolicy::check_interval`]:
//!
//! * a serving certificate other than the one it serves (another replica
//!   renewed it) is loaded into its TLS resolver, and the Secret's CA
//!   bundle re-registered;
//! * a serving certificate that expires within
//!   [`RotationPolicy::renew_before`] is renewed: a new CA and serving
//!   certificate replace the Secret's, with `resourceVersion` (two
//!   replicas renewing at once: one wins, the other reads the winner's).
//!   The Secret's `ca.crt` then holds the new CA **and the previous one**,
//!   and that bundle is registered, so replicas still serving the old
//!   certificate until their next check stay trusted. The next renewal
//!   drops the older CA (the bundle never grows past two).
//!
//! `kolo_webhook_certificate_expiry_timestamp_seconds` exports when the
//! served certificate expires, `kolo_webhook_certificate_renewals_total`
//! the renewals this replica made.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use super::certs::{self, CA};
use super::server::tls::{self, CertResolver, GeneratedCertificates, SelfSignedOptions};
use crate::error::KubeError;
use crate::health::Health;

/// When the certificate is checked and renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationPolicy {
    /// How often each replica reads the Secret.
    pub check_interval: Duration,
    /// Renew once the serving certificate expires within this.
    pub renew_before: Duration,
}

impl Default for RotationPolicy {
    fn default() -> Self {
        RotationPolicy {
            check_interval: Duration::from_secs(600),
            renew_before: Duration::from_secs(30 * 86_400),
        }
    }
}

/// Whether a certificate expiring at `not_after` (Unix seconds) is due
/// for renewal at `now`.
pub fn due(not_after: i64, now: i64, renew_before: Duration) -> bool {
    let margin = i64::try_from(renew_before.as_secs()).unwrap_or(i64::MAX);
    now >= not_after.saturating_sub(margin)
}

/// The `notAfter` (Unix seconds) of the first certificate of a PEM chain.
pub fn not_after(pem_chain: &str) -> Result<i64, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_chain.as_bytes())
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    let cert = pem.parse_x509().map_err(|e| format!("not an X.509 certificate: {e}"))?;
    Ok(cert.validity().not_after.timestamp())
}

/// New certificates for `options`, whose CA bundle also trusts the CA
/// that signed `previous` (only that one: the bundle holds two CAs).
pub fn renewed(
    previous: &GeneratedCertificates,
    options: &SelfSignedOptions,
) -> Result<GeneratedCertificates, String> {
    let mut fresh = tls::generate_self_signed(options).map_err(|e| e.to_string())?;
    let old_ca = first_pem(&previous.ca_cert_pem);
    fresh.ca_cert_pem = format!("{}{old_ca}", fresh.ca_cert_pem);
    Ok(fresh)
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The first PEM block of `text` (with its trailing newline).
fn first_pem(text: &str) -> &str {
    const END: &str = "-----END CERTIFICATE-----";
    match text.find(END) {
        Some(i) => {
            let end = i + END.len();
            let end = if text[end..].starts_with('\n') { end + 1 } else { end };
            &text[..end]
        }
        None => text,
    }
}

/// The rotation's metrics, on the process's `/metrics`.
struct RotationMetrics {
    expiry: Gauge,
    renewals: Counter,
}

impl RotationMetrics {
    fn new(health: &Health) -> Arc<RotationMetrics> {
        let metrics =
            Arc::new(RotationMetrics { expiry: Gauge::default(), renewals: Counter::default() });
        let mut registry = Registry::with_prefix("kolo_webhook_certificate");
        registry.register(
            "expiry_timestamp_seconds",
            "When the served webhook certificate expires (Unix seconds)",
            metrics.expiry.clone(),
        );
        registry.register(
            "renewals",
            "Webhook certificate renewals made by this replica",
            metrics.renewals.clone(),
        );
        health.add_registry(registry);
        metrics
    }
}

/// What the loop serves and registers.
pub struct Served {
    /// The server's certificate resolver.
    pub resolver: Arc<CertResolver>,
    /// The CA bundle to register (base64 of the PEM), for
    /// [`super::configuration::keep_registered`].
    pub bundle: watch::Sender<String>,
}

/// Keeps the served certificate and the registered CA bundle current with
/// the Secret, renewing it when due; runs until the task is dropped.
/// Errors are logged and retried at the next check.
pub async fn keep_fresh(
    client: Client,
    secret: (String, String),
    options: SelfSignedOptions,
    policy: RotationPolicy,
    served: Served,
    mut current: GeneratedCertificates,
    health: Arc<Health>,
) {
    let metrics = RotationMetrics::new(&health);
    let api: Api<Secret> = Api::namespaced(client, &secret.0);
    let object = format!("Secret/{}/{}", secret.0, secret.1);
    loop {
        if let Ok(expiry) = not_after(&current.cert_chain_pem) {
            metrics.expiry.set(expiry);
        }
        match check(&api, &secret.1, &options, policy, &current).await {
            Ok(Some((certs, renewed))) => {
                match certs.certified_key() {
                    Ok(key) => {
                        served.resolver.replace(key);
                        served.bundle.send_replace(certs.ca_bundle_base64());
                        tracing::info!(secret = %object, renewed, "serving the webhook certificate of the Secret");
                        if renewed {
                            metrics.renewals.inc();
                        }
                        current = certs;
                        continue; // check the new one at once (its expiry, the metric)
                    }
                    Err(e) => {
                        tracing::warn!(secret = %object, error = %e, "the Secret's certificate does not load; keeping the current one")
                    }
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(secret = %object, error = %e, "checking the webhook certificate failed; retrying")
            }
        }
        tokio::time::sleep(policy.check_interval).await;
    }
}

/// One check: the Secret's certificates when they differ from `current`
/// (and whether this replica renewed them), `None` when nothing changes.
async fn check(
    api: &Api<Secret>,
    name: &str,
    options: &SelfSignedOptions,
    policy: RotationPolicy,
    current: &GeneratedCertificates,
) -> Result<Option<(GeneratedCertificates, bool)>, String> {
    let secret = api.get(name).await.map_err(|e| e.to_string())?;
    let stored =
        certs::from_secret(&secret).ok_or("the Secret lacks ca.crt, tls.crt or tls.key")?;
    let expiry = not_after(&stored.cert_chain_pem)?;
    let now = unix_now();
    if !due(expiry, now, policy.renew_before) {
        let changed = stored.cert_chain_pem != current.cert_chain_pem;
        return Ok(changed.then_some((stored, false)));
    }
    let fresh = renewed(&stored, options)?;
    let mut updated = secret.clone();
    let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
    let data = updated.data.get_or_insert_with(Default::default);
    data.insert(CA.to_string(), bytes(&fresh.ca_cert_pem));
    data.insert(certs::CERT.to_string(), bytes(&fresh.cert_chain_pem));
    data.insert(certs::KEY.to_string(), bytes(&fresh.key_pem));
    // `updated` keeps the read's resourceVersion: a replica that renewed
    // in between makes this a conflict, and the next check reads its
    // certificate instead.
    match api.replace(name, &PostParams::default(), &updated).await {
        Ok(_) => Ok(Some((fresh, true))),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let secret = api.get(name).await.map_err(|e| e.to_string())?;
            let stored = certs::from_secret(&secret).ok_or("the Secret lacks its keys")?;
            Ok(Some((stored, false)))
        }
        Err(e) => Err(KubeError::api("replace", format!("Secret/{name}"), e).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_is_due_within_the_margin() {
        let day = 86_400;
        let cases = [
            (100 * day, 0, 30, false),
            (100 * day, 69 * day, 30, false),
            (100 * day, 70 * day, 30, true),
            (100 * day, 200 * day, 30, true),
            (100 * day, 0, 400, true),
        ];
        for (not_after, now, days, want) in cases {
            let margin = Duration::from_secs(days * day as u64);
            assert_eq!(due(not_after, now, margin), want, "{not_after} {now} {days}");
        }
    }

    #[test]
    fn a_renewal_trusts_the_new_ca_and_only_the_previous_one() {
        let options = SelfSignedOptions { validity_days: 10, ..SelfSignedOptions::default() };
        let first = tls::generate_self_signed(&options).unwrap();
        let expiry = not_after(&first.cert_chain_pem).unwrap();
        let now = unix_now();
        // Valid from yesterday for 10 days: 9 to 10 days left.
        assert!((9 * 86_400..=10 * 86_400 + 60).contains(&(expiry - now)), "{}", expiry - now);
        let second = renewed(&first, &options).unwrap();
        assert_ne!(second.cert_chain_pem, first.cert_chain_pem);
        assert_eq!(second.ca_cert_pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(second.ca_cert_pem.ends_with(&first.ca_cert_pem), "the previous CA is kept");
        let third = renewed(&second, &options).unwrap();
        assert_eq!(
            third.ca_cert_pem.matches("BEGIN CERTIFICATE").count(),
            2,
            "never more than two"
        );
        assert!(third.ca_cert_pem.contains(first_pem(&second.ca_cert_pem)));
        assert!(!third.ca_cert_pem.contains(&first.ca_cert_pem), "the oldest CA is dropped");
        // Both trusted CAs verify: the old chain's CA is in the new bundle.
        assert!(third.certified_key().is_ok());
    }

    #[test]
    fn not_after_refuses_what_is_not_a_certificate() {
        for text in ["", "hello", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"]
        {
            assert!(not_after(text).is_err(), "{text:?}");
        }
    }
}
