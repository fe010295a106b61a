//! The ConfigMap keys that become a node's NodeSLO (Koordinator spec §3.4):
//! `resource-threshold-config`, `resource-qos-config`, `cpu-burst-config`,
//! `system-config` (each `{clusterStrategy, nodeStrategies[]}`) and
//! `host-application-config` (`{applications, nodeConfigs[]}`).
//!
//! Layering: cluster = defaults ← `clusterStrategy`; each node strategy =
//! cluster ← its own fields; a node takes the first node strategy whose
//! selector matches its labels, else the cluster strategy.
//!
//! Where kolo differs: the reference leaves `resource-qos-config` empty in
//! the NodeSLO and lets the agent fill in defaults; kolo writes the complete
//! defaults ([`default_resource_qos`]) so that `kubectl get nodeslo` shows
//! what is in force. The values are the reference agent's defaults except
//! that BE CPU QoS is on (`beClass.cpuQOS.enable: true`: kolo's agent
//! isolates BE pods by default) with `schedIdle` unset: the agent picks the
//! lowest CPU priority the node's kernel offers (`cpu.idle` on CFS kernels,
//! the minimal weight on EEVDF ones, where `cpu.idle` delays LS wake-ups).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as KubeLabelSelector;
use kolo_api::crd::{
    BlkIOQOSCfg, CPUBurstStrategy, CPUQOSCfg, HostApplicationSpec, MemoryQOSCfg, NetworkQOSCfg,
    ResctrlQOSCfg, ResourceQOS, ResourceQOSPolicies, ResourceQOSStrategy,
    ResourceThresholdStrategy, SystemStrategy,
};
use kolo_core::selector::{LabelMap, LabelSelector};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::merge::merge_typed;
use super::{ConfigKey, ConfigKeyError, FieldError, check_range, parse_json, parse_value};

/// A NodeSLO part configured through `{clusterStrategy, nodeStrategies}`.
pub trait SloStrategy: Clone + Default + PartialEq + Serialize + DeserializeOwned {
    /// The ConfigMap key.
    const KEY: &'static str;
    /// The defaults the cluster strategy is layered over.
    fn defaults() -> Self;
    /// Checks ranges and allowed values of the fields that are set.
    fn validate(&self) -> Result<(), FieldError>;
}

/// One `nodeStrategies[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStrategy<S> {
    /// A name for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The nodes it applies to; a missing selector matches no node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<KubeLabelSelector>,
    /// The fields that override the cluster strategy.
    #[serde(flatten)]
    pub strategy: S,
}

/// A `{clusterStrategy, nodeStrategies}` ConfigMap value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStrategies<S> {
    /// The cluster-wide fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_strategy: Option<S>,
    /// Node-selector-specific overrides; the first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_strategies: Vec<NodeStrategy<S>>,
}

impl<S: SloStrategy> ConfigKey for NodeStrategies<S> {
    const KEY: &'static str = S::KEY;

    fn validate(&self) -> Result<(), FieldError> {
        if let Some(cluster) = &self.cluster_strategy {
            cluster.validate().map_err(|e| e.under(".clusterStrategy"))?;
        }
        for (i, node) in self.node_strategies.iter().enumerate() {
            let at = format!(".nodeStrategies[{i}]");
            node.strategy.validate().map_err(|e| e.under(&at))?;
            validate_selector(&at, node.node_selector.as_ref())?;
        }
        Ok(())
    }

    fn from_json(text: &str) -> Result<Self, ConfigKeyError> {
        let mut root: serde_json::Map<String, Value> = parse_json(Self::KEY, text)?;
        let cluster_strategy = match root.remove("clusterStrategy") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_value(Self::KEY, "$.clusterStrategy", v)?),
        };
        let node_strategies = match root.remove("nodeStrategies") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => parse_value::<Vec<Value>>(Self::KEY, "$.nodeStrategies", v)?
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let at = format!("$.nodeStrategies[{i}]");
                    let (name, node_selector, rest) = split_selector_fields(Self::KEY, &at, v)?;
                    let strategy = parse_value(Self::KEY, &at, rest)?;
                    Ok(NodeStrategy { name, node_selector, strategy })
                })
                .collect::<Result<_, ConfigKeyError>>()?,
        };
        Ok(NodeStrategies { cluster_strategy, node_strategies })
    }
}

/// Takes `name` and `nodeSelector` out of a node entry, leaving the
/// strategy fields (serde's `flatten` would lose error paths).
fn split_selector_fields(
    key: &'static str,
    at: &str,
    value: Value,
) -> Result<(Option<String>, Option<KubeLabelSelector>, Value), ConfigKeyError> {
    let mut fields: serde_json::Map<String, Value> = parse_value(key, at, value)?;
    let name = match fields.remove("name") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_value(key, &format!("{at}.name"), v)?),
    };
    let selector = match fields.remove("nodeSelector") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_value(key, &format!("{at}.nodeSelector"), v)?),
    };
    Ok((name, selector, Value::Object(fields)))
}

fn validate_selector(at: &str, selector: Option<&KubeLabelSelector>) -> Result<(), FieldError> {
    if let Some(selector) = selector {
        LabelSelector::compile(selector).map_err(|e| {
            let text = e.to_string();
            let (path, message) = text.split_once(": ").unwrap_or(("", &text));
            FieldError::new(format!("{at}.nodeSelector.{path}"), message)
        })?;
    }
    Ok(())
}

/// A [`NodeStrategies`] resolved for lookups: layered and with compiled
/// selectors.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedStrategies<S> {
    /// Defaults ← cluster fields.
    pub cluster: S,
    /// Each override: compiled selector and cluster ← its fields.
    pub nodes: Vec<(Option<LabelSelector>, S)>,
}

impl<S: SloStrategy> ResolvedStrategies<S> {
    /// Resolves a parsed (validated) value.
    pub fn resolve(config: &NodeStrategies<S>) -> Self {
        let cluster = match &config.cluster_strategy {
            Some(fields) => layer(&S::defaults(), fields),
            None => S::defaults(),
        };
        let nodes = config
            .node_strategies
            .iter()
            .map(|n| {
                let selector =
                    n.node_selector.as_ref().and_then(|s| LabelSelector::compile(s).ok());
                (selector, layer(&cluster, &n.strategy))
            })
            .collect();
        ResolvedStrategies { cluster, nodes }
    }

    /// The strategy of a node with these labels.
    pub fn for_node(&self, labels: &(impl LabelMap + ?Sized)) -> &S {
        self.nodes
            .iter()
            .find(|(selector, _)| selector.as_ref().is_some_and(|s| s.matches(labels)))
            .map_or(&self.cluster, |(_, s)| s)
    }
}

impl<S: SloStrategy> Default for ResolvedStrategies<S> {
    fn default() -> Self {
        ResolvedStrategies { cluster: S::defaults(), nodes: Vec::new() }
    }
}

fn layer<S: Serialize + DeserializeOwned>(base: &S, overlay: &S) -> S {
    let overlay = serde_json::to_value(overlay).expect("a strategy serializes");
    merge_typed(base, &overlay).expect("a merged strategy deserializes")
}

fn one_of(path: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), FieldError> {
    match value {
        Some(v) if !allowed.contains(&v) => {
            Err(FieldError::new(path, format!("{v:?} is not one of {}", allowed.join(", "))))
        }
        _ => Ok(()),
    }
}

fn percent(path: &str, value: Option<i64>) -> Result<(), FieldError> {
    check_range(path, value, Some(0), Some(100))
}

impl SloStrategy for ResourceThresholdStrategy {
    const KEY: &'static str = "resource-threshold-config";

    fn defaults() -> Self {
        ResourceThresholdStrategy {
            enable: Some(false),
            cpu_suppress_threshold_percent: Some(65),
            cpu_suppress_policy: Some("cpuset".into()),
            memory_evict_threshold_percent: Some(70),
            cpu_evict_policy: Some("evictByRealLimit".into()),
            ..Default::default()
        }
    }

    fn validate(&self) -> Result<(), FieldError> {
        percent(".cpuSuppressThresholdPercent", self.cpu_suppress_threshold_percent)?;
        percent(".cpuSuppressMinPercent", self.cpu_suppress_min_percent)?;
        percent(".memoryEvictThresholdPercent", self.memory_evict_threshold_percent)?;
        percent(".memoryEvictLowerPercent", self.memory_evict_lower_percent)?;
        percent(
            ".cpuEvictBESatisfactionUpperPercent",
            self.cpu_evict_be_satisfaction_upper_percent,
        )?;
        percent(
            ".cpuEvictBESatisfactionLowerPercent",
            self.cpu_evict_be_satisfaction_lower_percent,
        )?;
        percent(".cpuEvictBEUsageThresholdPercent", self.cpu_evict_be_usage_threshold_percent)?;
        percent(".cpuEvictThresholdPercent", self.cpu_evict_threshold_percent)?;
        percent(".cpuEvictLowerPercent", self.cpu_evict_lower_percent)?;
        check_range(
            ".cpuEvictTimeWindowSeconds",
            self.cpu_evict_time_window_seconds,
            Some(1),
            None,
        )?;
        check_range(
            ".allocatableEvictPriorityThreshold",
            self.allocatable_evict_priority_threshold.map(i64::from),
            Some(0),
            Some(7999),
        )?;
        one_of(".cpuSuppressPolicy", self.cpu_suppress_policy.as_deref(), &["cpuset", "cfsQuota"])?;
        one_of(
            ".cpuEvictPolicy",
            self.cpu_evict_policy.as_deref(),
            &["evictByRealLimit", "evictByAllocatable"],
        )?;
        // A lower bound above its threshold would make eviction stop before
        // it started; the reference accepts it silently.
        if let (Some(t), Some(l)) =
            (self.memory_evict_threshold_percent, self.memory_evict_lower_percent)
            && l > t
        {
            return Err(FieldError::new(
                ".memoryEvictLowerPercent",
                format!("{l} is above memoryEvictThresholdPercent {t}: set it below the threshold"),
            ));
        }
        if let (Some(u), Some(l)) = (
            self.cpu_evict_be_satisfaction_upper_percent,
            self.cpu_evict_be_satisfaction_lower_percent,
        ) && l > u
        {
            return Err(FieldError::new(
                ".cpuEvictBESatisfactionLowerPercent",
                format!("{l} is above cpuEvictBESatisfactionUpperPercent {u}"),
            ));
        }
        Ok(())
    }
}

impl SloStrategy for CPUBurstStrategy {
    const KEY: &'static str = "cpu-burst-config";

    fn defaults() -> Self {
        CPUBurstStrategy {
            policy: Some("none".into()),
            cpu_burst_percent: Some(1000),
            cfs_quota_burst_percent: Some(300),
            cfs_quota_burst_period_seconds: Some(-1),
            share_pool_threshold_percent: Some(50),
        }
    }

    fn validate(&self) -> Result<(), FieldError> {
        one_of(
            ".policy",
            self.policy.as_deref(),
            &["none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto"],
        )?;
        check_range(".cpuBurstPercent", self.cpu_burst_percent, Some(0), Some(10000))?;
        check_range(".cfsQuotaBurstPercent", self.cfs_quota_burst_percent, Some(100), None)?;
        check_range(
            ".cfsQuotaBurstPeriodSeconds",
            self.cfs_quota_burst_period_seconds,
            Some(-1),
            None,
        )?;
        percent(".sharePoolThresholdPercent", self.share_pool_threshold_percent)
    }
}

impl SloStrategy for SystemStrategy {
    const KEY: &'static str = "system-config";

    fn defaults() -> Self {
        SystemStrategy { total_network_bandwidth: Some(Quantity("0".into())), ..Default::default() }
    }

    fn validate(&self) -> Result<(), FieldError> {
        check_range(".minFreeKbytesFactor", self.min_free_kbytes_factor, Some(0), None)?;
        check_range(".watermarkScaleFactor", self.watermark_scale_factor, Some(1), Some(400))?;
        check_range(".memcgReapBackGround", self.memcg_reap_background, Some(0), Some(1))?;
        check_range(".pageCacheLimitEnabled", self.page_cache_limit_enabled, Some(0), Some(1))?;
        check_range(
            ".schedGroupIdentityEnabled",
            self.sched_group_identity_enabled,
            Some(0),
            Some(1),
        )?;
        check_range(".schedIdleSaverWmark", self.sched_idle_saver_wmark, Some(0), None)?;
        if let Some(q) = &self.total_network_bandwidth {
            match kolo_api::quantity::parse_value(q) {
                Ok(v) if v >= 0 => {}
                Ok(v) => {
                    return Err(FieldError::new(
                        ".totalNetworkBandwidth",
                        format!("{v} is negative"),
                    ));
                }
                Err(e) => return Err(FieldError::new(".totalNetworkBandwidth", e.to_string())),
            }
        }
        Ok(())
    }
}

impl SloStrategy for ResourceQOSStrategy {
    const KEY: &'static str = "resource-qos-config";

    fn defaults() -> Self {
        default_resource_qos()
    }

    fn validate(&self) -> Result<(), FieldError> {
        if let Some(p) = &self.policies {
            one_of(
                ".policies.cpuPolicy",
                p.cpu_policy.as_deref(),
                &["groupIdentity", "coreSched"],
            )?;
            one_of(".policies.netQOSPolicy", p.net_qos_policy.as_deref(), &["tc", "terway-qos"])?;
        }
        let classes = [
            (".lsrClass", &self.lsr_class),
            (".lsClass", &self.ls_class),
            (".beClass", &self.be_class),
            (".systemClass", &self.system_class),
            (".cgroupRoot", &self.cgroup_root),
        ];
        for (at, class) in classes {
            let Some(class) = class else { continue };
            validate_class(class).map_err(|e| e.under(at))?;
        }
        Ok(())
    }
}

fn validate_class(class: &ResourceQOS) -> Result<(), FieldError> {
    if let Some(cpu) = &class.cpu_qos {
        check_range(".cpuQOS.groupIdentity", cpu.group_identity, Some(-1), Some(2))?;
        check_range(".cpuQOS.schedIdle", cpu.sched_idle, Some(0), Some(1))?;
    }
    if let Some(m) = &class.memory_qos {
        percent(".memoryQOS.minLimitPercent", m.min_limit_percent)?;
        percent(".memoryQOS.lowLimitPercent", m.low_limit_percent)?;
        percent(".memoryQOS.throttlingPercent", m.throttling_percent)?;
        percent(".memoryQOS.wmarkRatio", m.wmark_ratio)?;
        check_range(".memoryQOS.wmarkScalePermill", m.wmark_scale_permill, Some(1), Some(1000))?;
        check_range(".memoryQOS.wmarkMinAdj", m.wmark_min_adj, Some(-25), Some(50))?;
    }
    if let Some(r) = &class.resctrl_qos {
        percent(".resctrlQOS.catRangeStartPercent", r.cat_range_start_percent)?;
        percent(".resctrlQOS.catRangeEndPercent", r.cat_range_end_percent)?;
        percent(".resctrlQOS.mbaPercent", r.mba_percent)?;
    }
    Ok(())
}

/// The complete per-class QoS defaults (see the module docs).
pub fn default_resource_qos() -> ResourceQOSStrategy {
    let class = |group_identity: i64,
                 sched_idle: Option<i64>,
                 core_expeller: bool,
                 cat_end: i64,
                 wmark_ratio: i64,
                 wmark_scale_permill: i64,
                 wmark_min_adj: i64| ResourceQOS {
        cpu_qos: Some(CPUQOSCfg {
            enable: Some(false),
            group_identity: Some(group_identity),
            sched_idle,
            core_expeller: Some(core_expeller),
        }),
        memory_qos: Some(MemoryQOSCfg {
            enable: Some(false),
            min_limit_percent: Some(0),
            low_limit_percent: Some(0),
            throttling_percent: Some(0),
            wmark_ratio: Some(wmark_ratio),
            wmark_scale_permill: Some(wmark_scale_permill),
            wmark_min_adj: Some(wmark_min_adj),
            priority_enable: Some(0),
            priority: Some(0),
            oom_kill_group: Some(0),
            ..Default::default()
        }),
        blkio_qos: Some(BlkIOQOSCfg { enable: Some(false), ..Default::default() }),
        resctrl_qos: Some(ResctrlQOSCfg {
            enable: Some(false),
            cat_range_start_percent: Some(0),
            cat_range_end_percent: Some(cat_end),
            mba_percent: Some(100),
        }),
        network_qos: Some(NetworkQOSCfg { enable: Some(false), ..Default::default() }),
    };
    // BE CPU QoS is on (the agent's BE isolation; the reference renders it
    // off, so BE work would keep the kubelet's defaults), and schedIdle is
    // left to the agent, which knows the node's kernel: `cpu.idle` on CFS
    // kernels, the minimal weight on EEVDF ones (kolo_agent::kernel).
    let mut be = class(-1, None, false, 30, 95, 20, 50);
    if let Some(cpu) = be.cpu_qos.as_mut() {
        cpu.enable = Some(true);
    }
    ResourceQOSStrategy {
        policies: Some(ResourceQOSPolicies {
            cpu_policy: Some("groupIdentity".into()),
            net_qos_policy: Some("tc".into()),
        }),
        lsr_class: Some(class(2, Some(0), true, 100, 95, 20, -25)),
        ls_class: Some(class(2, Some(0), true, 100, 95, 20, -25)),
        be_class: Some(be),
        system_class: Some(class(0, Some(0), false, 100, 0, 50, 0)),
        cgroup_root: Some(class(0, Some(0), false, 100, 0, 50, 0)),
    }
}

/// `host-application-config`: out-of-band applications whose usage counts
/// as system usage (by priority) and whose cgroups the agent manages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostApplicationCfg {
    /// The cluster-wide list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<HostApplicationSpec>,
    /// Node-selector-specific lists; the first match replaces the cluster list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_configs: Vec<NodeHostApplications>,
}

/// A `host-application-config` `nodeConfigs[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeHostApplications {
    /// A name for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The nodes it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<KubeLabelSelector>,
    /// The applications of those nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<HostApplicationSpec>,
}

impl ConfigKey for HostApplicationCfg {
    const KEY: &'static str = "host-application-config";

    fn validate(&self) -> Result<(), FieldError> {
        let check_apps = |at: &str, apps: &[HostApplicationSpec]| -> Result<(), FieldError> {
            for (i, app) in apps.iter().enumerate() {
                let here = format!("{at}.applications[{i}]");
                if app.name.as_deref().is_none_or(str::is_empty) {
                    return Err(FieldError::new(
                        format!("{here}.name"),
                        "an application needs a name",
                    ));
                }
                if let Some(p) = app.priority.as_deref()
                    && !p.is_empty()
                    && kolo_api::PriorityClass::from_name(p) == kolo_api::PriorityClass::None
                {
                    return Err(FieldError::new(
                        format!("{here}.priority"),
                        format!(
                            "{p:?} is not one of koord-prod, koord-mid, koord-batch, koord-free"
                        ),
                    ));
                }
                if let Some(q) = app.qos.as_deref()
                    && !q.is_empty()
                    && kolo_api::QoSClass::from_label_value(q) == kolo_api::QoSClass::None
                {
                    return Err(FieldError::new(
                        format!("{here}.qos"),
                        format!("{q:?} is not one of LSE, LSR, LS, BE, SYSTEM"),
                    ));
                }
            }
            Ok(())
        };
        check_apps("", &self.applications)?;
        for (i, node) in self.node_configs.iter().enumerate() {
            let at = format!(".nodeConfigs[{i}]");
            check_apps(&at, &node.applications)?;
            validate_selector(&at, node.node_selector.as_ref())?;
        }
        Ok(())
    }
}

impl HostApplicationCfg {
    /// The applications of a node with these labels.
    pub fn for_node(&self, labels: &(impl LabelMap + ?Sized)) -> &[HostApplicationSpec] {
        self.node_configs
            .iter()
            .find(|n| {
                n.node_selector
                    .as_ref()
                    .and_then(|s| LabelSelector::compile(s).ok())
                    .is_some_and(|s| s.matches(labels))
            })
            .map_or(&self.applications, |n| &n.applications)
    }
}

/// The NodeSLO parts of the ConfigMap, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SloKeys {
    /// `resource-threshold-config`.
    pub resource_threshold: ResolvedStrategies<ResourceThresholdStrategy>,
    /// `resource-qos-config`.
    pub resource_qos: ResolvedStrategies<ResourceQOSStrategy>,
    /// `cpu-burst-config`.
    pub cpu_burst: ResolvedStrategies<CPUBurstStrategy>,
    /// `system-config`.
    pub system: ResolvedStrategies<SystemStrategy>,
    /// `host-application-config`.
    pub host_applications: HostApplicationCfg,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::parse_key;

    fn parse<S: SloStrategy>(text: &str) -> Result<NodeStrategies<S>, ConfigKeyError> {
        let data = BTreeMap::from([(S::KEY.to_string(), text.to_string())]);
        parse_key::<NodeStrategies<S>>(Some(&data)).map(|v| v.expect("key present"))
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn threshold_layers_default_cluster_node() {
        let cfg = parse::<ResourceThresholdStrategy>(
            r#"{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":60},
                "nodeStrategies":[
                  {"name":"big","nodeSelector":{"matchLabels":{"size":"big"}},"memoryEvictThresholdPercent":80},
                  {"name":"big2","nodeSelector":{"matchLabels":{"size":"big"}},"memoryEvictThresholdPercent":90}]}"#,
        )
        .unwrap();
        let r = ResolvedStrategies::resolve(&cfg);
        assert_eq!(r.cluster.enable, Some(true));
        assert_eq!(r.cluster.cpu_suppress_threshold_percent, Some(60));
        assert_eq!(r.cluster.cpu_suppress_policy.as_deref(), Some("cpuset"), "default kept");
        let big = r.for_node(&labels(&[("size", "big")]));
        assert_eq!(big.memory_evict_threshold_percent, Some(80), "first match wins");
        assert_eq!(big.cpu_suppress_threshold_percent, Some(60), "inherits the cluster");
        let small = r.for_node(&labels(&[("size", "small")]));
        assert_eq!(small.memory_evict_threshold_percent, Some(70), "default");
    }

    #[test]
    fn defaults_match_the_reference() {
        let t = ResourceThresholdStrategy::defaults();
        assert_eq!(t.enable, Some(false));
        assert_eq!(t.cpu_suppress_threshold_percent, Some(65));
        assert_eq!(t.memory_evict_threshold_percent, Some(70));
        assert_eq!(t.cpu_evict_policy.as_deref(), Some("evictByRealLimit"));
        assert_eq!(t.cpu_suppress_min_percent, None);
        let b = CPUBurstStrategy::defaults();
        assert_eq!(
            (b.policy.as_deref(), b.cpu_burst_percent, b.cfs_quota_burst_percent),
            (Some("none"), Some(1000), Some(300))
        );
        assert_eq!(
            (b.cfs_quota_burst_period_seconds, b.share_pool_threshold_percent),
            (Some(-1), Some(50))
        );
        assert_eq!(SystemStrategy::defaults().total_network_bandwidth, Some(Quantity("0".into())));
        let q = default_resource_qos();
        let ls = q.ls_class.as_ref().unwrap();
        assert_eq!(ls.cpu_qos.as_ref().unwrap().group_identity, Some(2));
        assert_eq!(ls.memory_qos.as_ref().unwrap().wmark_min_adj, Some(-25));
        let be = q.be_class.as_ref().unwrap();
        assert_eq!(be.cpu_qos.as_ref().unwrap().group_identity, Some(-1));
        let be_cpu = be.cpu_qos.as_ref().unwrap();
        assert_eq!(be_cpu.sched_idle, None, "kolo: the agent picks cpu.idle per kernel");
        assert_eq!(be_cpu.enable, Some(true), "kolo: BE isolation on, as the agent's default");
        assert_eq!(ls.cpu_qos.as_ref().unwrap().enable, Some(false));
        assert_eq!(be.resctrl_qos.as_ref().unwrap().cat_range_end_percent, Some(30));
        assert_eq!(be.memory_qos.as_ref().unwrap().wmark_min_adj, Some(50));
        for s in [
            ResourceThresholdStrategy::defaults().validate(),
            CPUBurstStrategy::defaults().validate(),
            SystemStrategy::defaults().validate(),
            default_resource_qos().validate(),
        ] {
            assert_eq!(s, Ok(()));
        }
    }

    #[test]
    fn resource_qos_merges_deeply() {
        let cfg = parse::<ResourceQOSStrategy>(
            r#"{"clusterStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}"#,
        )
        .unwrap();
        let r = ResolvedStrategies::resolve(&cfg);
        let cpu = r.cluster.be_class.as_ref().unwrap().cpu_qos.as_ref().unwrap();
        assert_eq!(cpu.enable, Some(true));
        assert_eq!(cpu.group_identity, Some(-1), "sibling default kept");
    }

    #[test]
    fn errors_name_key_and_path() {
        let cases: Vec<(ConfigKeyError, &str, &str)> = vec![
            (
                parse::<ResourceThresholdStrategy>(r#"{"clusterStrategy":{"cpuSuppressThresholdPercent":120}}"#)
                    .unwrap_err(),
                "resource-threshold-config",
                "$.clusterStrategy.cpuSuppressThresholdPercent",
            ),
            (
                parse::<ResourceThresholdStrategy>(r#"{"nodeStrategies":[{},{"cpuSuppressPolicy":"cgroup"}]}"#)
                    .unwrap_err(),
                "resource-threshold-config",
                "$.nodeStrategies[1].cpuSuppressPolicy",
            ),
            (
                parse::<ResourceThresholdStrategy>(r#"{"nodeStrategies":[{"enable":"yes"}]}"#).unwrap_err(),
                "resource-threshold-config",
                "$.nodeStrategies[0].enable",
            ),
            (
                parse::<CPUBurstStrategy>(r#"{"clusterStrategy":{"policy":"always"}}"#).unwrap_err(),
                "cpu-burst-config",
                "$.clusterStrategy.policy",
            ),
            (
                parse::<SystemStrategy>(r#"{"clusterStrategy":{"watermarkScaleFactor":500}}"#).unwrap_err(),
                "system-config",
                "$.clusterStrategy.watermarkScaleFactor",
            ),
            (
                parse::<ResourceQOSStrategy>(r#"{"clusterStrategy":{"beClass":{"cpuQOS":{"groupIdentity":7}}}}"#)
                    .unwrap_err(),
                "resource-qos-config",
                "$.clusterStrategy.beClass.cpuQOS.groupIdentity",
            ),
            (
                parse::<ResourceThresholdStrategy>(
                    r#"{"nodeStrategies":[{"nodeSelector":{"matchExpressions":[{"key":"a","operator":"In"}]}}]}"#,
                )
                .unwrap_err(),
                "resource-threshold-config",
                "$.nodeStrategies[0].nodeSelector.matchExpressions[0].values",
            ),
        ];
        for (err, key, path) in cases {
            assert_eq!((err.key, err.path.as_str()), (key, path), "{err}");
        }
    }

    #[test]
    fn host_applications_by_node() {
        let data = BTreeMap::from([(
            "host-application-config".to_string(),
            r#"{"applications":[{"name":"nginx","priority":"koord-prod","qos":"LS"}],
                "nodeConfigs":[{"name":"db","nodeSelector":{"matchLabels":{"role":"db"}},
                                "applications":[{"name":"mysql","priority":"koord-prod"}]}]}"#
                .to_string(),
        )]);
        let cfg = parse_key::<HostApplicationCfg>(Some(&data)).unwrap().unwrap();
        assert_eq!(cfg.for_node(&labels(&[("role", "db")]))[0].name.as_deref(), Some("mysql"));
        assert_eq!(cfg.for_node(&labels(&[]))[0].name.as_deref(), Some("nginx"));
        let bad = BTreeMap::from([(
            "host-application-config".to_string(),
            r#"{"applications":[{"name":"x","priority":"urgent"}]}"#.to_string(),
        )]);
        let err = parse_key::<HostApplicationCfg>(Some(&bad)).unwrap_err();
        assert_eq!(err.path, "$.applications[0].priority");
    }
}
