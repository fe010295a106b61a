//! Pods from the node's kubelet: `GET https://<host>:<port>/pods/`, a JSON
//! `PodList` of the pods the kubelet runs (spec §3.2).
//!
//! * **Auth**: `Authorization: Bearer <token>`, the token read from a file
//!   on every request (the projected service-account token rotates; by
//!   default `/var/run/secrets/kubernetes.io/serviceaccount/token`). The
//!   agent's service account needs `get` on `nodes/proxy` (or `nodes/pods`).
//! * **TLS**: [`KubeletTls::Verify`] checks the kubelet's serving
//!   certificate against a CA file; [`KubeletTls::InsecureSkipVerify`]
//!   encrypts without checking who answers. Koordinator does the latter,
//!   because a kubelet's serving certificate is usually self-signed (unless
//!   the cluster runs `serverTLSBootstrap`), and so does
//!   [`KubeletConfig::new`] by default; the exposure is the bearer token to
//!   whoever can intercept traffic to the node's own address, i.e. root on
//!   the node. Clusters with CA-signed kubelet certificates should verify.
//! * **Transport**: one HTTP/1.1 request per connection (`Connection:
//!   close`) over a blocking rustls stream; the response is read with its
//!   `Content-Length`, chunked, or up to the close. The whole exchange
//!   (connect, handshake, request, response) is bounded by one deadline
//!   (3 s by default) and the body by a size limit (64 MiB).
//!
//! Errors name the URL, and the HTTP status or the TLS problem.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

use super::{Fetched, PodSource, PodSourceError};

/// The kubelet's HTTPS port.
pub const DEFAULT_PORT: u16 = 10250;
/// The in-cluster service-account token.
pub const IN_CLUSTER_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// Koordinator's KubeletSyncTimeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
/// The largest response body accepted (a PodList of 250 pods is ~2–5 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;

/// The longest status line or header accepted.
const MAX_LINE: u64 = 16 * 1024;
/// The most header lines accepted.
const MAX_HEADERS: usize = 100;
/// How much of an error body is quoted.
const MAX_QUOTED_BODY: usize = 300;

/// How the kubelet's serving certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KubeletTls {
    /// Verify it against the CA certificate(s) in a PEM file.
    Verify {
        /// The PEM file.
        ca_file: PathBuf,
        /// The name the certificate must carry (default: the host, an IP
        /// address or a DNS name).
        server_name: Option<String>,
    },
    /// Do not verify it (Koordinator's behaviour): traffic is encrypted, but
    /// the kubelet is not authenticated.
    InsecureSkipVerify,
}

/// Where and how to reach the kubelet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletConfig {
    /// IP address or DNS name (the node's InternalIP; in a DaemonSet, the
    /// downward API's `status.hostIP`).
    pub host: String,
    /// Port (default [`DEFAULT_PORT`]).
    pub port: u16,
    /// The bearer token file, read on every request; `None` sends no
    /// `Authorization` header.
    pub token_file: Option<PathBuf>,
    /// Certificate checking.
    pub tls: KubeletTls,
    /// Deadline for the whole request (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// The largest body accepted (default [`DEFAULT_MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
}

impl KubeletConfig {
    /// The in-cluster defaults for `host`: port 10250, the service-account
    /// token, no certificate verification (as Koordinator), 3 s.
    pub fn new(host: impl Into<String>) -> KubeletConfig {
        KubeletConfig {
            host: host.into(),
            port: DEFAULT_PORT,
            token_file: Some(PathBuf::from(IN_CLUSTER_TOKEN_FILE)),
            tls: KubeletTls::InsecureSkipVerify,
            timeout: DEFAULT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// The URL asked, `https://<host>:<port>/pods/`.
    pub fn url(&self) -> String {
        if self.host.contains(':') {
            format!("https://[{}]:{}/pods/", self.host, self.port)
        } else {
            format!("https://{}:{}/pods/", self.host, self.port)
        }
    }
}

/// A kubelet request failed.
#[derive(Debug, thiserror::Error)]
#[error("kubelet {url}: {kind}")]
pub struct KubeletError {
    /// The URL asked.
    pub url: String,
    /// What went wrong.
    pub kind: KubeletErrorKind,
}

/// What went wrong talking to the kubelet.
#[derive(Debug, thiserror::Error)]
pub enum KubeletErrorKind {
    /// The bearer token file could not be read.
    #[error("reading the bearer token {path}: {source}")]
    Token {
        /// The token file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The bearer token file is empty or not a valid header value.
    #[error("the bearer token in {path} is empty or not printable ASCII")]
    BadToken {
        /// The token file.
        path: PathBuf,
    },
    /// The CA file could not be used.
    #[error("CA file {path}: {message}")]
    CaFile {
        /// The PEM file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The host (or configured server name) is not a valid TLS server name.
    #[error("{name:?} is not a valid TLS server name")]
    ServerName {
        /// The name.
        name: String,
    },
    /// The host name did not resolve.
    #[error("resolving {host}: {source}")]
    Resolve {
        /// The host.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// No connection could be made.
    #[error("connecting to {address}: {source}")]
    Connect {
        /// The address tried last.
        address: SocketAddr,
        /// The socket error.
        source: io::Error,
    },
    /// The TLS handshake or record layer failed (e.g. an untrusted
    /// certificate).
    #[error("TLS: {source}")]
    Tls {
        /// rustls' error.
        source: rustls::Error,
    },
    /// The deadline passed.
    #[error("no complete answer within {timeout:?}")]
    Timeout {
        /// The configured timeout.
        timeout: Duration,
    },
    /// The connection failed mid-exchange.
    #[error("{source}")]
    Io {
        /// The I/O error.
        source: io::Error,
    },
    /// The response is not valid HTTP/1.x.
    #[error("malformed HTTP response: {message}")]
    Http {
        /// What is wrong.
        message: String,
    },
    /// The kubelet answered with a non-2xx status.
    #[error("HTTP {status} {reason}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The reason phrase.
        reason: String,
        /// The start of the body.
        body: String,
    },
    /// The body exceeds the size limit.
    #[error("response body larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The body is not a PodList.
    #[error("the answer is not a PodList: at {path}: {message}")]
    Decode {
        /// The JSON path of the problem (`items[3].spec.containers`).
        path: String,
        /// The decoder's message.
        message: String,
    },
}

/// A [`PodSource`] asking the kubelet.
#[derive(Debug)]
pub struct KubeletSource {
    config: KubeletConfig,
    url: String,
    name: String,
    tls: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    body: Vec<u8>,
}

impl KubeletSource {
    /// A source for `config`. Reads the CA file now; fails if it holds no
    /// certificate or the server name is invalid.
    pub fn new(config: KubeletConfig) -> Result<KubeletSource, KubeletError> {
        let url = config.url();
        let err = |kind| KubeletError { url: url.clone(), kind };
        let tls = client_config(&config.tls).map_err(err)?;
        let name = match &config.tls {
            KubeletTls::Verify { server_name: Some(name), .. } => name.clone(),
            _ => config.host.clone(),
        };
        let server_name = ServerName::try_from(name.clone())
            .map_err(|_| err(KubeletErrorKind::ServerName { name }))?;
        Ok(KubeletSource {
            name: format!("kubelet {url}"),
            url,
            config,
            tls: Arc::new(tls),
            server_name,
            body: Vec::new(),
        })
    }

    /// The URL asked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One request: the kubelet's pods (possibly none).
    pub fn fetch_pods(&mut self) -> Result<Vec<Pod>, KubeletError> {
        self.exchange().map_err(|kind| KubeletError { url: self.url.clone(), kind })?;
        let decoded = decode_pod_list(&self.body);
        // Do not hold a large answer's memory between syncs.
        if self.body.capacity() > 8 << 20 {
            self.body = Vec::new();
        }
        decoded.map_err(|kind| KubeletError { url: self.url.clone(), kind })
    }

    fn exchange(&mut self) -> Result<(), KubeletErrorKind> {
        let deadline = Instant::now() + self.config.timeout;
        let request = self.request()?;
        let tcp = self.connect(deadline)?;
        let conn = ClientConnection::new(self.tls.clone(), self.server_name.clone())
            .map_err(|source| KubeletErrorKind::Tls { source })?;
        let mut stream = StreamOwned::new(conn, Deadline { tcp, deadline });
        let timeout = self.config.timeout;
        let io_err = |e: io::Error| io_error(e, timeout);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(io_err)?;
        }
        stream.write_all(request.as_bytes()).map_err(io_err)?;
        stream.flush().map_err(io_err)?;
        let mut reader = BufReader::with_capacity(16 * 1024, stream);
        read_answer(&mut reader, self.config.max_body_bytes, &mut self.body, io_err)
    }

    fn request(&self) -> Result<String, KubeletErrorKind> {
        let host = if self.config.host.contains(':') {
            format!("[{}]:{}", self.config.host, self.config.port)
        } else {
            format!("{}:{}", self.config.host, self.config.port)
        };
        let mut request = format!(
            "GET /pods/ HTTP/1.1\r\nHost: {host}\r\nUser-Agent: kolo-agent\r\n\
             Accept: application/json\r\nConnection: close\r\n"
        );
        if let Some(path) = &self.config.token_file {
            let token = std::fs::read_to_string(path)
                .map_err(|source| KubeletErrorKind::Token { path: path.clone(), source })?;
            let token = token.trim();
            if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(KubeletErrorKind::BadToken { path: path.clone() });
            }
            request.push_str("Authorization: Bearer ");
            request.push_str(token);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        Ok(request)
    }

    fn connect(&self, deadline: Instant) -> Result<TcpStream, KubeletErrorKind> {
        let host = self.config.host.as_str();
        let addresses = (host, self.config.port)
            .to_socket_addrs()
            .map_err(|source| KubeletErrorKind::Resolve { host: host.to_string(), source })?;
        let mut last = None;
        for address in addresses {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(KubeletErrorKind::Timeout { timeout: self.config.timeout });
            }
            match TcpStream::connect_timeout(&address, left) {
                Ok(tcp) => {
                    // Small request, then one answer: no need for Nagle.
                    let _ = tcp.set_nodelay(true);
                    return Ok(tcp);
                }
                Err(source) => last = Some(KubeletErrorKind::Connect { address, source }),
            }
        }
        Err(last.unwrap_or_else(|| KubeletErrorKind::Resolve {
            host: host.to_string(),
            source: io::Error::new(io::ErrorKind::NotFound, "no address"),
        }))
    }
}

impl PodSource for KubeletSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_kubelet(&self) -> bool {
        true
    }

    fn fetch(&mut self) -> Result<Fetched, PodSourceError> {
        Ok(Fetched::Pods(self.fetch_pods()?))
    }
}

/// Maps an I/O error from the TLS stream to the most telling kind.
fn io_error(e: io::Error, timeout: Duration) -> KubeletErrorKind {
    if let Some(tls) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return KubeletErrorKind::Tls { source: tls.clone() };
    }
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            KubeletErrorKind::Timeout { timeout }
        }
        _ => KubeletErrorKind::Io { source: e },
    }
}

/// Reads the kubelet's HTTP answer into `body` (de-chunked): an error for a
/// malformed response, a body over `max_body` bytes, or a non-2xx status.
fn read_answer<R: BufRead>(
    r: &mut R,
    max_body: usize,
    body: &mut Vec<u8>,
    io_err: impl Fn(io::Error) -> KubeletErrorKind,
) -> Result<(), KubeletErrorKind> {
    let head = read_response(r, max_body, body).map_err(|e| match e {
        ResponseError::Io(e) => io_err(e),
        ResponseError::Http(message) => KubeletErrorKind::Http { message },
        ResponseError::TooLarge => KubeletErrorKind::TooLarge { limit: max_body },
    })?;
    if !(200..300).contains(&head.status) {
        return Err(KubeletErrorKind::Status {
            status: head.status,
            reason: head.reason,
            body: quote_body(body),
        });
    }
    Ok(())
}

/// Parses a whole kubelet `/pods` HTTP response held in memory (status
/// line, headers, body) as [`KubeletSource::fetch_pods`] parses what its
/// connection reads: the pods, or why not. Public for the fuzz target.
pub fn parse_pods_response(raw: &[u8], max_body: usize) -> Result<Vec<Pod>, KubeletErrorKind> {
    let mut body = Vec::new();
    read_answer(&mut io::Cursor::new(raw), max_body, &mut body, |source| KubeletErrorKind::Io {
        source,
    })?;
    decode_pod_list(&body)
}

fn quote_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX_QUOTED_BODY)]);
    let mut out: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if body.len() > MAX_QUOTED_BODY {
        out.push_str("...");
    }
    if out.is_empty() { "(empty body)".into() } else { out }
}

/// The PodList body; `items` may be missing or null.
#[derive(serde::Deserialize)]
struct PodListBody {
    #[serde(default)]
    items: Option<Vec<Pod>>,
}

fn decode_pod_list(body: &[u8]) -> Result<Vec<Pod>, KubeletErrorKind> {
    // A derived struct would also accept a JSON array.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(KubeletErrorKind::Decode {
            path: ".".into(),
            message: format!(
                "expected a JSON object, found {}",
                quote_body(&body[..body.len().min(40)])
            ),
        });
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let list: PodListBody = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        KubeletErrorKind::Decode { path, message: e.into_inner().to_string() }
    })?;
    de.end().map_err(|e| KubeletErrorKind::Decode { path: ".".into(), message: e.to_string() })?;
    Ok(list.items.unwrap_or_default())
}

/// Accepts any server certificate while still checking that the server
/// holds its key (handshake signatures).
#[derive(Debug)]
struct SkipVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn client_config(tls: &KubeletTls) -> Result<ClientConfig, KubeletErrorKind> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|source| KubeletErrorKind::Tls { source })?;
    let config = match tls {
        KubeletTls::Verify { ca_file, .. } => {
            let ca_err =
                |message: String| KubeletErrorKind::CaFile { path: ca_file.clone(), message };
            let mut roots = rustls::RootCertStore::empty();
            let certs =
                CertificateDer::pem_file_iter(ca_file).map_err(|e| ca_err(e.to_string()))?;
            for cert in certs {
                let cert = cert.map_err(|e| ca_err(e.to_string()))?;
                roots.add(cert).map_err(|e| ca_err(e.to_string()))?;
            }
            if roots.is_empty() {
                return Err(ca_err("no CERTIFICATE block".into()));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        KubeletTls::InsecureSkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// A TCP stream whose every read and write gets only the time left before
/// one deadline.
#[derive(Debug)]
struct Deadline {
    tcp: TcpStream,
    deadline: Instant,
}

impl Deadline {
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() { Err(io::ErrorKind::TimedOut.into()) } else { Ok(left) }
    }
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_read_timeout(Some(left))?;
        self.tcp.read(buf)
    }
}

impl Write for Deadline {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.tcp.set_write_timeout(Some(left))?;
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// The status of a response.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    status: u16,
    reason: String,
}

#[derive(Debug)]
enum ResponseError {
    Io(io::Error),
    Http(String),
    TooLarge,
}

impl From<io::Error> for ResponseError {
    fn from(e: io::Error) -> ResponseError {
        ResponseError::Io(e)
    }
}

fn http(message: impl Into<String>) -> ResponseError {
    ResponseError::Http(message.into())
}

/// Reads one line (through `\n`) into `line`, without the line ending.
/// `Ok(false)` at end of input before any byte.
fn read_line<R: BufRead>(r: &mut R, line: &mut Vec<u8>) -> Result<bool, ResponseError> {
    line.clear();
    let n = r.by_ref().take(MAX_LINE).read_until(b'\n', line)?;
    if n == 0 {
        return Ok(false);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n as u64 == MAX_LINE {
            http(format!("a line longer than {MAX_LINE} bytes"))
        } else {
            http("the connection closed mid-line")
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(true)
}

fn quote_line(line: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(&line[..line.len().min(100)]))
}

/// Reads an HTTP/1.x response: the head is returned, the (de-chunked) body
/// left in `body`. Responses to a `GET` with `Connection: close`: 1xx
/// interim responses are skipped; a body is delimited by chunked encoding,
/// `Content-Length`, or the end of the connection.
fn read_response<R: BufRead>(
    r: &mut R,
    max_body: usize,
    body: &mut Vec<u8>,
) -> Result<Head, ResponseError> {
    body.clear();
    let mut line = Vec::with_capacity(128);
    let (head, chunked, length) = loop {
        if !read_line(r, &mut line)? {
            return Err(http("the connection closed before a status line"));
        }
        let head = parse_status_line(&line)?;
        let mut chunked = false;
        let mut length = None::<u64>;
        let mut count = 0;
        loop {
            if !read_line(r, &mut line)? {
                return Err(http("the connection closed inside the headers"));
            }
            if line.is_empty() {
                break;
            }
            count += 1;
            if count > MAX_HEADERS {
                return Err(http(format!("more than {MAX_HEADERS} headers")));
            }
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                return Err(http(format!("header {} has no colon", quote_line(&line))));
            };
            let name = line[..colon].trim_ascii();
            let value = line[colon + 1..].trim_ascii();
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // Only `chunked` (possibly after `identity`) is understood:
                // the agent asks for no compression.
                let mut codings = value.split(|&b| b == b',').map(<[u8]>::trim_ascii);
                let ok =
                    codings.clone().next_back().is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
                        && codings.all(|c| {
                            c.eq_ignore_ascii_case(b"chunked")
                                || c.eq_ignore_ascii_case(b"identity")
                        });
                if !ok {
                    return Err(http(format!(
                        "unsupported Transfer-Encoding {}",
                        quote_line(value)
                    )));
                }
                chunked = true;
            } else if name.eq_ignore_ascii_case(b"content-length") {
                let n = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| http(format!("Content-Length {}", quote_line(value))))?;
                if length.is_some_and(|l| l != n) {
                    return Err(http("conflicting Content-Length headers"));
                }
                length = Some(n);
            }
        }
        if (100..200).contains(&head.status) {
            continue; // 100 Continue and friends: the real answer follows.
        }
        break (head, chunked, length);
    };
    if head.status == 204 || head.status == 304 {
        return Ok(head);
    }
    if chunked {
        read_chunked(r, max_body, body, &mut line)?;
    } else if let Some(length) = length {
        if length > max_body as u64 {
            return Err(ResponseError::TooLarge);
        }
        let got = r.by_ref().take(length).read_to_end(body)?;
        if (got as u64) < length {
            return Err(http(format!("the body ended after {got} of {length} bytes")));
        }
    } else {
        // Delimited by the close. A peer that closes without TLS
        // close_notify surfaces as UnexpectedEof: the end, here.
        match r.by_ref().take(max_body as u64 + 1).read_to_end(body) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
            Err(e) => return Err(e.into()),
        }
        if body.len() > max_body {
            return Err(ResponseError::TooLarge);
        }
    }
    Ok(head)
}

fn parse_status_line(line: &[u8]) -> Result<Head, ResponseError> {
    let bad = || http(format!("status line {}", quote_line(line)));
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let mut parts = text.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !(version == "HTTP/1.1" || version == "HTTP/1.0") {
        return Err(bad());
    }
    let code = parts.next().unwrap_or("");
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let status = code.parse::<u16>().map_err(|_| bad())?;
    if status < 100 {
        return Err(bad());
    }
    Ok(Head { status, reason: parts.next().unwrap_or("").trim().to_string() })
}

fn read_chunked<R: BufRead>(
    r: &mut R,
    max_body: usize,
    body: &mut Vec<u8>,
    line: &mut Vec<u8>,
) -> Result<(), ResponseError> {
    loop {
        if !read_line(r, line)? {
            return Err(http("the connection closed before the last chunk"));
        }
        let size_text = line.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii();
        let size = std::str::from_utf8(size_text)
            .ok()
            .filter(|s| !s.is_empty() && s.len() <= 15)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| http(format!("chunk size {}", quote_line(line))))?;
        if size == 0 {
            // Trailers, then the empty line.
            loop {
                if !read_line(r, line)? || line.is_empty() {
                    return Ok(());
                }
            }
        }
        if body.len() as u64 + size > max_body as u64 {
            return Err(ResponseError::TooLarge);
        }
        let got = r.by_ref().take(size).read_to_end(body)?;
        if (got as u64) < size {
            return Err(http("the connection closed inside a chunk"));
        }
        if !read_line(r, line)? || !line.is_empty() {
            return Err(http("a chunk is not followed by CRLF"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::net::{Shutdown, TcpListener};
    use std::path::Path;
    use std::sync::Mutex;

    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use rustls::ServerConfig;
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    use super::*;
    use crate::pods::LastGood;
    use crate::pods::tests::{names, pod};

    // ---- the HTTP response reader, on in-memory input ----

    fn parse(raw: &str, max: usize) -> Result<(Head, String), ResponseError> {
        let mut body = Vec::new();
        let head = read_response(&mut io::Cursor::new(raw.as_bytes()), max, &mut body)?;
        Ok((head, String::from_utf8(body).unwrap()))
    }

    fn message(e: ResponseError) -> String {
        match e {
            ResponseError::Http(m) => m,
            ResponseError::Io(e) => format!("I/O: {e}"),
            ResponseError::TooLarge => "too large".into(),
        }
    }

    #[test]
    fn reads_responses() {
        let ok = |status: u16, reason: &str, body: &str| {
            Ok::<_, String>((Head { status, reason: reason.into() }, body.to_string()))
        };
        let cases = [
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", ok(200, "OK", "hello")),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, extra", ok(200, "OK", "hello")),
            ("HTTP/1.0 200 OK\nContent-Length: 2\n\nhi", ok(200, "OK", "hi")),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n",
                ok(200, "OK", "hello, world"),
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n0\r\n\r\n",
                Err("unsupported Transfer-Encoding \"gzip, Chunked\"".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                Err("unsupported Transfer-Encoding".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                ok(200, "OK", "ok"),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n",
                ok(200, "OK", "0123456789"),
            ),
            ("HTTP/1.1 200 OK\r\n\r\nuntil close", ok(200, "OK", "until close")),
            (
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops",
                ok(500, "Internal Server Error", "oops"),
            ),
            ("HTTP/1.1 204 No Content\r\n\r\n", ok(204, "No Content", "")),
            ("HTTP/1.1 401\r\nContent-Length: 0\r\n\r\n", ok(401, "", "")),
            ("", Err("closed before a status line".into())),
            ("HTTP/2 200 OK\r\n\r\n", Err("status line \"HTTP/2 200 OK\"".into())),
            ("HTTP/1.1 20 OK\r\n\r\n", Err("status line".into())),
            ("HTTP/1.1 099 OK\r\n\r\n", Err("status line".into())),
            ("SSH-2.0-OpenSSH\r\n", Err("status line".into())),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", Err("closed inside the headers".into())),
            ("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", Err("header \"no colon\" has no colon".into())),
            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", Err("Content-Length \"-1\"".into())),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                Err("conflicting".into()),
            ),
            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", Err("ended after 3 of 10".into())),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                Err("chunk size \"zz\"".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                Err("inside a chunk".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n",
                Err("not followed by CRLF".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                Err("before the last chunk".into()),
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
                Err("chunk size".into()),
            ),
        ];
        for (raw, want) in cases {
            let got = parse(raw, 1000).map_err(message);
            match (&got, &want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{raw:?}"),
                (Err(g), Err(w)) => assert!(g.contains(w.as_str()), "{raw:?}: {g}"),
                _ => panic!("{raw:?}: got {got:?}, want {want:?}"),
            }
        }
        let long = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(20_000));
        assert!(message(parse(&long, 10).unwrap_err()).contains("longer than"));
        let many = format!("HTTP/1.1 200 OK\r\n{}\r\n", "X: 1\r\n".repeat(101));
        assert!(message(parse(&many, 10).unwrap_err()).contains("more than 100 headers"));
        for raw in [
            "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\nhello world",
        ] {
            assert!(matches!(parse(raw, 10), Err(ResponseError::TooLarge)), "{raw:?}");
            assert!(parse(raw, 11).is_ok(), "{raw:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_responses_never_panic(raw in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let mut body = Vec::new();
            let _ = read_response(&mut io::Cursor::new(raw), 100, &mut body);
        }

        #[test]
        fn http_like_responses_never_panic(raw in "(HTTP/1.1 |200 |100 |OK|\r\n|Content-Length: |Transfer-Encoding: chunked|[0-9a-f]{1,3}|;| ){0,30}") {
            let mut body = Vec::new();
            let _ = read_response(&mut io::Cursor::new(raw.into_bytes()), 100, &mut body);
        }
    }

    #[test]
    fn decodes_pod_lists() {
        let list = serde_json::json!({"kind": "PodList", "apiVersion": "v1", "metadata": {},
            "items": [serde_json::to_value(pod("a")).unwrap(), serde_json::to_value(pod("b")).unwrap()]});
        let pods = decode_pod_list(list.to_string().as_bytes()).unwrap();
        assert_eq!(names(&pods), vec!["a", "b"]);
        assert!(decode_pod_list(br#"{"items":[]}"#).unwrap().is_empty());
        assert!(decode_pod_list(br#"{"items":null}"#).unwrap().is_empty());
        assert!(decode_pod_list(br#"{"kind":"PodList"}"#).unwrap().is_empty());
        let bad = [
            (
                &br#"{"items":[{"metadata":{"name":"a"},"spec":{"containers":"x"}}]}"#[..],
                "items[0].spec.containers",
            ),
            (br#"{"items":[{"apiVersion":"v2"}]}"#, "items[0]"),
            (br#"[]"#, "."),
            (br#"{"items":[]} trailing"#, "."),
            (b"<html>", "."),
        ];
        for (body, path) in bad {
            let e = decode_pod_list(body).unwrap_err();
            let KubeletErrorKind::Decode { path: got, .. } = &e else { panic!("{e:?}") };
            assert_eq!(got, path, "{e}");
        }
    }

    // ---- against a real local HTTPS server ----

    struct Pki {
        ca_pem: String,
        cert: CertificateDer<'static>,
        key: PrivateKeyDer<'static>,
    }

    /// A CA and a serving certificate for 127.0.0.1 signed by it.
    fn pki() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "kolo test kubelet CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "kubelet.test".to_string()])
                .unwrap()
                .signed_by(&key, &issuer)
                .unwrap();
        Pki {
            ca_pem: ca_cert.pem(),
            cert: cert.der().clone(),
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        }
    }

    /// What the server does with one request.
    enum Reply {
        /// Answer with this status and JSON body, chunked or not.
        Json(u16, String, bool),
        /// Accept, then say nothing.
        Silent,
    }

    struct Server {
        port: u16,
        token: Arc<Mutex<String>>,
        replies: Arc<Mutex<VecDeque<Reply>>>,
        seen: Arc<Mutex<Vec<String>>>,
    }

    /// An HTTPS server on 127.0.0.1 that checks the bearer token (401
    /// otherwise) and answers with the queued replies. It lives in a
    /// detached thread until the test process ends.
    fn server(pki: &Pki) -> Server {
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![pki.cert.clone()], pki.key.clone_key())
                .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let token = Arc::new(Mutex::new(String::from("token-1")));
        let replies = Arc::new(Mutex::new(VecDeque::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (t, r, s) = (token.clone(), replies.clone(), seen.clone());
        std::thread::spawn(move || {
            for tcp in listener.incoming() {
                let Ok(tcp) = tcp else { continue };
                let conn = rustls::ServerConnection::new(config.clone()).unwrap();
                let mut stream = StreamOwned::new(conn, tcp);
                // Read the request head (a failed handshake ends here).
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                if !head.ends_with(b"\r\n\r\n") {
                    continue;
                }
                let head = String::from_utf8_lossy(&head).to_string();
                s.lock().unwrap().push(head.clone());
                let want = format!("authorization: bearer {}\r\n", t.lock().unwrap());
                let (status, body, chunked) = if !head.to_ascii_lowercase().contains(&want) {
                    (401, "Unauthorized".to_string(), false)
                } else {
                    match r.lock().unwrap().pop_front() {
                        Some(Reply::Json(status, body, chunked)) => (status, body, chunked),
                        Some(Reply::Silent) => {
                            std::thread::sleep(Duration::from_millis(1500));
                            continue;
                        }
                        None => (404, "no reply queued".into(), false),
                    }
                };
                let mut out = format!(
                    "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\n",
                    if status == 200 { "OK" } else { "Nope" }
                );
                if chunked {
                    out += "Transfer-Encoding: chunked\r\n\r\n";
                    for piece in body.as_bytes().chunks(7) {
                        out +=
                            &format!("{:x}\r\n{}\r\n", piece.len(), String::from_utf8_lossy(piece));
                    }
                    out += "0\r\n\r\n";
                } else {
                    out += &format!("Content-Length: {}\r\n\r\n{body}", body.len());
                }
                let _ = stream.write_all(out.as_bytes());
                stream.conn.send_close_notify();
                let _ = stream.flush();
            }
        });
        Server { port, token, replies, seen }
    }

    fn pod_list(names: &[&str]) -> String {
        let items: Vec<_> = names
            .iter()
            .map(|n| {
                let mut v = serde_json::to_value(pod(n)).unwrap();
                // The kubelet's items carry no kind / apiVersion.
                v.as_object_mut().unwrap().remove("kind");
                v.as_object_mut().unwrap().remove("apiVersion");
                v
            })
            .collect();
        serde_json::json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
            .to_string()
    }

    fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn config(port: u16, dir: &Path, tls: KubeletTls) -> KubeletConfig {
        KubeletConfig {
            port,
            token_file: Some(dir.join("token")),
            tls,
            ..KubeletConfig::new("127.0.0.1")
        }
    }

    #[test]
    fn last_good_over_a_real_https_kubelet() {
        let pki = pki();
        let srv = server(&pki);
        let dir = tempfile::tempdir().unwrap();
        let ca = write_file(dir.path(), "ca.pem", &pki.ca_pem);
        write_file(dir.path(), "token", "token-1\n");
        let source = KubeletSource::new(config(
            srv.port,
            dir.path(),
            KubeletTls::Verify { ca_file: ca, server_name: None },
        ))
        .unwrap();
        let url = format!("https://127.0.0.1:{}/pods/", srv.port);
        assert_eq!(source.url(), url);
        let mut s = LastGood::new(source);
        {
            let mut q = srv.replies.lock().unwrap();
            q.push_back(Reply::Json(200, pod_list(&["a", "b"]), false));
            q.push_back(Reply::Json(500, "{\"message\": \"internal\n error\"}".into(), false));
            q.push_back(Reply::Json(200, r#"{"items":[]}"#.into(), true));
            q.push_back(Reply::Json(200, pod_list(&["c", "d", "e"]), true));
        }
        assert!(s.sync().unwrap());
        assert_eq!(names(s.pods()), vec!["a", "b"]);
        let head = srv.seen.lock().unwrap()[0].clone();
        assert!(head.starts_with("GET /pods/ HTTP/1.1\r\n"), "{head}");
        assert!(head.contains(&format!("Host: 127.0.0.1:{}\r\n", srv.port)), "{head}");
        assert!(head.contains("Authorization: Bearer token-1\r\n"), "{head}");

        let e = s.sync().unwrap_err().to_string();
        assert_eq!(e, format!("kubelet {url}: HTTP 500 Nope: {{\"message\": \"internal error\"}}"));
        assert_eq!(names(s.pods()), vec!["a", "b"]);

        let e = s.sync().unwrap_err().to_string();
        assert_eq!(
            e,
            format!("kubelet {url}: answered with zero pods; keeping the last good list")
        );
        assert_eq!((names(s.pods()), s.consecutive_failures()), (vec!["a", "b"], 2));

        // The token rotates: the server wants the new one, the file still
        // has the old one (401), then the file is updated (re-read: 200).
        *srv.token.lock().unwrap() = "token-2".into();
        let e = s.sync().unwrap_err().to_string();
        assert_eq!(e, format!("kubelet {url}: HTTP 401 Nope: Unauthorized"));
        write_file(dir.path(), "token", "token-2");
        assert!(s.sync().unwrap());
        assert_eq!(names(s.pods()), vec!["c", "d", "e"]);
        assert_eq!((s.generation(), s.consecutive_failures()), (2, 0));

        // A token file that disappears: an error naming it.
        std::fs::remove_file(dir.path().join("token")).unwrap();
        let e = s.sync().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "kubelet {url}: reading the bearer token {}",
                dir.path().join("token").display()
            )),
            "{e}"
        );
        write_file(dir.path(), "token", " \n");
        assert!(s.sync().unwrap_err().to_string().contains("is empty or not printable"));
        assert_eq!(names(s.pods()), vec!["c", "d", "e"]);
    }

    #[test]
    fn tls_choices() {
        let pki = pki();
        let srv = server(&pki);
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "token", "token-1");

        // A CA that did not sign the kubelet's certificate: a TLS error.
        let other = pki_ca_only();
        let wrong = write_file(dir.path(), "wrong.pem", &other);
        let mut s = KubeletSource::new(config(
            srv.port,
            dir.path(),
            KubeletTls::Verify { ca_file: wrong, server_name: None },
        ))
        .unwrap();
        let e = s.fetch_pods().unwrap_err();
        assert!(matches!(e.kind, KubeletErrorKind::Tls { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "kubelet https://127.0.0.1:{}/pods/: TLS: invalid peer certificate",
                srv.port
            )),
            "{msg}"
        );
        assert!(msg.contains("UnknownIssuer"), "{msg}");

        // The right CA but a name the certificate does not carry.
        let ca = write_file(dir.path(), "ca.pem", &pki.ca_pem);
        let mut s = KubeletSource::new(config(
            srv.port,
            dir.path(),
            KubeletTls::Verify { ca_file: ca.clone(), server_name: Some("other.test".into()) },
        ))
        .unwrap();
        let msg = s.fetch_pods().unwrap_err().to_string();
        assert!(
            msg.contains(
                "TLS: invalid peer certificate: certificate not valid for name \"other.test\""
            ),
            "{msg}"
        );
        // ... and a name it does carry.
        srv.replies.lock().unwrap().push_back(Reply::Json(200, pod_list(&["x"]), false));
        let mut s = KubeletSource::new(config(
            srv.port,
            dir.path(),
            KubeletTls::Verify { ca_file: ca, server_name: Some("kubelet.test".into()) },
        ))
        .unwrap();
        assert_eq!(names(&s.fetch_pods().unwrap()), vec!["x"]);

        // Skip-verify talks to it with no CA at all.
        srv.replies.lock().unwrap().push_back(Reply::Json(200, pod_list(&["y"]), true));
        let mut s =
            KubeletSource::new(config(srv.port, dir.path(), KubeletTls::InsecureSkipVerify))
                .unwrap();
        assert_eq!(s.name(), format!("kubelet https://127.0.0.1:{}/pods/", srv.port));
        assert_eq!(names(&s.fetch_pods().unwrap()), vec!["y"]);

        // Bad CA files are refused up front.
        for (name, text, needle) in [
            ("empty.pem", "", "no CERTIFICATE block"),
            (
                "key.pem",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                "no CERTIFICATE block",
            ),
            (
                "junk.pem",
                "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
                "CA file",
            ),
        ] {
            let path = write_file(dir.path(), name, text);
            let e = KubeletSource::new(config(
                srv.port,
                dir.path(),
                KubeletTls::Verify { ca_file: path.clone(), server_name: None },
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(&format!("CA file {}", path.display())) && e.contains(needle),
                "{e}"
            );
        }
        let e = KubeletSource::new(config(
            srv.port,
            dir.path(),
            KubeletTls::Verify { ca_file: dir.path().join("missing.pem"), server_name: None },
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing.pem"), "{e}");
        let e = KubeletSource::new(KubeletConfig::new("bad name!")).unwrap_err().to_string();
        assert!(e.contains("\"bad name!\" is not a valid TLS server name"), "{e}");
    }

    fn pki_ca_only() -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "some other CA");
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn timeouts_refusals_and_garbage() {
        let pki = pki();
        let srv = server(&pki);
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "token", "token-1");

        // Accepts, handshakes, never answers: the deadline ends it.
        srv.replies.lock().unwrap().push_back(Reply::Silent);
        let mut s = KubeletSource::new(KubeletConfig {
            timeout: Duration::from_millis(300),
            ..config(srv.port, dir.path(), KubeletTls::InsecureSkipVerify)
        })
        .unwrap();
        let start = Instant::now();
        let e = s.fetch_pods().unwrap_err();
        assert!(matches!(e.kind, KubeletErrorKind::Timeout { .. }), "{e:?}");
        assert!(start.elapsed() < Duration::from_millis(1200), "{:?}", start.elapsed());
        assert!(e.to_string().ends_with("no complete answer within 300ms"), "{e}");

        // Nothing listening.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let mut s =
            KubeletSource::new(config(port, dir.path(), KubeletTls::InsecureSkipVerify)).unwrap();
        let e = s.fetch_pods().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "kubelet https://127.0.0.1:{port}/pods/: connecting to 127.0.0.1:{port}: "
            )),
            "{e}"
        );

        // Not TLS at all: a plain-HTTP server on the port.
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = plain.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut tcp, _)) = plain.accept() {
                // Take the ClientHello, answer in plain text, then drain
                // until the client hangs up (no reset racing the answer).
                let mut hello = [0u8; 4096];
                let _ = tcp.read(&mut hello);
                let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
                let _ = tcp.shutdown(Shutdown::Write);
                let _ = io::copy(&mut tcp, &mut io::sink());
            }
        });
        let mut s =
            KubeletSource::new(config(port, dir.path(), KubeletTls::InsecureSkipVerify)).unwrap();
        let e = s.fetch_pods().unwrap_err();
        assert!(matches!(e.kind, KubeletErrorKind::Tls { .. }), "{e:?}");

        // A 200 whose body is not a PodList.
        srv.replies.lock().unwrap().push_back(Reply::Json(
            200,
            r#"{"items":[{"metadata":{"name":"a"},"spec":{"containers":[{"name":1}]}}]}"#.into(),
            false,
        ));
        let mut s =
            KubeletSource::new(config(srv.port, dir.path(), KubeletTls::InsecureSkipVerify))
                .unwrap();
        let e = s.fetch_pods().unwrap_err().to_string();
        assert!(
            e.contains(
                "the answer is not a PodList: at items[0].spec.containers[0].name: invalid type"
            ),
            "{e}"
        );

        // Larger than the limit.
        srv.replies.lock().unwrap().push_back(Reply::Json(200, pod_list(&["a", "b", "c"]), false));
        let mut s = KubeletSource::new(KubeletConfig {
            max_body_bytes: 100,
            ..config(srv.port, dir.path(), KubeletTls::InsecureSkipVerify)
        })
        .unwrap();
        let e = s.fetch_pods().unwrap_err().to_string();
        assert!(e.ends_with("response body larger than 100 bytes"), "{e}");
    }

    #[test]
    fn urls_and_defaults() {
        let c = KubeletConfig::new("10.0.0.7");
        assert_eq!(c.url(), "https://10.0.0.7:10250/pods/");
        assert_eq!(c.timeout, Duration::from_secs(3));
        assert_eq!(c.tls, KubeletTls::InsecureSkipVerify);
        assert_eq!(c.token_file.as_deref(), Some(Path::new(IN_CLUSTER_TOKEN_FILE)));
        assert_eq!(KubeletConfig::new("fd00::7").url(), "https://[fd00::7]:10250/pods/");
        let s = KubeletSource::new(KubeletConfig { token_file: None, ..KubeletConfig::new("::1") })
            .unwrap();
        assert_eq!(
            s.request().unwrap(),
            "GET /pods/ HTTP/1.1\r\nHost: [::1]:10250\r\nUser-Agent: kolo-agent\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        );
    }
}
