//! Facts: what a plugin's decisions for a pod rested on, as typed data,
//! for explanations (`kolo schedule -o json`).
//!
//! The framework knows no plugin, so it carries each plugin's facts as an
//! opaque [`Facts`] value of the plugin's own type: serialized as that type
//! (its fields are documented with it), and read back as that type with
//! [`Facts::downcast_ref`]. Facts are gathered only when the scheduler is
//! asked to ([`Scheduler::set_facts`](crate::scheduler::Scheduler::set_facts)),
//! never on the scheduling path.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};

use super::{CycleContext, CycleState, NodeInfo, PodInfo};

/// One plugin's facts: a value of the plugin's own type.
#[derive(Clone)]
pub struct Facts(Arc<dyn FactsValue>);

/// What a facts type must offer: its JSON form and a way back to it.
trait FactsValue: Any + Send + Sync + fmt::Debug {
    fn to_json(&self) -> serde_json::Value;
}

impl<T: Serialize + fmt::Debug + Send + Sync + 'static> FactsValue for T {
    fn to_json(&self) -> serde_json::Value {
        // The facts types are plain structs of numbers, strings and maps
        // keyed by strings, which always serialize.
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Facts {
    /// Wraps a plugin's facts.
    pub fn new<T: Serialize + fmt::Debug + Send + Sync + 'static>(value: T) -> Facts {
        Facts(Arc::new(value))
    }

    /// The facts as their own type, if they are a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        let any: &dyn Any = &*self.0;
        any.downcast_ref()
    }

    /// The facts' JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        self.0.to_json()
    }
}

impl fmt::Debug for Facts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Two facts are equal when they serialize alike.
impl PartialEq for Facts {
    fn eq(&self, other: &Facts) -> bool {
        self.to_json() == other.to_json()
    }
}

impl Eq for Facts {}

impl Serialize for Facts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// Reports, as [`Facts`], what a plugin's decisions for a pod rested on
/// (`None` by default: nothing to say).
pub trait ReportFacts: Send + Sync {
    /// Facts about the pod: what the plugin made of it in this cycle (e.g.
    /// its estimated usage) and, once the pod has passed PreBind on `node`,
    /// what the plugin decided for it there (e.g. its cpuset).
    fn pod_facts(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: Option<&NodeInfo>,
    ) -> Option<Facts> {
        None
    }

    /// Facts about a node as the plugin judged it for the pod (e.g. its
    /// usage and thresholds), before the pod is placed anywhere.
    fn node_facts(
        &self,
        _ctx: &CycleContext,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
    ) -> Option<Facts> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, PartialEq)]
    struct Demo {
        cpu: i64,
    }

    #[test]
    fn facts_keep_their_type_and_serialize_as_it() {
        let facts = Facts::new(Demo { cpu: 3400 });
        assert_eq!(facts.downcast_ref::<Demo>(), Some(&Demo { cpu: 3400 }));
        assert_eq!(facts.downcast_ref::<i64>(), None);
        assert_eq!(serde_json::to_string(&facts).unwrap(), r#"{"cpu":3400}"#);
        assert_eq!(facts, Facts::new(Demo { cpu: 3400 }));
        assert_ne!(facts, Facts::new(Demo { cpu: 1 }));
        assert_eq!(format!("{facts:?}"), "Demo { cpu: 3400 }");
    }
}
