//! DefaultBinder: binds every pod through the scheduler's binder (the
//! `pods/binding` subresource in a cluster).

use crate::binder::BindRequest;
use std::sync::Arc;

use crate::framework::{
    Bind, BindOutcome, CycleContext, CycleState, ExtensionPoints, NodeInfo, Plugin, PodInfo,
};
use crate::registry::PluginArgsError;

/// The plugin's registered name.
pub const NAME: &str = "DefaultBinder";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct DefaultBinder;

impl DefaultBinder {
    /// Builds the plugin (it takes no arguments).
    pub fn build(_args: Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, PluginArgsError> {
        Ok(Arc::new(DefaultBinder))
    }
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }
    fn extension_points(self: Arc<Self>) -> ExtensionPoints {
        ExtensionPoints::of(self).bind().into()
    }
}

impl Bind for DefaultBinder {
    fn bind(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _request: &mut BindRequest,
    ) -> BindOutcome {
        BindOutcome::Handled
    }
}
