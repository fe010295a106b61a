//! The plugin's own pod filter: `evictableNamespaces` and `podSelectors`
//! (the evictor's filter is asked separately).

use kolo_core::HasMeta;
use kolo_core::selector::LabelSelector;
use kolo_scheduler::framework::PodInfo;

use super::args::{Error, LowNodeLoadArgs};

/// See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct PodFilter {
    include: Vec<String>,
    exclude: Vec<String>,
    selectors: Vec<LabelSelector>,
}

impl PodFilter {
    /// From the args (selectors without a selector are skipped, as in
    /// Koordinator).
    pub fn new(args: &LowNodeLoadArgs) -> Result<PodFilter, Error> {
        let ns = args.evictable_namespaces.clone().unwrap_or_default();
        let mut selectors = Vec::new();
        for (i, s) in args.pod_selectors.iter().enumerate() {
            if let Some(sel) = &s.selector {
                selectors.push(LabelSelector::compile(sel).map_err(|e| Error {
                    field: format!("podSelectors[{i}].selector"),
                    message: e.to_string(),
                })?);
            }
        }
        Ok(PodFilter { include: ns.include, exclude: ns.exclude, selectors })
    }

    /// Whether `pod` may be evicted by this plugin; `Err` says why not.
    pub fn check(&self, pod: &PodInfo) -> Result<(), String> {
        let view = pod.view();
        let ns = view.namespace();
        if !self.include.is_empty() && !self.include.iter().any(|n| n == ns) {
            return Err(format!("namespace {ns} is not in evictableNamespaces.include"));
        }
        if self.exclude.iter().any(|n| n == ns) {
            return Err(format!("namespace {ns} is in evictableNamespaces.exclude"));
        }
        if !self.selectors.is_empty()
            && !self.selectors.iter().any(|s| s.matches_with(|k| view.label(k)))
        {
            return Err("matches no podSelectors".to_owned());
        }
        Ok(())
    }
}
