//! What may wake an unschedulable pod ([`WakeOn`], recorded when no node
//! could take it) and what a round of cluster events may wake ([`Wakeup`],
//! built from the events and the plugins' queueing hints); the queue
//! matches the two.

use crate::framework::{EventKinds, NodeSet, QueueingHint};

/// A plugin of a profile, as the queue tells plugins apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PluginKey {
    /// The profile's index in the scheduler.
    pub profile: u16,
    /// The plugin's index in its profile.
    pub plugin: u16,
}

/// Why a pod was found unschedulable, as far as waking it goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeOn {
    /// The events registered by the rejecting plugins that give no
    /// queueing hints: any event of these kinds retries the pod.
    pub events: EventKinds,
    /// Per rejecting plugin that gives hints: the events it registered and
    /// the nodes it rejected the pod on.
    pub hinted: Vec<HintedRejection>,
}

/// The nodes a plugin that gives queueing hints rejected a pod on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HintedRejection {
    /// The plugin.
    pub plugin: PluginKey,
    /// The events it registered.
    pub events: EventKinds,
    /// The nodes.
    pub nodes: NodeSet,
}

impl WakeOn {
    /// Any event of these kinds retries the pod.
    pub fn any(events: EventKinds) -> WakeOn {
        WakeOn { events, hinted: Vec::new() }
    }

    /// Records that `plugin` rejected the pod on `node`: by node when the
    /// plugin gives hints (`hinted`), else by the events it registered.
    pub fn add(
        &mut self,
        plugin: PluginKey,
        events: EventKinds,
        hinted: bool,
        node: crate::framework::NodeId,
    ) {
        if !hinted {
            self.events |= events;
            return;
        }
        // A pod is rejected by a few plugins at most; the last one is the
        // likeliest (neighbouring nodes fail alike).
        let entry = match self.hinted.iter().rposition(|h| h.plugin == plugin) {
            Some(i) => &mut self.hinted[i],
            None => {
                self.hinted.push(HintedRejection { plugin, events, nodes: NodeSet::new() });
                let last = self.hinted.len() - 1;
                &mut self.hinted[last]
            }
        };
        entry.nodes.insert(node);
    }

    /// Every kind of event that may wake the pod (those of hinting plugins
    /// with their consent).
    pub fn interest(&self) -> EventKinds {
        self.hinted.iter().fold(self.events, |all, h| all | h.events)
    }
}

/// What a round of cluster events may wake: their kinds, and what the
/// plugins that give queueing hints said about them.
#[derive(Debug, Clone, Default)]
pub struct Wakeup {
    events: EventKinds,
    /// Per hinting plugin that said anything but `Skip`: `None` for "every
    /// pod it rejected", else the nodes where its rejections may no longer
    /// hold.
    hints: Vec<(PluginKey, Option<NodeSet>)>,
}

impl Wakeup {
    /// Events of these kinds, with no hint.
    pub fn of(events: EventKinds) -> Wakeup {
        Wakeup { events, hints: Vec::new() }
    }

    /// Forgets everything (keeping the memory).
    pub fn clear(&mut self) {
        self.events = EventKinds::NONE;
        self.hints.clear();
    }

    /// The kinds of the events so far.
    pub fn events(&self) -> EventKinds {
        self.events
    }

    /// Adds an event of `kind`.
    pub fn add_event(&mut self, kind: EventKinds) {
        self.events |= kind;
    }

    /// Adds what `plugin` said about one of the events.
    pub fn add_hint(&mut self, plugin: PluginKey, hint: QueueingHint) {
        let node = match hint {
            QueueingHint::Skip => return,
            QueueingHint::Queue => None,
            QueueingHint::QueueIfRejectedOn(node) => Some(node),
        };
        let i = match self.hints.iter().position(|(p, _)| *p == plugin) {
            Some(i) => i,
            None => {
                self.hints.push((plugin, Some(NodeSet::new())));
                self.hints.len() - 1
            }
        };
        let scope = &mut self.hints[i].1;
        match (node, scope.as_mut()) {
            (Some(node), Some(nodes)) => nodes.insert(node),
            (None, _) => *scope = None,
            (Some(_), None) => {}
        }
    }

    /// Whether these events may make a pod rejected as `on` says
    /// schedulable.
    pub fn wakes(&self, on: &WakeOn) -> bool {
        on.events.intersects(self.events)
            || on.hinted.iter().any(|rejected| {
                self.hints.iter().any(|(plugin, scope)| {
                    *plugin == rejected.plugin
                        && scope.as_ref().is_none_or(|nodes| nodes.intersects(&rejected.nodes))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::NodeId;

    const LOAD: PluginKey = PluginKey { profile: 0, plugin: 5 };
    const FIT: PluginKey = PluginKey { profile: 0, plugin: 4 };

    fn rejected_on(plugin: PluginKey, nodes: &[u32]) -> WakeOn {
        let mut on = WakeOn::default();
        for &n in nodes {
            on.add(plugin, EventKinds::NODE_METRIC, true, NodeId(n));
        }
        on
    }

    #[test]
    fn hints_wake_only_pods_rejected_where_they_point() {
        let on_b = rejected_on(LOAD, &[2]);
        let on_a_and_b = rejected_on(LOAD, &[1, 2]);
        let mut by_fit = WakeOn::default();
        by_fit.add(FIT, EventKinds::POD_DELETE, false, NodeId(1));
        // (what the round said, wakes [on B, on A and B, by Fit])
        let cases: [(&str, Wakeup, [bool; 3]); 5] = [
            ("nothing", Wakeup::of(EventKinds::NODE_METRIC), [false; 3]),
            (
                "metric of A",
                hinted(LOAD, QueueingHint::QueueIfRejectedOn(NodeId(1))),
                [false, true, false],
            ),
            (
                "metric of B",
                hinted(LOAD, QueueingHint::QueueIfRejectedOn(NodeId(2))),
                [true, true, false],
            ),
            ("a new node", hinted(LOAD, QueueingHint::Queue), [true, true, false]),
            ("another plugin's hint", hinted(FIT, QueueingHint::Queue), [false, false, false]),
        ];
        for (what, wakeup, want) in cases {
            let got = [&on_b, &on_a_and_b, &by_fit].map(|on| wakeup.wakes(on));
            assert_eq!(got, want, "{what}");
        }
        assert!(Wakeup::of(EventKinds::POD_DELETE).wakes(&by_fit), "unhinted plugins by kind");
        assert_eq!(on_b.interest(), EventKinds::NODE_METRIC);
        assert_eq!(by_fit.interest(), EventKinds::POD_DELETE);
    }

    #[test]
    fn queue_outweighs_nodes_and_skip_adds_nothing() {
        let mut wakeup = Wakeup::of(EventKinds::NODE_METRIC);
        wakeup.add_hint(LOAD, QueueingHint::Skip);
        assert!(!wakeup.wakes(&rejected_on(LOAD, &[7])));
        wakeup.add_hint(LOAD, QueueingHint::QueueIfRejectedOn(NodeId(1)));
        wakeup.add_hint(LOAD, QueueingHint::Queue);
        wakeup.add_hint(LOAD, QueueingHint::QueueIfRejectedOn(NodeId(3)));
        assert!(wakeup.wakes(&rejected_on(LOAD, &[7])));
    }

    fn hinted(plugin: PluginKey, hint: QueueingHint) -> Wakeup {
        let mut wakeup = Wakeup::of(EventKinds::NODE_METRIC);
        wakeup.add_hint(plugin, hint);
        wakeup
    }
}
