//! TLS for the webhook server: the serving certificate from PEM files (and
//! reloaded when they change), or a self-signed CA and a serving
//! certificate generated at start, whose CA goes into the webhook
//! configurations' `caBundle` ([`CertificateSource`]).
//!
//! The server always serves through a [`CertResolver`], so a certificate
//! can be replaced without restarting (cert-manager rotating the Secret
//! mounted as files, for example).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// DNS names a generated serving certificate covers by default: loopback
/// and the `kolo-webhook` Service in `kolo-system`.
pub const DEFAULT_DNS_NAMES: [&str; 5] = [
    "localhost",
    "kolo-webhook",
    "kolo-webhook.kolo-system",
    "kolo-webhook.kolo-system.svc",
    "kolo-webhook.kolo-system.svc.cluster.local",
];

/// IP addresses a generated serving certificate covers by default.
pub const DEFAULT_IPS: [IpAddr; 1] = [IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)];

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The PEM text holds no certificate, no private key, or is malformed.
    #[error("{what}: {message}")]
    Pem {
        /// Which input (a file name, or `certificate` / `private key`).
        what: String,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the certificate and key (e.g. they do not match).
    #[error("certificate and key: {0}")]
    Rustls(#[from] rustls::Error),
    /// `validity_days` is outside [`VALIDITY_DAYS_RANGE`].
    #[error("validity_days: {days} is out of range ({}..={} days)", VALIDITY_DAYS_RANGE.start(), VALIDITY_DAYS_RANGE.end())]
    Validity {
        /// The validity asked for.
        days: u32,
    },
    /// A certificate could not be generated.
    #[error("generating the {what}: {source}")]
    Generate {
        /// `CA` or `serving certificate`.
        what: &'static str,
        /// rcgen's error.
        source: rcgen::Error,
    },
}

/// Accepted [`SelfSignedOptions::validity_days`]: a day to 100 years (a
/// certificate's dates end in year 9999; far beyond that the date
/// arithmetic has no answer).
pub const VALIDITY_DAYS_RANGE: std::ops::RangeInclusive<u32> = 1..=36_500;

/// What a generated serving certificate covers and how long it lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfSignedOptions {
    /// Subject alternative DNS names (the first is also the common name).
    pub dns_names: Vec<String>,
    /// Subject alternative IP addresses.
    pub ips: Vec<IpAddr>,
    /// Validity in days, from one day before now (clock skew); within
    /// [`VALIDITY_DAYS_RANGE`].
    pub validity_days: u32,
}

impl Default for SelfSignedOptions {
    fn default() -> Self {
        SelfSignedOptions {
            dns_names: DEFAULT_DNS_NAMES.iter().map(|s| s.to_string()).collect(),
            ips: DEFAULT_IPS.to_vec(),
            validity_days: 365,
        }
    }
}

/// A generated CA and the serving certificate it signed, all PEM.
#[derive(Clone)]
pub struct GeneratedCertificates {
    /// The CA certificate: what the webhook configurations' `caBundle`
    /// holds (base64 of this PEM).
    pub ca_cert_pem: String,
    /// The serving certificate followed by the CA certificate.
    pub cert_chain_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for GeneratedCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedCertificates")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("cert_chain_pem", &self.cert_chain_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

impl GeneratedCertificates {
    /// The CA as a webhook configuration's `clientConfig.caBundle` wants
    /// it: base64 of the PEM.
    pub fn ca_bundle_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.ca_cert_pem.as_bytes())
    }

    /// The serving certificate and key, ready for the server.
    pub fn certified_key(&self) -> Result<Arc<CertifiedKey>, TlsError> {
        certified_key_from_pem(self.cert_chain_pem.as_bytes(), self.key_pem.as_bytes(), "generated")
    }
}

/// The civil date (year, month, day) of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

fn validity(params: &mut CertificateParams, validity_days: u32) {
    let today = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| (d.as_secs() / 86_400) as i64)
        .unwrap_or(0);
    let (y, m, d) = civil_from_days(today - 1);
    params.not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = civil_from_days(today + i64::from(validity_days));
    params.not_after = rcgen::date_time_ymd(y, m, d);
}

/// Generates a CA (`kolo-webhook-ca`) and a serving certificate for the
/// options' names and addresses, signed by it. Both keys are ECDSA P-256.
/// A validity outside [`VALIDITY_DAYS_RANGE`] is an error.
pub fn generate_self_signed(
    options: &SelfSignedOptions,
) -> Result<GeneratedCertificates, TlsError> {
    if !VALIDITY_DAYS_RANGE.contains(&options.validity_days) {
        return Err(TlsError::Validity { days: options.validity_days });
    }
    let gen_err = |what| move |source| TlsError::Generate { what, source };

    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params.distinguished_name.push(DnType::CommonName, "kolo-webhook-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut ca_params, options.validity_days);
    let ca_key = KeyPair::generate().map_err(gen_err("CA"))?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(gen_err("CA"))?;

    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    let common_name = options.dns_names.first().map(String::as_str).unwrap_or("kolo-webhook");
    params.distinguished_name.push(DnType::CommonName, common_name);
    let mut sans = Vec::new();
    for name in &options.dns_names {
        let name = name.clone().try_into().map_err(gen_err("serving certificate"))?;
        sans.push(SanType::DnsName(name));
    }
    sans.extend(options.ips.iter().map(|ip| SanType::IpAddress(*ip)));
    params.subject_alt_names = sans;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, options.validity_days);
    let key = KeyPair::generate().map_err(gen_err("serving certificate"))?;
    let cert = params.signed_by(&key, &ca).map_err(gen_err("serving certificate"))?;

    Ok(GeneratedCertificates {
        ca_cert_pem: ca.pem(),
        cert_chain_pem: format!("{}{}", cert.pem(), ca.pem()),
        key_pem: key.serialize_pem(),
    })
}

/// The crypto provider the server and the test clients use (ring).
pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a certificate chain and its private key from PEM text. `what`
/// names the input in errors.
pub fn certified_key_from_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    what: &str,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let certs = parse_certs(cert_pem, what)?;
    let key = parse_key(key_pem, what)?;
    let certified = CertifiedKey::from_der(certs, key, &crypto_provider())?;
    Ok(Arc::new(certified))
}

fn parse_certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs =
        rustls_pemfile::certs(&mut &pem[..]).collect::<Result<Vec<_>, _>>().map_err(|e| {
            TlsError::Pem { what: what.to_string(), message: format!("bad certificate PEM: {e}") }
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what: what.to_string(),
            message: "no CERTIFICATE block found".to_string(),
        });
    }
    Ok(certs)
}

fn parse_key(pem: &[u8], what: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| TlsError::Pem {
            what: what.to_string(),
            message: format!("bad private key PEM: {e}"),
        })?
        .ok_or_else(|| TlsError::Pem {
            what: what.to_string(),
            message: "no PRIVATE KEY block (PKCS#8, PKCS#1 or SEC1) found".to_string(),
        })
}

/// Reads a certificate chain file and a private key file (PEM).
pub fn load_pem_files(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
    let what = format!("{} and {}", cert.display(), key.display());
    certified_key_from_pem(&cert_pem, &key_pem, &what)
}

/// Writes `text` to `path`, replacing it atomically (see `write_atomically`).
pub fn write_pem(path: &Path, text: &str) -> Result<(), TlsError> {
    write_atomically(path, text)
        .map_err(|source| TlsError::Write { path: path.to_path_buf(), source })
}

/// Writes `text` to a temporary file beside `path`, then renames it over
/// `path`: a reader sees the old file or the new one, never a part, and a
/// failed write leaves the old file alone.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file")
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::write(&tmp, text)
        .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The serving certificate, replaceable while the server runs: new
/// handshakes get the new certificate, established connections keep theirs.
#[derive(Debug)]
pub struct CertResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertResolver {
    /// Serves `key` until replaced.
    pub fn new(key: Arc<CertifiedKey>) -> Arc<CertResolver> {
        Arc::new(CertResolver { current: RwLock::new(key) })
    }

    /// Serves `key` from the next handshake on.
    pub fn replace(&self, key: Arc<CertifiedKey>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = key;
    }

    /// The certificate being served.
    pub fn current(&self) -> Arc<CertifiedKey> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// The rustls server configuration: TLS 1.2 and 1.3, no client
/// certificates, HTTP/1.1 by ALPN, the certificate from `resolver`.
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut config = rustls::ServerConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A rustls client configuration trusting only the CA(s) in `ca_pem` (for
/// tests, benchmarks and health probes of the server).
pub fn client_config(ca_pem: &[u8]) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in parse_certs(ca_pem, "CA bundle")? {
        roots.add(cert)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Watches a certificate file and a key file (by modification time, every
/// `interval`) and loads them into `resolver` when either changes. A pair
/// that does not load (e.g. the key was written but not the certificate
/// yet) is logged and the current certificate kept; the next change is
/// tried again. Runs until the task is dropped or aborted.
pub async fn watch_pem_files(
    resolver: Arc<CertResolver>,
    cert: PathBuf,
    key: PathBuf,
    interval: Duration,
) {
    let mut last = (modified(&cert), modified(&key));
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let now = (modified(&cert), modified(&key));
        if now == last {
            continue;
        }
        match load_pem_files(&cert, &key) {
            Ok(certified) => {
                resolver.replace(certified);
                last = now;
                tracing::info!(cert = %cert.display(), "serving certificate reloaded");
            }
            Err(error) => {
                // `last` is not updated, so the pair is tried again on the
                // next tick.
                tracing::warn!(%error, "serving certificate changed but does not load; keeping the current one");
            }
        }
    }
}

/// Where the serving certificate comes from.
#[derive(Debug, Clone)]
pub enum CertificateSource {
    /// PEM files (certificate chain and key), checked every
    /// `check_interval` and reloaded when either changes
    /// ([`watch_pem_files`]).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
        /// How often the files are checked for changes.
        check_interval: Duration,
    },
    /// Certificates generated at start, or read from where another
    /// replica keeps the ones it generated.
    Generated(GeneratedCertificates),
}

/// The server configuration serving `source`'s certificate. For files,
/// the watch runs as a task of the current tokio runtime (so this must be
/// called from within one) until the runtime stops.
pub fn serving_config(source: &CertificateSource) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let resolver = match source {
        CertificateSource::Files { cert, key, check_interval } => {
            let resolver = CertResolver::new(load_pem_files(cert, key)?);
            tokio::spawn(watch_pem_files(
                Arc::clone(&resolver),
                cert.clone(),
                key.clone(),
                *check_interval,
            ));
            resolver
        }
        CertificateSource::Generated(generated) => CertResolver::new(generated.certified_key()?),
    };
    server_config(resolver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn generated_certificates_load_and_match() {
        let generated = generate_self_signed(&SelfSignedOptions::default()).unwrap();
        let certified = generated.certified_key().unwrap();
        certified.keys_match().unwrap();
        assert_eq!(certified.cert.len(), 2, "serving certificate and CA");
        client_config(generated.ca_cert_pem.as_bytes()).unwrap();
        let decoded =
            base64::engine::general_purpose::STANDARD.decode(generated.ca_bundle_base64()).unwrap();
        assert_eq!(decoded, generated.ca_cert_pem.as_bytes());
        assert!(!format!("{generated:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn validity_days_are_bounded() {
        for (days, ok) in
            [(0, false), (1, true), (36_500, true), (36_501, false), (u32::MAX, false)]
        {
            let options = SelfSignedOptions { validity_days: days, ..SelfSignedOptions::default() };
            match generate_self_signed(&options) {
                Ok(_) => assert!(ok, "{days} days accepted"),
                Err(e) => {
                    assert!(!ok, "{days} days refused: {e}");
                    assert!(e.to_string().starts_with("validity_days: "), "{e}");
                }
            }
        }
    }

    #[test]
    fn write_pem_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "old").unwrap();
        write_pem(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
        // A failed write (the directory is gone) leaves nothing behind either.
        let missing = dir.path().join("no-such-dir/ca.pem");
        assert!(write_pem(&missing, "x").is_err());
    }

    #[test]
    fn bad_pem_is_named() {
        let err = certified_key_from_pem(b"nothing here", b"", "x.pem").unwrap_err();
        assert_eq!(err.to_string(), "x.pem: no CERTIFICATE block found");
        let generated = generate_self_signed(&SelfSignedOptions::default()).unwrap();
        let err =
            certified_key_from_pem(generated.cert_chain_pem.as_bytes(), b"", "y.pem").unwrap_err();
        assert!(err.to_string().starts_with("y.pem: no PRIVATE KEY block"), "{err}");
        // A key that is not the certificate's.
        let other = generate_self_signed(&SelfSignedOptions::default()).unwrap();
        let err = certified_key_from_pem(
            generated.cert_chain_pem.as_bytes(),
            other.key_pem.as_bytes(),
            "z",
        )
        .unwrap_err();
        assert!(matches!(err, TlsError::Rustls(_)), "{err}");
    }

    #[tokio::test]
    async fn both_sources_serve_and_bad_files_are_named() {
        let generated = generate_self_signed(&SelfSignedOptions::default()).unwrap();
        serving_config(&CertificateSource::Generated(generated.clone())).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        write_pem(&cert, &generated.cert_chain_pem).unwrap();
        write_pem(&key, &generated.key_pem).unwrap();
        let check_interval = Duration::from_secs(60);
        let files =
            CertificateSource::Files { cert: cert.clone(), key: key.clone(), check_interval };
        let config = serving_config(&files).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);

        write_pem(&key, "not a key").unwrap();
        let err = serving_config(&files).unwrap_err().to_string();
        let named = format!("{} and {}: no PRIVATE KEY block", cert.display(), key.display());
        assert!(err.starts_with(&named), "{err}");
    }
}
