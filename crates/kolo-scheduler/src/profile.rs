//! A profile built from configuration: the plugin instances and, per
//! extension point, which of them run and in what order.

use std::collections::BTreeMap;

use crate::config::{ConfigError, PluginSet, ProfileConfig};
use crate::framework::{Plugin, QueueSort};
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

/// The extension points, in the order a cycle runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Point {
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
    const ALL: [Point; 10] = [
        Point::QueueSort,
        Point::PreFilter,
        Point::Filter,
        Point::PostFilter,
        Point::PreScore,
        Point::Score,
        Point::Reserve,
        Point::Permit,
        Point::PreBind,
        Point::Bind,
    ];

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

    fn implemented_by(self, plugin: &mut dyn Plugin) -> bool {
        match self {
            Point::QueueSort => plugin.as_queue_sort().is_some(),
            Point::PreFilter => plugin.as_pre_filter().is_some(),
            Point::Filter => plugin.as_filter().is_some(),
            Point::PostFilter => plugin.as_post_filter().is_some(),
            Point::PreScore => plugin.as_pre_score().is_some(),
            Point::Score => plugin.as_score().is_some(),
            Point::Reserve => plugin.as_reserve().is_some(),
            Point::Permit => plugin.as_permit().is_some(),
            Point::PreBind => plugin.as_pre_bind().is_some(),
            Point::Bind => plugin.as_bind().is_some(),
        }
    }
}

/// A plugin enabled at a point: (name, weight, named explicitly there).
type Enabled = (String, i64, bool);

/// A built profile.
pub struct Profile {
    scheduler_name: String,
    pub(crate) plugins: Vec<Box<dyn Plugin>>,
    pub(crate) queue_sort: usize,
    pub(crate) pre_filter: Vec<usize>,
    pub(crate) filter: Vec<usize>,
    pub(crate) post_filter: Vec<usize>,
    pub(crate) pre_score: Vec<usize>,
    /// (plugin, weight)
    pub(crate) score: Vec<(usize, i64)>,
    pub(crate) reserve: Vec<usize>,
    pub(crate) permit: Vec<usize>,
    pub(crate) pre_bind: Vec<usize>,
    pub(crate) bind: Vec<usize>,
    pub(crate) event_handlers: Vec<usize>,
    /// Every Filter and Score plugin supports the equivalence cache.
    pub(crate) equivalence: bool,
    /// Every Filter and Score plugin says a node update changes its results
    /// for that node only: the equivalence cache then keeps the other
    /// nodes' results.
    pub(crate) local_node_updates: bool,
    /// The Filter and Score plugins (each once), for `valid_until`.
    pub(crate) filter_and_score: Vec<usize>,
}

impl Profile {
    /// Builds a profile: the defaults, changed by the configuration, with
    /// plugin args from `pluginConfig`.
    pub fn build(
        registry: &Registry,
        config: &ProfileConfig,
        defaults: &[DefaultPlugin],
    ) -> Result<Profile, ConfigError> {
        let profile = &config.scheduler_name;
        let args: BTreeMap<&str, &serde_json::Value> = config
            .plugin_config
            .iter()
            .filter_map(|c| c.args.as_ref().map(|a| (c.name.as_str(), a)))
            .collect();
        let mut built = Instances { plugins: Vec::new(), by_name: BTreeMap::new() };
        for c in &config.plugin_config {
            if registry.get(&c.name).is_none() {
                built.instance(registry, profile, &args, &c.name)?;
            }
        }

        // Per point: (plugin name, weight, explicitly enabled here).
        let multi = &config.plugins.multi_point;
        let mut lists: Vec<(Point, Vec<Enabled>)> = Vec::new();
        for point in Point::ALL {
            let set = point.set(config);
            let all_disabled = |s: &PluginSet| s.disabled.iter().any(|d| d.name == "*");
            let disabled = |s: &PluginSet, name: &str| s.disabled.iter().any(|d| d.name == name);
            let mut list: Vec<(String, i64, bool)> = Vec::new();
            let push = |list: &mut Vec<(String, i64, bool)>, name: &str, weight, explicit| {
                if let Some(entry) = list.iter_mut().find(|(n, _, _)| n == name) {
                    entry.1 = weight;
                    entry.2 |= explicit;
                } else {
                    list.push((name.to_string(), weight, explicit));
                }
            };
            if !all_disabled(multi) && !all_disabled(set) {
                for d in defaults {
                    if !disabled(multi, d.name) && !disabled(set, d.name) {
                        push(&mut list, d.name, d.weight, false);
                    }
                }
            }
            for r in &multi.enabled {
                if !disabled(set, &r.name) {
                    let weight =
                        r.weight.or_else(|| default_weight(defaults, &r.name)).unwrap_or(1);
                    push(&mut list, &r.name, weight, false);
                }
            }
            for r in &set.enabled {
                let weight = r.weight.or_else(|| default_weight(defaults, &r.name)).unwrap_or(1);
                push(&mut list, &r.name, weight, true);
            }
            lists.push((point, list));
        }

        let mut points: BTreeMap<&'static str, Vec<(usize, i64)>> = BTreeMap::new();
        for (point, list) in lists {
            let mut chosen = Vec::new();
            for (name, weight, explicit) in list {
                let i = built.instance(registry, profile, &args, &name)?;
                if point.implemented_by(built.plugins[i].as_mut()) {
                    chosen.push((i, weight));
                } else if explicit {
                    return Err(ConfigError::NotImplemented {
                        profile: profile.clone(),
                        plugin: name,
                        point: point.json_name(),
                    });
                }
            }
            points.insert(point.json_name(), chosen);
        }
        let mut take = |point: Point| points.remove(point.json_name()).unwrap_or_default();
        let only_index = |v: Vec<(usize, i64)>| v.into_iter().map(|(i, _)| i).collect::<Vec<_>>();
        let queue_sort = only_index(take(Point::QueueSort));
        let queue_sort = match queue_sort.as_slice() {
            [one] => *one,
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
        let bind = only_index(take(Point::Bind));
        if bind.is_empty() {
            return Err(ConfigError::Invalid {
                field: format!("profile {profile}: plugins.bind"),
                message: "at least one Bind plugin must be enabled".into(),
            });
        }
        let mut plugins = built.plugins;
        let event_handlers =
            (0..plugins.len()).filter(|&i| plugins[i].as_event_handler().is_some()).collect();
        let filter = only_index(take(Point::Filter));
        let score = take(Point::Score);
        let mut filter_and_score: Vec<usize> =
            filter.iter().copied().chain(score.iter().map(|(i, _)| *i)).collect();
        filter_and_score.sort_unstable();
        filter_and_score.dedup();
        let equivalence = filter_and_score.iter().all(|&i| plugins[i].supports_equivalence());
        let local_node_updates =
            filter_and_score.iter().all(|&i| plugins[i].node_updates_are_local());
        Ok(Profile {
            scheduler_name: profile.clone(),
            equivalence,
            local_node_updates,
            filter_and_score,
            queue_sort,
            pre_filter: only_index(take(Point::PreFilter)),
            filter,
            post_filter: only_index(take(Point::PostFilter)),
            pre_score: only_index(take(Point::PreScore)),
            score,
            reserve: only_index(take(Point::Reserve)),
            permit: only_index(take(Point::Permit)),
            pre_bind: only_index(take(Point::PreBind)),
            bind,
            event_handlers,
            plugins,
        })
    }

    /// The scheduler name pods select this profile with.
    pub fn scheduler_name(&self) -> &str {
        &self.scheduler_name
    }

    /// The profile's QueueSort plugin.
    pub fn queue_sort(&self) -> &dyn QueueSort {
        self.plugins[self.queue_sort].as_queue_sort().expect("checked at build")
    }

    /// The name of the plugin at `index`.
    pub fn plugin_name(&self, index: usize) -> &'static str {
        self.plugins[index].name()
    }

    /// The Filter plugins, in order.
    pub fn filter_plugins(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.filter.iter().map(|&i| self.plugins[i].name())
    }

    /// The Score plugins with their weights, in order.
    pub fn score_plugins(&self) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        self.score.iter().map(|&(i, w)| (self.plugins[i].name(), w))
    }
}

/// The plugin instances of a profile being built, one per name.
struct Instances {
    plugins: Vec<Box<dyn Plugin>>,
    by_name: BTreeMap<String, usize>,
}

impl Instances {
    /// The instance of `name`, created on first use with its args.
    fn instance(
        &mut self,
        registry: &Registry,
        profile: &str,
        args: &BTreeMap<&str, &serde_json::Value>,
        name: &str,
    ) -> Result<usize, ConfigError> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        let factory = registry.get(name).ok_or_else(|| ConfigError::UnknownPlugin {
            profile: profile.to_string(),
            name: name.to_string(),
            known: registry.names().collect::<Vec<_>>().join(", "),
        })?;
        let plugin = factory(args.get(name).copied()).map_err(|error| ConfigError::Args {
            profile: profile.to_string(),
            plugin: name.to_string(),
            error,
        })?;
        self.plugins.push(plugin);
        self.by_name.insert(name.to_string(), self.plugins.len() - 1);
        Ok(self.plugins.len() - 1)
    }
}

fn default_weight(defaults: &[DefaultPlugin], name: &str) -> Option<i64> {
    defaults.iter().find(|d| d.name == name).map(|d| d.weight)
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
