//! What an extension point says about a pod: success, or a rejection with a
//! reason a person can act on.

use std::borrow::Cow;
use std::fmt;

use kolo_core::resources::ResourceName;

/// The kind of a rejection, as kube-scheduler's status codes (serialized
/// as their names: `"UnschedulableAndUnresolvable"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Code {
    /// The pod does not fit now, but may after the cluster changes (another
    /// pod leaves, usage drops): preemption or a retry may help.
    Unschedulable,
    /// The pod can never fit this node as it stands (a label, a taint, a
    /// topology it cannot use): retrying without a node change is pointless.
    UnschedulableAndUnresolvable,
    /// Something is wrong with the input or the plugin (a malformed object);
    /// the pod is retried with backoff.
    Error,
}

impl Code {
    /// Whether the pod may fit after some change (everything but
    /// [`Code::UnschedulableAndUnresolvable`]).
    pub fn is_resolvable(self) -> bool {
        self != Code::UnschedulableAndUnresolvable
    }
}

/// Why a plugin said no.
///
/// `reason` is the short, stable text that failure summaries group by
/// (`Insufficient batch-cpu`, `node(s) cpu usage exceed threshold`); `detail`
/// is the per-node specifics (`cpu usage 71% > 65%`), shown when a user asks
/// for every node's verdict. Reasons are usually `'static` and details are
/// kept as data ([`Detail`]), so rejecting thousands of nodes formats
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The kind of rejection.
    pub code: Code,
    /// The short reason summaries group by.
    pub reason: Cow<'static, str>,
    /// Per-node specifics, if any.
    pub detail: Option<Detail>,
}

/// A rejection's per-node specifics, kept as data and formatted only when
/// shown: Filter rejects most nodes of a full cluster for every pod it
/// tries, and formatting each node's amounts was most of the scheduler's
/// allocations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// Free text.
    Text(Box<str>),
    /// The resources the node is short of: (resource, requested, free).
    Short(Box<[(ResourceName, i64, i64)]>),
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Detail::Text(text) => f.write_str(text),
            Detail::Short(shortages) => {
                for (i, (name, requested, free)) in shortages.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: requested {requested}, free {free}", name.short_name())?;
                }
                Ok(())
            }
        }
    }
}

impl Rejection {
    /// An [`Code::Unschedulable`] rejection.
    pub fn unschedulable(reason: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection { code: Code::Unschedulable, reason: reason.into(), detail: None }
    }

    /// An [`Code::UnschedulableAndUnresolvable`] rejection.
    pub fn unresolvable(reason: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection { code: Code::UnschedulableAndUnresolvable, reason: reason.into(), detail: None }
    }

    /// An [`Code::Error`] rejection.
    pub fn error(reason: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection { code: Code::Error, reason: reason.into(), detail: None }
    }

    /// The same rejection with per-node specifics.
    pub fn with_detail(mut self, detail: impl Into<Box<str>>) -> Rejection {
        self.detail = Some(Detail::Text(detail.into()));
        self
    }

    /// The same rejection naming the resources the node is short of:
    /// (resource, requested, free).
    pub fn with_shortages(mut self, shortages: Box<[(ResourceName, i64, i64)]>) -> Rejection {
        self.detail = Some(Detail::Short(shortages));
        self
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        Ok(())
    }
}

/// What a plugin answered for one node: `Ok(())` to pass it.
pub type Verdict = Result<(), Rejection>;
