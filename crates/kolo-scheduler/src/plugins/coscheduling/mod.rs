//! `Coscheduling` (gang scheduling, spec §8): the members of a gang — at
//! least its minMember pods — are bound together or not at all, and a gang
//! that cannot complete holds no room longer than its wait.
//!
//! * [`args`]: `CoschedulingArgs`, with the reference's JSON names;
//! * [`gang`]: which gang a pod names and a gang's rules, read from its
//!   PodGroup or from its first pod's annotations (pure);
//! * [`state`]: the gangs' members (pending, waiting, binding, bound), the
//!   groups' shared state and the decisions of PreFilter, Permit,
//!   Unreserve, PostFilter and PreBind (pure);
//! * [`status`]: the PodGroup status controller's phase machine (pure);
//! * [`facts`]: what the plugin knew of a pod's gang, for explanations;
//! * [`plugin`]: the framework adapter. It is also the default QueueSort:
//!   priority, then the gang's time, then the gang, then the pod's time,
//!   so a gang's members follow one another; a pod in no gang sorts as
//!   with PrioritySort.
//!
//! Deliberate differences from Koordinator (listed in
//! `docs/compatibility.md`):
//!
//! * **No representative pod, no `NextPod` pulling.** Members are queued
//!   one by one, kept together by the queue order; kube's PreEnqueue
//!   checks run at PreFilter. A failed Strict attempt makes the members not
//!   tried in it fail fast (with the failure's message) instead of
//!   Koordinator's per-gang schedule cycles.
//! * **A gang's wait is per member**: each member waits its gang's wait
//!   time from its own Permit, and the first to time out fails the attempt
//!   (Strict); Koordinator does the same through kube's waiting pods.
//! * **Bound means seen bound**: a member counts as bound (and satisfies
//!   its group once) when the scheduler sees it with a node, not at
//!   PostBind.
//! * **The queue key orders gangs of equal time by a hash of the gang id**,
//!   not by the id's text.
//! * **`groups` always contains the gang itself**; an unreadable `groups`
//!   (or other invalid annotation) falls back to the default and is noted
//!   with its field.
//! * **No gang-aware preemption** (`enablePreemption` is accepted and
//!   ignored: DefaultPreemption preempts for members one by one) and no
//!   network-topology awareness (`awareNetworkTopology` ignored).
//! * **PostFilter runs only after Filter**: a member refused at PreFilter
//!   by another plugin (a quota) fails its attempt when its waiting
//!   members time out, not at once.

//!
//! Known limitation (as in Koordinator): a NonStrict gang that cannot
//! complete keeps taking room member by member, each for up to its wait,
//! and, queued first, may starve a younger gang that would fit; Strict
//! gangs release at once and are shown not to deadlock
//! (`tests/coscheduling.rs`, `strict_gangs_do_not_deadlock`).

pub mod args;
pub mod facts;
pub mod gang;
pub mod plugin;
pub mod state;
pub mod status;

pub use args::{CoschedulingArgs, MatchPolicy};
pub use plugin::{Coscheduling, NAME};
