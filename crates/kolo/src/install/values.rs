//! What `kolo install` can be told: the values, their defaults, `--set
//! key=value` on them, and the checks every value passes before it goes
//! into a manifest (so no value can break or inject YAML).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::InstallError;

/// Every setting of the generated manifests (`kolo install --print-values`
/// shows them; `--set` changes one by its dotted camelCase path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Values {
    /// The namespace of every namespaced object.
    pub namespace: String,
    /// The image every component runs.
    pub image: String,
    /// `imagePullPolicy` of every container.
    pub image_pull_policy: String,
    /// `--log-format` of every component (`json` or `text`).
    pub log_format: String,
    /// The Kubernetes minor version the manifests are for (`1.20`): picks
    /// API versions (PodDisruptionBudget `policy/v1` from 1.21).
    pub kube_version: String,
    /// The scheduler's Deployment.
    pub scheduler: Replicated,
    /// The manager's Deployment.
    pub manager: Manager,
    /// The descheduler's Deployment.
    pub descheduler: Descheduler,
    /// The agent's DaemonSet.
    pub agent: Agent,
}

/// A leader-elected Deployment's size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Replicated {
    /// Replicas (one leads; a PodDisruptionBudget when more than one).
    pub replicas: u64,
    /// CPU request.
    pub cpu_request: String,
    /// Memory request.
    pub memory_request: String,
    /// Memory limit.
    pub memory_limit: String,
}

/// The manager's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manager {
    /// Replicas (one leads; a PodDisruptionBudget when more than one).
    pub replicas: u64,
    /// CPU request.
    pub cpu_request: String,
    /// Memory request.
    pub memory_request: String,
    /// Memory limit.
    pub memory_limit: String,
    /// Where `slo-controller-config` lives (empty: `namespace`). A
    /// Koordinator user keeps it in `koordinator-system`.
    pub config_namespace: String,
}

/// The descheduler's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Descheduler {
    /// Replicas (one leads; a PodDisruptionBudget when more than one).
    pub replicas: u64,
    /// CPU request.
    pub cpu_request: String,
    /// Memory request.
    pub memory_request: String,
    /// Memory limit.
    pub memory_limit: String,
    /// Decide and report but evict nothing.
    pub dry_run: bool,
}

/// The agent's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Agent {
    /// CPU request.
    pub cpu_request: String,
    /// Memory request.
    pub memory_request: String,
    /// CPU limit.
    pub cpu_limit: String,
    /// Memory limit.
    pub memory_limit: String,
    /// Seconds between NodeMetric reports until the NodeMetric's spec says.
    pub report_interval_seconds: u64,
    /// The port of `/metrics`, `/healthz` and `/readyz`.
    pub port: u64,
    /// The `nodes/…` subresource the agent may get to read its kubelet's
    /// `/pods`: `pods` (Kubernetes 1.33+, the kubelet's fine-grained
    /// authorization) or `proxy` (before; it also allows exec). Empty:
    /// from `kubeVersion`.
    pub kubelet_subresource: String,
}

impl Default for Values {
    fn default() -> Self {
        let replicated = |cpu: &str| Replicated {
            replicas: 2,
            cpu_request: cpu.to_string(),
            memory_request: "128Mi".to_string(),
            memory_limit: "1Gi".to_string(),
        };
        let base = replicated("100m");
        Values {
            namespace: "kolo-system".to_string(),
            image: format!("kolo:{}", env!("CARGO_PKG_VERSION")),
            image_pull_policy: "IfNotPresent".to_string(),
            log_format: "json".to_string(),
            kube_version: "1.33".to_string(),
            scheduler: base.clone(),
            manager: Manager {
                replicas: base.replicas,
                cpu_request: base.cpu_request.clone(),
                memory_request: base.memory_request.clone(),
                memory_limit: base.memory_limit.clone(),
                config_namespace: String::new(),
            },
            descheduler: Descheduler {
                replicas: base.replicas,
                cpu_request: base.cpu_request,
                memory_request: base.memory_request,
                memory_limit: base.memory_limit,
                dry_run: false,
            },
            agent: Agent {
                cpu_request: "50m".to_string(),
                memory_request: "64Mi".to_string(),
                cpu_limit: "500m".to_string(),
                memory_limit: "256Mi".to_string(),
                report_interval_seconds: 60,
                port: 9316,
                kubelet_subresource: String::new(),
            },
        }
    }
}

impl Values {
    /// The defaults with each `key=value` of `sets` applied in order, then
    /// checked.
    pub fn with_sets(mut self, sets: &[String]) -> Result<Values, InstallError> {
        let mut tree = serde_json::to_value(&self).expect("values serialize");
        for set in sets {
            apply_set(&mut tree, set)?;
        }
        self = serde_json::from_value(tree)
            .map_err(|e| InstallError::Set { set: sets.join(" "), reason: e.to_string() })?;
        self.check()?;
        Ok(self)
    }

    /// The namespace `slo-controller-config` is read from.
    pub fn config_namespace(&self) -> &str {
        if self.manager.config_namespace.is_empty() {
            &self.namespace
        } else {
            &self.manager.config_namespace
        }
    }

    /// The `nodes/…` subresource for the kubelet's `/pods`.
    pub fn kubelet_subresource(&self) -> &str {
        match self.agent.kubelet_subresource.as_str() {
            "" if self.kube_minor() >= 33 => "pods",
            "" => "proxy",
            set => set,
        }
    }

    /// The minor version of `kube_version`.
    pub fn kube_minor(&self) -> u64 {
        parse_kube_minor(&self.kube_version).expect("checked")
    }

    /// Every value in the range a manifest can take.
    pub fn check(&self) -> Result<(), InstallError> {
        dns_label("namespace", &self.namespace)?;
        if !self.manager.config_namespace.is_empty() {
            dns_label("manager.configNamespace", &self.manager.config_namespace)?;
        }
        image("image", &self.image)?;
        one_of("imagePullPolicy", &self.image_pull_policy, &["Always", "IfNotPresent", "Never"])?;
        one_of("logFormat", &self.log_format, &["json", "text"])?;
        if parse_kube_minor(&self.kube_version).is_none() {
            return Err(invalid("kubeVersion", &self.kube_version, "not 1.N with N ≥ 16"));
        }
        let d = &self.descheduler;
        let m = &self.manager;
        in_range("scheduler.replicas", self.scheduler.replicas, 1, 10)?;
        in_range("manager.replicas", m.replicas, 1, 10)?;
        in_range("descheduler.replicas", d.replicas, 1, 10)?;
        for (name, cpu, request, limit) in [
            (
                "scheduler",
                &self.scheduler.cpu_request,
                &self.scheduler.memory_request,
                &self.scheduler.memory_limit,
            ),
            ("manager", &m.cpu_request, &m.memory_request, &m.memory_limit),
            ("descheduler", &d.cpu_request, &d.memory_request, &d.memory_limit),
        ] {
            quantity(&format!("{name}.cpuRequest"), cpu)?;
            request_within_limit(name, "memory", request, limit)?;
        }
        let a = &self.agent;
        request_within_limit("agent", "cpu", &a.cpu_request, &a.cpu_limit)?;
        request_within_limit("agent", "memory", &a.memory_request, &a.memory_limit)?;
        in_range("agent.reportIntervalSeconds", a.report_interval_seconds, 1, 3600)?;
        in_range("agent.port", a.port, 1, 65535)?;
        if !a.kubelet_subresource.is_empty() {
            one_of("agent.kubeletSubresource", &a.kubelet_subresource, &["pods", "proxy"])?;
        }
        Ok(())
    }
}

/// Applies one `a.b.c=value` to the values tree: the key must exist, and
/// the value is read as the type the key holds.
fn apply_set(tree: &mut Value, set: &str) -> Result<(), InstallError> {
    let (key, raw) = set.split_once('=').ok_or_else(|| InstallError::Set {
        set: set.to_string(),
        reason: "not key=value".to_string(),
    })?;
    let unknown = || InstallError::UnknownKey { key: key.to_string(), known: known_keys() };
    let mut slot = &mut *tree;
    for part in key.split('.') {
        slot = slot.as_object_mut().and_then(|o| o.get_mut(part)).ok_or_else(unknown)?;
    }
    *slot = match slot {
        Value::Object(_) => return Err(unknown()),
        Value::Bool(_) => {
            Value::Bool(raw.parse().map_err(|_| invalid(key, raw, "not true or false"))?)
        }
        Value::Number(_) => Value::from(
            raw.parse::<u64>().map_err(|_| invalid(key, raw, "not a whole number ≥ 0"))?,
        ),
        _ => Value::String(raw.to_string()),
    };
    Ok(())
}

/// Every settable key, dotted.
pub fn known_keys() -> Vec<String> {
    by_key(&Values::default()).into_keys().collect()
}

/// Every value by its dotted key (strings as they are, numbers and
/// booleans as JSON writes them): the keys `--set` takes and the
/// placeholders the templates use.
pub fn by_key(values: &Values) -> std::collections::BTreeMap<String, String> {
    fn walk(prefix: &str, value: &Value, out: &mut std::collections::BTreeMap<String, String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    walk(&key, v, out);
                }
            }
            Value::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk("", &serde_json::to_value(values).expect("values serialize"), &mut out);
    out
}

fn invalid(key: &str, value: &str, reason: &str) -> InstallError {
    InstallError::Invalid {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

fn parse_kube_minor(version: &str) -> Option<u64> {
    let minor = version.strip_prefix('v').unwrap_or(version).strip_prefix("1.")?;
    minor.parse().ok().filter(|m| (16..=99).contains(m))
}

/// A namespace name: a DNS-1123 label.
fn dns_label(key: &str, value: &str) -> Result<(), InstallError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(invalid(key, value, "not a DNS-1123 label (a-z, 0-9, '-', ≤ 63)"))
    }
}

/// An image reference: registry, path, tag and digest characters only.
fn image(key: &str, value: &str) -> Result<(), InstallError> {
    let ok = !value.is_empty()
        && value.len() <= 255
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/:@".contains(&b))
        && value.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric());
    if ok { Ok(()) } else { Err(invalid(key, value, "not an image reference")) }
}

fn one_of(key: &str, value: &str, allowed: &[&str]) -> Result<(), InstallError> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(invalid(key, value, &format!("not one of {}", allowed.join(", "))))
    }
}

fn in_range(key: &str, value: u64, min: u64, max: u64) -> Result<(), InstallError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(invalid(key, &value.to_string(), &format!("not in {min}..={max}")))
    }
}

/// A positive Kubernetes quantity; its value in milli-units.
fn quantity(key: &str, value: &str) -> Result<i128, InstallError> {
    let q = kolo_api::Quantity::parse(value).map_err(|e| invalid(key, value, &e.to_string()))?;
    let milli = q.milli_value() as i128;
    if milli <= 0 {
        return Err(invalid(key, value, "not above zero"));
    }
    Ok(milli)
}

/// Both quantities valid, and the request no more than the limit.
fn request_within_limit(
    component: &str,
    resource: &str,
    request: &str,
    limit: &str,
) -> Result<(), InstallError> {
    let request_key = format!("{component}.{resource}Request");
    let limit_key = format!("{component}.{resource}Limit");
    let r = quantity(&request_key, request)?;
    let l = quantity(&limit_key, limit)?;
    if r > l {
        return Err(invalid(&request_key, request, &format!("above {limit_key} {limit}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(sets: &[&str]) -> Result<Values, InstallError> {
        Values::default().with_sets(&sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_pass_their_own_checks() {
        Values::default().check().unwrap();
        assert_eq!(Values::default().config_namespace(), "kolo-system");
    }

    #[test]
    fn a_set_reaches_its_field_as_the_field_type() {
        let v = set(&["scheduler.replicas=3", "descheduler.dryRun=true", "namespace=ops"]).unwrap();
        assert_eq!(v.scheduler.replicas, 3);
        assert!(v.descheduler.dry_run);
        assert_eq!(v.namespace, "ops");
        assert_eq!(v.config_namespace(), "ops", "follows the namespace unless set");
        let v = set(&["manager.configNamespace=koordinator-system"]).unwrap();
        assert_eq!(v.config_namespace(), "koordinator-system");
    }

    #[test]
    fn bad_sets_name_the_key_and_why() {
        let cases: &[(&str, &str)] = &[
            ("scheduler.replica=3", "unknown key scheduler.replica"),
            ("scheduler=3", "unknown key scheduler"),
            ("replicas", "not key=value"),
            ("scheduler.replicas=-1", "scheduler.replicas"),
            ("scheduler.replicas=0", "not in 1..=10"),
            ("descheduler.dryRun=yes", "not true or false"),
            ("namespace=Kolo_System", "not a DNS-1123 label"),
            ("namespace=a\n  evil: x", "namespace"),
            ("image=kolo:1 # x", "not an image reference"),
            ("agent.cpuLimit=-1", "agent.cpuLimit"),
            ("agent.cpuRequest=2", "above agent.cpuLimit"),
            ("manager.memoryRequest=2Gi", "above manager.memoryLimit"),
            ("scheduler.cpuRequest=0", "not above zero"),
            ("kubeVersion=2.0", "kubeVersion"),
            ("logFormat=xml", "not one of json, text"),
            ("agent.port=70000", "agent.port"),
        ];
        for (s, want) in cases {
            let err = set(&[s]).unwrap_err().to_string();
            assert!(err.contains(want), "{s:?}: {err:?} lacks {want:?}");
        }
    }

    #[test]
    fn every_known_key_is_settable_to_its_default() {
        let defaults = serde_json::to_value(Values::default()).unwrap();
        for key in known_keys() {
            let value = key.split('.').fold(&defaults, |v, k| &v[k]);
            let raw = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(set(&[&format!("{key}={raw}")]).unwrap(), Values::default(), "{key}");
        }
        assert!(known_keys().contains(&"agent.memoryLimit".to_string()));
    }
}
