//! `kolo manager run`: the manager against a cluster: the SLO controllers
//! (batch / mid allocatable on node status, NodeMetric spec, NodeSLO) on
//! the leader, and on every replica, with `--webhook-listen`, the admission
//! webhooks with their certificate and webhook configurations.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use kolo_kube::manager::{Controller, ManagerOptions};
use kolo_kube::webhook::rotation::RotationPolicy;
use kolo_kube::webhook::server::DEFAULT_DECISION_TIMEOUT;
use kolo_kube::webhook::server::tls::SelfSignedOptions;
use kolo_kube::webhook::{ClientTarget, WebhookConfigurations, WebhookOptions};
use kolo_scheduler::plugins::elastic_quota::args::ElasticQuotaArgs;

use kolo_kube::component::{self, ComponentError};

use crate::cluster::ComponentArgs;

/// `kolo manager run` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    component: ComponentArgs,
    /// Namespace of the `slo-controller-config` ConfigMap (Koordinator's, so
    /// an existing Koordinator cluster's ConfigMap is used as is;
    /// `deploy/` keeps it in kolo-system).
    #[arg(long, value_name = "NS", default_value = kolo_manager::config::DEFAULT_CONFIG_NAMESPACE)]
    config_namespace: String,
    /// Name of the ConfigMap.
    #[arg(long, value_name = "NAME", default_value = kolo_manager::config::DEFAULT_CONFIG_NAME)]
    config_name: String,
    /// Manage only the nodes matching this label selector (default: all).
    #[arg(long, value_name = "SELECTOR")]
    node_selector: Option<String>,
    /// A full pass runs at least this often, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    resync_seconds: u64,
    /// The quota controller's ElasticQuota arguments as JSON, Koordinator's
    /// `ElasticQuotaArgs` (e.g. `{"monitorAllQuotas": true,
    /// "delayEvictTime": "120s"}` turns over-use revocation on); default:
    /// the plugin's defaults (revocation off). Give the scheduler's
    /// ElasticQuota profile the same.
    #[arg(long, value_name = "JSON")]
    elastic_quota_args: Option<String>,
    #[command(flatten)]
    webhook: WebhookArgs,
}

/// The admission webhook options of `kolo manager run`.
#[derive(Debug, clap::Args)]
struct WebhookArgs {
    /// Serve the admission webhooks (HTTPS) here and register them; off
    /// without it.
    #[arg(long, value_name = "ADDR")]
    webhook_listen: Option<SocketAddr>,
    /// The Secret (NAMESPACE/NAME) that holds the CA and serving
    /// certificate all replicas share; created when missing.
    #[arg(long, value_name = "NS/NAME", default_value = "kolo-system/kolo-webhook-certs")]
    webhook_secret: String,
    /// The Service (NAMESPACE/NAME:PORT) the API server calls.
    #[arg(long, value_name = "NS/NAME:PORT", default_value = "kolo-system/kolo-webhook:443")]
    webhook_service: String,
    /// Call the webhook at this URL instead of through a Service (a
    /// manager outside the cluster).
    #[arg(long, value_name = "URL")]
    webhook_url: Option<String>,
    /// A DNS name the generated certificate covers (repeat; default: the
    /// kolo-webhook Service's names and localhost).
    #[arg(long, value_name = "NAME")]
    webhook_dns_name: Vec<String>,
    /// An IP address the generated certificate covers (repeat; default
    /// 127.0.0.1).
    #[arg(long, value_name = "IP")]
    webhook_ip: Vec<IpAddr>,
    /// Name of the Mutating- and ValidatingWebhookConfiguration.
    #[arg(long, value_name = "NAME", default_value = "kolo")]
    webhook_configuration_name: String,
    /// Only pods in namespaces with this label (KEY=VALUE, repeat) go
    /// through the webhooks; default: all namespaces.
    #[arg(long, value_name = "KEY=VALUE")]
    webhook_namespace_label: Vec<String>,
    /// The API server's timeout for one webhook call, seconds (1 to 30).
    #[arg(long, value_name = "SECONDS", default_value_t = 3)]
    webhook_timeout_seconds: i32,
    /// Validity of a generated certificate, days (1 to 3650).
    #[arg(long, value_name = "DAYS", default_value_t = 365,
          value_parser = clap::value_parser!(u32).range(1..=3650))]
    webhook_cert_validity_days: u32,
    /// Renew the shared certificate once it expires within this many days
    /// (below --webhook-cert-validity-days).
    #[arg(long, value_name = "DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    webhook_cert_renew_before_days: u64,
    /// How often each replica checks the certificate's Secret, seconds
    /// (1 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    webhook_cert_check_seconds: u64,
}

fn split_pair<'a>(text: &'a str, sep: char, what: &str) -> Result<(&'a str, &'a str), String> {
    text.split_once(sep).ok_or_else(|| format!("{what}: expected {sep} in {text:?}"))
}

impl WebhookArgs {
    fn options(&self) -> Result<Option<WebhookOptions>, String> {
        let Some(listen) = self.webhook_listen else { return Ok(None) };
        let (ns, name) = split_pair(&self.webhook_secret, '/', "--webhook-secret")?;
        let target = match &self.webhook_url {
            Some(url) => ClientTarget::Url(url.clone()),
            None => {
                let (namespace, rest) =
                    split_pair(&self.webhook_service, '/', "--webhook-service")?;
                let (name, port) = split_pair(rest, ':', "--webhook-service")?;
                let port =
                    port.parse().map_err(|e| format!("--webhook-service port {port:?}: {e}"))?;
                ClientTarget::Service { namespace: namespace.into(), name: name.into(), port }
            }
        };
        let namespace_selector = self
            .webhook_namespace_label
            .iter()
            .map(|l| {
                split_pair(l, '=', "--webhook-namespace-label").map(|(k, v)| (k.into(), v.into()))
            })
            .collect::<Result<BTreeMap<String, String>, String>>()?;
        if self.webhook_cert_renew_before_days >= u64::from(self.webhook_cert_validity_days) {
            return Err(format!(
                "--webhook-cert-renew-before-days {} must be below --webhook-cert-validity-days {} \
                 (else every check renews)",
                self.webhook_cert_renew_before_days, self.webhook_cert_validity_days
            ));
        }
        let mut certificate = SelfSignedOptions {
            validity_days: self.webhook_cert_validity_days,
            ..SelfSignedOptions::default()
        };
        if !self.webhook_dns_name.is_empty() || !self.webhook_ip.is_empty() {
            certificate.dns_names = self.webhook_dns_name.clone();
            certificate.ips = self.webhook_ip.clone();
        }
        Ok(Some(WebhookOptions {
            listen,
            secret: (ns.into(), name.into()),
            certificate,
            configurations: WebhookConfigurations {
                name: self.webhook_configuration_name.clone(),
                target,
                namespace_selector,
                timeout_seconds: self.webhook_timeout_seconds,
            },
            decision_timeout: DEFAULT_DECISION_TIMEOUT,
            rotation: RotationPolicy {
                check_interval: Duration::from_secs(self.webhook_cert_check_seconds),
                renew_before: Duration::from_secs(self.webhook_cert_renew_before_days * 86_400),
            },
        }))
    }
}

/// Runs the manager until SIGTERM, or until leadership is lost.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let webhook = args.webhook.options()?;
    let quota_args = match &args.elastic_quota_args {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("--elastic-quota-args: not JSON: {e}"))?;
            ElasticQuotaArgs::decode(Some(&value))
                .map_err(|e| format!("--elastic-quota-args: {e}"))?
        }
        None => ElasticQuotaArgs::default(),
    };
    let options = ManagerOptions {
        quota_args,
        config_namespace: args.config_namespace,
        config_name: args.config_name,
        resync: Duration::from_secs(args.resync_seconds.max(1)),
        node_selector: args.node_selector,
        ..ManagerOptions::default()
    };
    let ComponentArgs { cluster, leader } = args.component;
    let election = leader.election();
    component::run(&cluster.settings("manager"), None, |client, health, _| async move {
        // Every replica serves admission; only the leader writes. The
        // webhooks' metrics and readiness join the manager's health
        // endpoint.
        let webhook = async {
            match webhook {
                Some(w) => kolo_kube::webhook::run(client.clone(), w, health.clone()).await,
                None => std::future::pending().await,
            }
        };
        let controllers = async {
            let leadership = component::lead(&client, &election, "kolo-manager", &health).await;
            Controller::new(client.clone(), options, health.clone()).run(leadership).await
        };
        tokio::select! {
            r = webhook => r,
            r = controllers => r,
        }
    })
    .map_err(|e: ComponentError| e.into())
}
