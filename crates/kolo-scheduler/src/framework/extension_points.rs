//! Which extension points a plugin implements, as typed handles to it.
//!
//! A plugin says once, when its profile is built, which extension points it
//! implements: `ExtensionPoints::of(self).pre_filter().filter().score()`.
//! Each method only compiles for a plugin that implements that point's
//! trait, and returns a handle of the point's own type, so a profile keeps
//! typed lists per point and never looks a plugin up at run time.

use std::sync::Arc;

use super::{
    Bind, ClusterEventHandler, Filter, NodeScopedHints, Permit, PostFilter, PreBind, PreFilter,
    PreScore, PreemptionGuard, QueueSort, QueueingHints, ReportFacts, Reserve, Score,
};

/// A plugin's extension points: for each, the plugin as that point's trait,
/// or `None` when it does not implement it. Built with
/// [`ExtensionPoints::of`].
#[derive(Clone, Default)]
pub struct ExtensionPoints {
    pub(crate) queue_sort: Option<Arc<dyn QueueSort>>,
    pub(crate) pre_filter: Option<Arc<dyn PreFilter>>,
    pub(crate) filter: Option<Arc<dyn Filter>>,
    pub(crate) post_filter: Option<Arc<dyn PostFilter>>,
    pub(crate) pre_score: Option<Arc<dyn PreScore>>,
    pub(crate) score: Option<Arc<dyn Score>>,
    pub(crate) reserve: Option<Arc<dyn Reserve>>,
    pub(crate) permit: Option<Arc<dyn Permit>>,
    pub(crate) pre_bind: Option<Arc<dyn PreBind>>,
    pub(crate) bind: Option<Arc<dyn Bind>>,
    pub(crate) event_handler: Option<Arc<dyn ClusterEventHandler>>,
    pub(crate) queueing_hints: Option<Arc<dyn QueueingHints>>,
    pub(crate) report_facts: Option<Arc<dyn ReportFacts>>,
    pub(crate) preemption_guard: Option<Arc<dyn PreemptionGuard>>,
}

impl ExtensionPoints {
    /// Starts the list for `plugin`: none yet.
    pub fn of<P: Send + Sync + 'static>(plugin: Arc<P>) -> ExtensionPointsOf<P> {
        ExtensionPointsOf { plugin, points: ExtensionPoints::default() }
    }
}

/// [`ExtensionPoints`] being listed for the plugin `P`; turns into them with
/// `.into()`.
pub struct ExtensionPointsOf<P> {
    plugin: Arc<P>,
    points: ExtensionPoints,
}

impl<P> ExtensionPointsOf<P> {
    /// Gives [`NodeScopedHints`]: the plugin's verdict on a node reads
    /// nothing but that node.
    pub fn node_scoped_hints(mut self) -> Self {
        self.points.queueing_hints = Some(Arc::new(NodeScopedHints));
        self
    }
}

impl<P> From<ExtensionPointsOf<P>> for ExtensionPoints {
    fn from(of: ExtensionPointsOf<P>) -> ExtensionPoints {
        of.points
    }
}

/// One adder per extension point: `fn filter(self) -> Self where P: Filter`.
macro_rules! adders {
    ($($field:ident: $point:ident),* $(,)?) => {
        impl<P: Send + Sync + 'static> ExtensionPointsOf<P> {
            $(
                #[doc = concat!("Adds the plugin as a [`", stringify!($point), "`] plugin.")]
                pub fn $field(mut self) -> Self
                where
                    P: $point,
                {
                    self.points.$field = Some(self.plugin.clone());
                    self
                }
            )*
        }
    };
}

adders!(
    queue_sort: QueueSort,
    pre_filter: PreFilter,
    filter: Filter,
    post_filter: PostFilter,
    pre_score: PreScore,
    score: Score,
    reserve: Reserve,
    permit: Permit,
    pre_bind: PreBind,
    bind: Bind,
    event_handler: ClusterEventHandler,
    queueing_hints: QueueingHints,
    report_facts: ReportFacts,
    preemption_guard: PreemptionGuard,
);
