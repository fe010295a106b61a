//! A profile built from configuration: the plugin instances and, per
//! extension point, the ones that run there, in order, each as that
//! point's trait — so a cycle never looks a plugin up and cannot find it
//! missing.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::{ConfigError, PluginSet, ProfileConfig};
use crate::framework::{
    Bind, ClusterEventHandler, EventKinds, ExtensionPoints, Filter, Permit, Plugin, PodInfo,
    PostFilter, PreBind, PreFilter, PreScore, PreemptionGuard, QueueSort, QueueingHints,
    ReportFacts, Reserve, Score,
};
use crate::registry::Registry;

/// A plugin a profile enables unless configured otherwise, with its
/// default score weight.
#[derive(Debug, Clone, Copy)]
pub struct DefaultPlugin {
    /// Registered name.
    pub name: &'static str,
    /// Score weight when the plugin scores.
    pub weight: i64,
}

/// The configurable extension points, in the order a cycle runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
}

impl Point {
    fn json_name(self) -> &'static str {
        match self {
            Point::QueueSort => "queueSort",
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
        }
    }

    fn set(self, config: &ProfileConfig) -> &PluginSet {
        let p = &config.plugins;
        match self {
            Point::QueueSort => &p.queue_sort,
            Point::PreFilter => &p.pre_filter,
            Point::Filter => &p.filter,
            Point::PostFilter => &p.post_filter,
            Point::PreScore => &p.pre_score,
            Point::Score => &p.score,
            Point::Reserve => &p.reserve,
            Point::Permit => &p.permit,
            Point::PreBind => &p.pre_bind,
            Point::Bind => &p.bind,
        }
    }
}

/// A plugin enabled at an extension point: its index in the profile (what
/// rejections and reports name it by) and the plugin as that point's
/// trait.
pub(crate) struct Enabled<T: ?Sized> {
    /// Its index in [`Profile::plugins`].
    pub index: usize,
    /// The plugin, as this point's trait.
    pub plugin: Arc<T>,
}

/// A built profile.
pub struct Profile {
    scheduler_name: String,
    /// Every plugin instance, by index.
    pub(crate) plugins: Vec<Arc<dyn Plugin>>,
    pub(crate) queue_sort: Arc<dyn QueueSort>,
    pub(crate) pre_filter: Vec<Enabled<dyn PreFilter>>,
    pub(crate) filter: Vec<Enabled<dyn Filter>>,
    pub(crate) post_filter: Vec<Enabled<dyn PostFilter>>,
    pub(crate) pre_score: Vec<Enabled<dyn PreScore>>,
    /// With their weights.
    pub(crate) score: Vec<(Enabled<dyn Score>, i64)>,
    pub(crate) reserve: Vec<Enabled<dyn Reserve>>,
    pub(crate) permit: Vec<Enabled<dyn Permit>>,
    pub(crate) pre_bind: Vec<Enabled<dyn PreBind>>,
    pub(crate) bind: Vec<Enabled<dyn Bind>>,
    /// Every instance that keeps state in step with cluster events.
    pub(crate) event_handlers: Vec<Arc<dyn ClusterEventHandler>>,
    /// Every instance that may veto preemption victims.
    pub(crate) preemption_guards: Vec<Arc<dyn PreemptionGuard>>,
    /// Per plugin index: its queueing hints, if it gives any.
    pub(crate) hints: Vec<Option<Arc<dyn QueueingHints>>>,
    /// Per plugin index: the events it registered.
    pub(crate) registered: Vec<EventKinds>,
    /// Every instance that reports facts.
    pub(crate) facts: Vec<Enabled<dyn ReportFacts>>,
    /// The Filter and Score plugins that do not support the equivalence
    /// cache: the cache serves a pod only when each of them
    /// [trivially passes](Plugin::trivially_passes) it.
    pub(crate) no_equivalence: Vec<Arc<dyn Plugin>>,
    /// Every Filter and Score plugin that supports the equivalence cache
    /// says a node update changes its results for that node only: the
    /// equivalence cache then keeps the other nodes' results.
    pub(crate) local_node_updates: bool,
    /// The Filter and Score plugins (each once), for `valid_until`.
    pub(crate) filter_and_score: Vec<Arc<dyn Plugin>>,
}

impl Profile {
    /// Builds a profile: the defaults, changed by the configuration, with
    /// plugin args from `pluginConfig`.
    pub fn build(
        registry: &Registry,
        config: &ProfileConfig,
        defaults: &[DefaultPlugin],
    ) -> Result<Profile, ConfigError> {
        let mut built = Instances::new(registry, config);
        for c in &config.plugin_config {
            if registry.get(&c.name).is_none() {
                built.instance(&c.name)?;
            }
        }
        let at = |point| (point, chosen(config, point, defaults));
        let queue_sort = built.enabled(at(Point::QueueSort), |p| p.queue_sort.clone())?;
        let pre_filter = built.enabled(at(Point::PreFilter), |p| p.pre_filter.clone())?;
        let filter = built.enabled(at(Point::Filter), |p| p.filter.clone())?;
        let post_filter = built.enabled(at(Point::PostFilter), |p| p.post_filter.clone())?;
        let pre_score = built.enabled(at(Point::PreScore), |p| p.pre_score.clone())?;
        let score = built.enabled(at(Point::Score), |p| p.score.clone())?;
        let reserve = built.enabled(at(Point::Reserve), |p| p.reserve.clone())?;
        let permit = built.enabled(at(Point::Permit), |p| p.permit.clone())?;
        let pre_bind = built.enabled(at(Point::PreBind), |p| p.pre_bind.clone())?;
        let bind = built.enabled(at(Point::Bind), |p| p.bind.clone())?;

        let profile = &config.scheduler_name;
        let queue_sort = match queue_sort.as_slice() {
            [(one, _)] => one.plugin.clone(),
            other => {
                return Err(ConfigError::Invalid {
                    field: format!("profile {profile}: plugins.queueSort"),
                    message: format!(
                        "exactly one QueueSort plugin must be enabled, found {}",
                        other.len()
                    ),
                });
            }
        };
        if bind.is_empty() {
            return Err(ConfigError::Invalid {
                field: format!("profile {profile}: plugins.bind"),
                message: "at least one Bind plugin must be enabled".into(),
            });
        }
        let mut scoring: Vec<usize> =
            filter.iter().map(|(e, _)| e.index).chain(score.iter().map(|(e, _)| e.index)).collect();
        scoring.sort_unstable();
        scoring.dedup();
        let filter_and_score: Vec<Arc<dyn Plugin>> =
            scoring.iter().map(|&i| built.plugins[i].clone()).collect();
        let points = &built.points;
        Ok(Profile {
            scheduler_name: profile.clone(),
            no_equivalence: filter_and_score
                .iter()
                .filter(|p| !p.supports_equivalence())
                .cloned()
                .collect(),
            // A plugin without equivalence support has its results cached
            // only for pods it trivially passes, results no node update
            // changes: only the others decide.
            local_node_updates: filter_and_score
                .iter()
                .filter(|p| p.supports_equivalence())
                .all(|p| p.node_updates_are_local()),
            filter_and_score,
            queue_sort,
            pre_filter: without_weights(pre_filter),
            filter: without_weights(filter),
            post_filter: without_weights(post_filter),
            pre_score: without_weights(pre_score),
            score,
            reserve: without_weights(reserve),
            permit: without_weights(permit),
            pre_bind: without_weights(pre_bind),
            bind: without_weights(bind),
            event_handlers: points.iter().filter_map(|p| p.event_handler.clone()).collect(),
            preemption_guards: points.iter().filter_map(|p| p.preemption_guard.clone()).collect(),
            hints: points.iter().map(|p| p.queueing_hints.clone()).collect(),
            registered: built.plugins.iter().map(|p| p.events_to_register()).collect(),
            facts: (0..points.len())
                .filter_map(|index| {
                    let plugin = points[index].report_facts.clone()?;
                    Some(Enabled { index, plugin })
                })
                .collect(),
            plugins: built.plugins,
        })
    }

    /// Whether the equivalence cache may serve `pod`: every Filter and
    /// Score plugin supports it, or passes this pod trivially.
    pub(crate) fn equivalence_for(&self, pod: &PodInfo) -> bool {
        self.no_equivalence.iter().all(|p| p.trivially_passes(pod))
    }

    /// The sum of the Filter and Score plugins' cross-node epochs
    /// ([`Plugin::cross_node_epoch`]): each only grows, so the sum moves
    /// whenever any of them does.
    pub(crate) fn cross_node_epoch(&self) -> u64 {
        self.filter_and_score.iter().fold(0u64, |sum, p| sum.wrapping_add(p.cross_node_epoch()))
    }

    /// The scheduler name pods select this profile with.
    pub fn scheduler_name(&self) -> &str {
        &self.scheduler_name
    }

    /// The profile's QueueSort plugin.
    pub fn queue_sort(&self) -> &dyn QueueSort {
        &*self.queue_sort
    }

    /// The name of the plugin at `index`.
    pub fn plugin_name(&self, index: usize) -> &'static str {
        self.plugins[index].name()
    }

    /// The Filter plugins, in order.
    pub fn filter_plugins(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.filter.iter().map(|e| self.plugin_name(e.index))
    }

    /// The Score plugins with their weights, in order.
    pub fn score_plugins(&self) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        self.score.iter().map(|(e, w)| (self.plugin_name(e.index), *w))
    }
}

fn without_weights<T: ?Sized>(list: Vec<(Enabled<T>, i64)>) -> Vec<Enabled<T>> {
    list.into_iter().map(|(e, _)| e).collect()
}

/// A plugin chosen for an extension point by the defaults and the
/// configuration.
struct Chosen {
    name: String,
    weight: i64,
    /// Named at this very point (not only by the defaults or `multiPoint`):
    /// it must implement the point.
    explicit: bool,
}

/// The plugins chosen for `point`, in order: the defaults not disabled,
/// then `multiPoint`'s, then the point's own (a later mention of a plugin
/// sets its weight).
fn chosen(config: &ProfileConfig, point: Point, defaults: &[DefaultPlugin]) -> Vec<Chosen> {
    let multi = &config.plugins.multi_point;
    let set = point.set(config);
    let all_disabled = |s: &PluginSet| s.disabled.iter().any(|d| d.name == "*");
    let disabled = |s: &PluginSet, name: &str| s.disabled.iter().any(|d| d.name == name);
    let default_weight =
        |name: &str| defaults.iter().find(|d| d.name == name).map(|d| d.weight).unwrap_or(1);
    let mut list: Vec<Chosen> = Vec::new();
    let mut push = |name: &str, weight, explicit| {
        if let Some(entry) = list.iter_mut().find(|c| c.name == name) {
            entry.weight = weight;
            entry.explicit |= explicit;
        } else {
            list.push(Chosen { name: name.to_string(), weight, explicit });
        }
    };
    if !all_disabled(multi) && !all_disabled(set) {
        for d in defaults {
            if !disabled(multi, d.name) && !disabled(set, d.name) {
                push(d.name, d.weight, false);
            }
        }
    }
    for r in &multi.enabled {
        if !disabled(set, &r.name) {
            push(&r.name, r.weight.unwrap_or_else(|| default_weight(&r.name)), false);
        }
    }
    for r in &set.enabled {
        push(&r.name, r.weight.unwrap_or_else(|| default_weight(&r.name)), true);
    }
    list
}

/// The plugin instances of a profile being built, one per name, with the
/// extension points each implements.
struct Instances<'a> {
    registry: &'a Registry,
    config: &'a ProfileConfig,
    plugins: Vec<Arc<dyn Plugin>>,
    points: Vec<ExtensionPoints>,
    by_name: BTreeMap<String, usize>,
}

impl<'a> Instances<'a> {
    fn new(registry: &'a Registry, config: &'a ProfileConfig) -> Instances<'a> {
        Instances {
            registry,
            config,
            plugins: Vec::new(),
            points: Vec::new(),
            by_name: BTreeMap::new(),
        }
    }

    /// The index of `name`'s instance, created on first use with its args.
    fn instance(&mut self, name: &str) -> Result<usize, ConfigError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        let profile = &self.config.scheduler_name;
        let factory = self.registry.get(name).ok_or_else(|| ConfigError::UnknownPlugin {
            profile: profile.clone(),
            name: name.to_string(),
            known: self.registry.names().collect::<Vec<_>>().join(", "),
        })?;
        // Of two `pluginConfig` entries with args for one plugin, the last.
        let args = self.config.plugin_config.iter().rev().find_map(|c| match &c.args {
            Some(args) if c.name == name => Some(args),
            _ => None,
        });
        let plugin = factory(args).map_err(|error| ConfigError::Args {
            profile: profile.clone(),
            plugin: name.to_string(),
            error,
        })?;
        self.points.push(plugin.clone().extension_points());
        self.plugins.push(plugin);
        self.by_name.insert(name.to_string(), self.plugins.len() - 1);
        Ok(self.plugins.len() - 1)
    }

    /// The plugins chosen for a point that implement it, as its trait, with
    /// their weights. One named explicitly at the point that does not
    /// implement it is an error; one chosen by default or by `multiPoint`
    /// is left out.
    fn enabled<T: ?Sized>(
        &mut self,
        (point, chosen): (Point, Vec<Chosen>),
        get: impl Fn(&ExtensionPoints) -> Option<Arc<T>>,
    ) -> Result<Vec<(Enabled<T>, i64)>, ConfigError> {
        let mut list = Vec::new();
        for c in chosen {
            let index = self.instance(&c.name)?;
            match get(&self.points[index]) {
                Some(plugin) => list.push((Enabled { index, plugin }, c.weight)),
                None if c.explicit => {
                    return Err(ConfigError::NotImplemented {
                        profile: self.config.scheduler_name.clone(),
                        plugin: c.name,
                        point: point.json_name(),
                    });
                }
                None => {}
            }
        }
        Ok(list)
    }
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("scheduler_name", &self.scheduler_name)
            .field("plugins", &self.plugins.iter().map(|p| p.name()).collect::<Vec<_>>())
            .field("filter", &self.filter_plugins().collect::<Vec<_>>())
            .field("score", &self.score_plugins().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SchedulerConfig;
    use crate::plugins::{DEFAULT_PLUGINS, registry};

    fn build(yaml: &str) -> Result<Profile, ConfigError> {
        let config = SchedulerConfig::from_yaml(yaml).unwrap();
        Profile::build(&registry(), &config.profiles()[0], DEFAULT_PLUGINS)
    }

    #[test]
    fn points_hold_the_plugins_that_implement_them_in_order() {
        let profile = build("{}").unwrap();
        let filters: Vec<_> = profile.filter_plugins().collect();
        assert_eq!(
            filters,
            [
                "NodeUnschedulable",
                "NodeName",
                "NodeAffinity",
                "TaintToleration",
                "NodePorts",
                "InterPodAffinity",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "VolumeBinding",
                "VolumeZone",
                "LoadAwareScheduling",
                "NodeNUMAResource",
                "PodTopologySpread",
                "Reservation",
                "ElasticQuota"
            ]
        );
        let scores: Vec<_> = profile.score_plugins().collect();
        assert_eq!(
            scores,
            [
                ("NodeAffinity", 2),
                ("TaintToleration", 3),
                ("InterPodAffinity", 2),
                ("NodeResourcesFit", 1),
                ("LoadAwareScheduling", 1),
                ("NodeNUMAResource", 1),
                ("PodTopologySpread", 2),
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
                ("Reservation", 5000)
            ]
        );
        let names = |list: &[Enabled<dyn Reserve>]| -> Vec<&str> {
            list.iter().map(|e| profile.plugin_name(e.index)).collect()
        };
        assert_eq!(
            names(&profile.reserve),
            ["Coscheduling", "NodeNUMAResource", "Reservation", "ElasticQuota"]
        );
        // Every in-tree Filter plugin but InterPodAffinity,
        // PodTopologySpread, ElasticQuota (their verdicts read other nodes'
        // pods), Reservation (its Filter runs only for pods that must
        // use a reservation) and the three volume plugins (their verdicts
        // read claims and volumes; their events are few) gives queueing
        // hints; QueueSort and Bind plugins give none.
        let hinting: Vec<&str> = (0..profile.plugins.len())
            .filter(|&i| profile.hints[i].is_some())
            .map(|i| profile.plugin_name(i))
            .collect();
        assert_eq!(hinting.len(), filters.len() - 7, "{hinting:?}");
        assert!(!hinting.contains(&"InterPodAffinity"));
        // The seven opt out of the equivalence cache (it serves the pods
        // they trivially pass); their results are cached only for those
        // pods, which no node update changes: node updates stay local.
        let no_equivalence: Vec<&str> = profile.no_equivalence.iter().map(|p| p.name()).collect();
        assert_eq!(
            no_equivalence,
            [
                "InterPodAffinity",
                "VolumeRestrictions",
                "VolumeBinding",
                "VolumeZone",
                "PodTopologySpread",
                "Reservation",
                "ElasticQuota"
            ]
        );
        assert!(profile.local_node_updates);
    }

    #[test]
    fn points_a_plugin_cannot_serve_are_refused_at_build() {
        // (config, the error's text)
        let cases = [
            (
                "profiles:\n- plugins:\n    filter:\n      enabled: [{name: PrioritySort}]\n",
                "profile kolo-scheduler: plugin PrioritySort does not implement filter",
            ),
            (
                "profiles:\n- plugins:\n    queueSort:\n      disabled: [{name: '*'}]\n",
                "scheduler config: profile kolo-scheduler: plugins.queueSort: exactly one QueueSort plugin must be enabled, found 0",
            ),
            (
                "profiles:\n- plugins:\n    bind:\n      disabled: [{name: '*'}]\n",
                "scheduler config: profile kolo-scheduler: plugins.bind: at least one Bind plugin must be enabled",
            ),
        ];
        for (yaml, want) in cases {
            let got = build(yaml).map(|_| ()).unwrap_err().to_string();
            assert_eq!(got, want, "{yaml}");
        }
        // A plugin only `multiPoint` names is left out where it cannot
        // serve: DefaultBinder is no Filter.
        let profile = build(
            "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: DefaultBinder}]\n",
        )
        .unwrap();
        assert!(!profile.filter_plugins().any(|p| p == "DefaultBinder"));
    }
}
