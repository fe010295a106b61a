//! Binding: the act side of a scheduling decision, behind a trait.
//!
//! The scheduler assumes a pod on its node at Reserve and hands a
//! [`BindRequest`] to a [`Binder`], which may take its time (an API call)
//! while the next cycles run. The binder reports the outcome through the
//! [`BindCompletion`] it was given; a failed bind makes the scheduler forget
//! the pod and retry it.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::mpsc::Sender;

/// A pod to bind to a node, with what must be written first.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BindRequest {
    /// `namespace/name`.
    pub pod: String,
    /// The pod's UID (binding a re-created pod of the same name must fail).
    pub uid: String,
    /// The node.
    pub node: String,
    /// Annotations to set on the pod before binding (PreBind plugins add
    /// them; e.g. `scheduling.koordinator.sh/resource-status`).
    pub annotations: BTreeMap<String, String>,
    /// What the request binds: a pod (almost always), or the placeholder
    /// pod of a scheduling object that is scheduled like a pod (a
    /// Reservation), whose binding is a status update of that object.
    pub target: BindTarget,
}

/// What a [`BindRequest`] binds. A Bind plugin that takes a placeholder
/// pod sets it; the binder must act on it (the kube binder writes the
/// object's status instead of creating a `pods/binding`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum BindTarget {
    /// The pod named by [`BindRequest::pod`] (the `pods/binding`
    /// subresource).
    #[default]
    Pod,
    /// The cluster-scoped `Reservation` `name`, scheduled as the reserve
    /// pod [`BindRequest::pod`]; binding it records the node in its status
    /// (see `crate::plugins::reservation` for what to write).
    Reservation {
        /// The reservation's name.
        name: String,
    },
}

/// How a bind ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindResult {
    /// The request.
    pub request: BindRequest,
    /// `Err` with the reason when binding failed.
    pub outcome: Result<(), String>,
}

/// Where a binder reports the outcome of one request.
#[derive(Debug)]
pub struct BindCompletion {
    request: BindRequest,
    sender: Sender<BindResult>,
}

impl BindCompletion {
    pub(crate) fn new(request: BindRequest, sender: Sender<BindResult>) -> BindCompletion {
        BindCompletion { request, sender }
    }

    /// The request this completion belongs to.
    pub fn request(&self) -> &BindRequest {
        &self.request
    }

    /// Reports the outcome. If the scheduler is gone, there is nobody left
    /// to tell, which is fine.
    pub fn finish(self, outcome: Result<(), String>) {
        let _ = self.sender.send(BindResult { request: self.request, outcome });
    }
}

/// Performs binds, possibly asynchronously.
pub trait Binder: Send + Sync {
    /// Starts binding `completion.request()`; reports through `completion`.
    fn bind(&self, completion: BindCompletion);
}

/// Binds instantly in memory and remembers every binding: for what-if runs,
/// benchmarks and tests.
#[derive(Debug, Default)]
pub struct InMemoryBinder {
    bound: Mutex<Vec<BindRequest>>,
}

impl InMemoryBinder {
    /// A binder with no bindings yet.
    pub fn new() -> InMemoryBinder {
        InMemoryBinder::default()
    }

    /// Every request bound so far, in order.
    pub fn bindings(&self) -> Vec<BindRequest> {
        self.bound.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Binder for InMemoryBinder {
    fn bind(&self, completion: BindCompletion) {
        self.bound.lock().unwrap_or_else(|p| p.into_inner()).push(completion.request().clone());
        completion.finish(Ok(()));
    }
}
