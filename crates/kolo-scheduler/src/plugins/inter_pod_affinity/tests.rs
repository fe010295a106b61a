//! Table tests of the plugin through its extension points, many of them
//! kube-scheduler's own cases (`interpodaffinity/filtering_test.go`
//! `TestRequiredAffinitySingleNode` / `TestRequiredAffinityMultipleNodes`,
//! `scoring_test.go` `TestPreferredAffinity`), re-checked by hand.

use std::sync::Arc;

use super::*;
use crate::framework::{
    ClusterEvent, ClusterEventHandler, Code, CycleState, Filter, NodeId, NodeInfo, Plugin, PodInfo,
    PreFilter, PreFilterOutcome, PreScore, PreScoreOutcome, Score,
};
use crate::testing::{ctx, node_from_yaml, pod_from_yaml};

const AFF: &str = "node(s) didn't match pod affinity rules";
const ANTI: &str = "node(s) didn't match pod anti-affinity rules";
const EXISTING: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

/// A term: `{labelSelector: {matchExpressions: [exprs]}, topologyKey: key}`.
fn term(exprs: &str, key: &str) -> String {
    format!("{{labelSelector: {{matchExpressions: [{exprs}]}}, topologyKey: {key}}}")
}

/// A pod's `affinity`: required affinity, required anti-affinity,
/// preferred affinity and preferred anti-affinity terms.
#[derive(Default)]
struct Aff {
    req: Vec<String>,
    anti: Vec<String>,
    pref: Vec<(i32, String)>,
    pref_anti: Vec<(i32, String)>,
}

impl Aff {
    fn yaml(&self) -> String {
        let weighted = |list: &[(i32, String)]| {
            let items: Vec<String> = list
                .iter()
                .map(|(w, t)| format!("{{weight: {w}, podAffinityTerm: {t}}}"))
                .collect();
            items.join(", ")
        };
        format!(
            "{{podAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}], preferredDuringSchedulingIgnoredDuringExecution: [{}]}}, podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{}], preferredDuringSchedulingIgnoredDuringExecution: [{}]}}}}",
            self.req.join(", "),
            weighted(&self.pref),
            self.anti.join(", "),
            weighted(&self.pref_anti),
        )
    }
}

fn pod(name: &str, namespace: &str, labels: &str, aff: Option<&Aff>) -> PodInfo {
    let affinity = aff.map(|a| format!("  affinity: {}\n", a.yaml())).unwrap_or_default();
    PodInfo::new(pod_from_yaml(&format!(
        "metadata: {{name: {name}, namespace: {namespace}, uid: u-{name}, labels: {{{labels}}}}}\nspec:\n  containers: []\n{affinity}"
    )))
    .unwrap()
}

fn node(i: usize, name: &str, labels: &str) -> NodeInfo {
    let node = node_from_yaml(&format!("metadata: {{name: {name}, labels: {{{labels}}}}}"));
    let view = kolo_core::node::NodeView::from_node(&node).unwrap();
    NodeInfo::new(NodeId(i as u32), Arc::new(node), view)
}

/// A plugin that has seen `nodes` and `pods` (each on the node of that
/// index).
struct World {
    plugin: InterPodAffinity,
    nodes: Vec<NodeInfo>,
}

impl World {
    fn new(nodes: &[(&str, &str)], pods: &[(usize, PodInfo)]) -> World {
        World::with_args(InterPodAffinityArgs::default(), nodes, pods)
    }

    fn with_args(
        args: InterPodAffinityArgs,
        nodes: &[(&str, &str)],
        pods: &[(usize, PodInfo)],
    ) -> World {
        let plugin = InterPodAffinity::new(args).unwrap();
        let nodes: Vec<NodeInfo> =
            nodes.iter().enumerate().map(|(i, (n, l))| node(i, n, l)).collect();
        for n in &nodes {
            plugin.on_event(&ClusterEvent::NodeAdded(n));
        }
        for (i, p) in pods {
            plugin.on_event(&ClusterEvent::PodAdded {
                pod: p,
                node: &nodes[*i],
                assumed: false,
                at: kolo_core::clock::Timestamp::UNIX_EPOCH,
            });
        }
        World { plugin, nodes }
    }

    /// Each node's Filter verdict: `Ok(())` or the reason (PreFilter's
    /// Skip passes every node).
    fn filter(&self, pod: &PodInfo) -> Vec<Result<(), String>> {
        let mut state = CycleState::new();
        match self.plugin.pre_filter(&ctx(), &mut state, pod) {
            PreFilterOutcome::Skip => return vec![Ok(()); self.nodes.len()],
            PreFilterOutcome::Reject(r) => {
                return vec![Err(r.reason.into_owned()); self.nodes.len()];
            }
            PreFilterOutcome::Proceed => {}
        }
        let verdicts: Vec<Result<(), String>> = self
            .nodes
            .iter()
            .map(|n| self.plugin.filter(&ctx(), &state, pod, n).map_err(|r| r.reason.into_owned()))
            .collect();
        // Filter without PreFilter's state decides the same.
        let fresh = CycleState::new();
        for (n, v) in self.nodes.iter().zip(&verdicts) {
            let again =
                self.plugin.filter(&ctx(), &fresh, pod, n).map_err(|r| r.reason.into_owned());
            assert_eq!(&again, v, "{}", n.name());
        }
        verdicts
    }

    /// Raw and normalized scores of every node, `None` if PreScore skips.
    fn score(&self, pod: &PodInfo) -> Option<(Vec<i64>, Vec<i64>)> {
        let mut state = CycleState::new();
        if self.plugin.pre_score(&ctx(), &mut state, pod) == PreScoreOutcome::Skip {
            return None;
        }
        let raw: Vec<i64> =
            self.nodes.iter().map(|n| self.plugin.score(&ctx(), &state, pod, n)).collect();
        let mut normalized = raw.clone();
        let nodes: Vec<&NodeInfo> = self.nodes.iter().collect();
        self.plugin.normalize(&ctx(), &state, pod, &nodes, &mut normalized);
        Some((raw, normalized))
    }
}

fn ok(n: usize) -> Vec<Result<(), String>> {
    vec![Ok(()); n]
}

fn err(reason: &str) -> Result<(), String> {
    Err(reason.to_string())
}

const SECURITY_S1: &str = "security: S1";
const NODE1: (&str, &str) = ("node1", "region: r1, zone: z11, kubernetes.io/hostname: node1");

/// kube-scheduler `TestRequiredAffinitySingleNode`: one node (region r1,
/// zone z11), the existing pod there labelled `service: securityscan`
/// unless the case says otherwise.
#[test]
fn required_affinity_single_node_kube_cases() {
    let in_ = |vals: &str| format!("{{key: service, operator: In, values: [{vals}]}}");
    let existing = |aff: Option<&Aff>| pod("existing", "default", "service: securityscan", aff);
    type Case = (&'static str, Aff, Option<Aff>, Result<(), String>);
    let cases: Vec<Case> = vec![
        ("no rules", Aff::default(), None, Ok(())),
        (
            "In matches the existing pod",
            Aff { req: vec![term(&in_("securityscan, value2"), "region")], ..Aff::default() },
            None,
            Ok(()),
        ),
        (
            "NotIn matches the existing pod",
            Aff {
                req: vec![term(
                    "{key: service, operator: NotIn, values: [securityscan3, value3]}",
                    "region",
                )],
                ..Aff::default()
            },
            None,
            Ok(()),
        ),
        (
            "unmatching labelSelector",
            Aff { req: vec![term(&in_("antivirusscan, value2"), "region")], ..Aff::default() },
            None,
            err(AFF),
        ),
        (
            "different operators in multiple terms",
            Aff {
                req: vec![
                    term(
                        "{key: service, operator: Exists}, {key: wrongkey, operator: DoesNotExist}",
                        "region",
                    ),
                    term(
                        &format!(
                            "{}, {{key: service, operator: NotIn, values: [WrongValue]}}",
                            in_("securityscan")
                        ),
                        "region",
                    ),
                ],
                ..Aff::default()
            },
            None,
            Ok(()),
        ),
        (
            "matchExpressions are ANDed",
            Aff {
                req: vec![term(
                    &format!("{{key: service, operator: Exists}}, {}", in_("WrongValue")),
                    "region",
                )],
                ..Aff::default()
            },
            None,
            err(AFF),
        ),
        (
            "affinity and anti-affinity both satisfied",
            Aff {
                req: vec![term(&in_("securityscan, value2"), "region")],
                anti: vec![term(&in_("antivirusscan, value2"), "node")],
                ..Aff::default()
            },
            None,
            Ok(()),
        ),
        (
            "affinity satisfied, anti-affinity not",
            Aff {
                req: vec![term(&in_("securityscan, value2"), "region")],
                anti: vec![term(&in_("securityscan, value2"), "zone")],
                ..Aff::default()
            },
            None,
            err(ANTI),
        ),
        (
            "the existing pod's anti-affinity selects the incoming pod",
            Aff { req: vec![term(&in_("securityscan, value2"), "region")], ..Aff::default() },
            Some(Aff { anti: vec![term(&in_("securityscan, value2"), "zone")], ..Aff::default() }),
            err(EXISTING),
        ),
        (
            "the existing pod's anti-affinity does not select the incoming pod",
            Aff::default(),
            Some(Aff {
                anti: vec![term(
                    "{key: service, operator: NotIn, values: [securityscan, value2]}",
                    "zone",
                )],
                ..Aff::default()
            }),
            Ok(()),
        ),
        (
            "symmetry alone rejects a pod without rules",
            Aff::default(),
            Some(Aff { anti: vec![term(&in_("securityscan, value2"), "zone")], ..Aff::default() }),
            err(EXISTING),
        ),
        (
            // The existing pod's domain key is missing on the node: no
            // domain, no conflict.
            "existing anti-affinity on a key the node lacks",
            Aff::default(),
            Some(Aff { anti: vec![term(&in_("securityscan"), "rack")], ..Aff::default() }),
            Ok(()),
        ),
    ];
    for (name, aff, existing_aff, want) in cases {
        let world = World::new(&[NODE1], &[(0, existing(existing_aff.as_ref()))]);
        let incoming = pod("p", "default", "service: securityscan", Some(&aff));
        assert_eq!(world.filter(&incoming), vec![want], "{name}");
    }
    // kube: "Does not satisfy the PodAffinity with labelSelector because of
    // diff Namespace".
    let world = World::new(&[NODE1], &[(0, existing(None))]);
    let diff_ns = Aff {
        req: vec![format!(
            "{{labelSelector: {{matchExpressions: [{}]}}, namespaces: [DiffNameSpace], topologyKey: region}}",
            in_("securityscan")
        )],
        ..Aff::default()
    };
    assert_eq!(world.filter(&pod("p", "default", "", Some(&diff_ns))), vec![err(AFF)]);
}

/// kube-scheduler `TestRequiredAffinityMultipleNodes`, and the first pod of
/// a series.
#[test]
fn required_affinity_multiple_nodes_kube_cases() {
    let nodes = [
        ("nodeA", "region: r1, zone: z11, hostname: nodeA"),
        ("nodeB", "region: r1, zone: z12, hostname: nodeB"),
        ("nodeC", "region: r2, zone: z21, hostname: nodeC"),
    ];
    let foo_bar = "{key: foo, operator: In, values: [bar]}";
    let by_zone = Aff { req: vec![term(foo_bar, "region")], ..Aff::default() };
    // An existing pod matching the affinity on nodeA: nodeA and nodeB share
    // the region.
    let world = World::new(&nodes, &[(0, pod("e", "default", "foo: bar", None))]);
    assert_eq!(
        world.filter(&pod("p", "default", "", Some(&by_zone))),
        vec![Ok(()), Ok(()), err(AFF)]
    );

    // The first of a series: no pod matches anywhere and the pod matches
    // its own term: every node (with the key).
    let world = World::new(&nodes, &[]);
    let same_zone = Aff { req: vec![term(foo_bar, "zone")], ..Aff::default() };
    assert_eq!(world.filter(&pod("p", "default", "foo: bar", Some(&same_zone))), ok(3));
    // ... but not when it does not match its own term.
    assert_eq!(world.filter(&pod("p", "default", "foo: baz", Some(&same_zone))), vec![err(AFF); 3]);
    // ... and a node without the topology key fails even then.
    let world = World::new(&[nodes[0], ("bare", "region: r1")], &[]);
    assert_eq!(
        world.filter(&pod("p", "default", "foo: bar", Some(&same_zone))),
        vec![Ok(()), err(AFF)]
    );

    // Two terms: a pod counts only if it matches both (kube: "firstly check
    // if all affinityTerms match ... on the same pod"). Pods matching one
    // term each leave the counts empty; the incoming pod matches both, so
    // it is the first of its series.
    let two = Aff {
        req: vec![
            term(foo_bar, "region"),
            term("{key: service, operator: In, values: [securityscan]}", "zone"),
        ],
        ..Aff::default()
    };
    let world = World::new(
        &nodes,
        &[
            (0, pod("e1", "default", "foo: bar", None)),
            (1, pod("e2", "default", "service: securityscan", None)),
        ],
    );
    assert_eq!(
        world.filter(&pod("p", "default", "foo: bar, service: securityscan", Some(&two))),
        ok(3)
    );
    assert_eq!(world.filter(&pod("p", "default", "foo: bar", Some(&two))), vec![err(AFF); 3]);
    // One pod matching both on nodeA: only nodeA's zone and region.
    let world =
        World::new(&nodes, &[(0, pod("e", "default", "foo: bar, service: securityscan", None))]);
    assert_eq!(
        world.filter(&pod("p", "default", "", Some(&two))),
        vec![Ok(()), err(AFF), err(AFF)]
    );

    // Anti-affinity by region: a pod on nodeA rules out nodeA and nodeB;
    // one in another namespace does not count.
    let abc = "{key: foo, operator: In, values: [abc]}";
    let anti = Aff { anti: vec![term(abc, "region")], ..Aff::default() };
    let world = World::new(
        &nodes,
        &[(0, pod("e", "default", "foo: abc", None)), (2, pod("f", "other", "foo: abc", None))],
    );
    assert_eq!(
        world.filter(&pod("p", "default", "", Some(&anti))),
        vec![err(ANTI), err(ANTI), Ok(())]
    );
    // Nodes lacking the topology key pass anti-affinity.
    let world = World::new(
        &[("nodeA", "region: r1"), ("nodeB", "zone: z")],
        &[(0, pod("e", "default", "foo: abc", None))],
    );
    assert_eq!(world.filter(&pod("p", "default", "", Some(&anti))), vec![err(ANTI), Ok(())]);
    // Any term of the anti-affinity that selects a pod rejects (kube: "anti-
    // affinity matches a pod when any term matches").
    let any = Aff { anti: vec![term(abc, "zone"), term(foo_bar, "zone")], ..Aff::default() };
    let world = World::new(&nodes, &[(1, pod("e", "default", "foo: bar", None))]);
    assert_eq!(world.filter(&pod("p", "default", "", Some(&any))), vec![Ok(()), err(ANTI), Ok(())]);

    // Existing pods' anti-affinity, both of theirs over all three nodes
    // (kube: "incoming pod wouldn't be considered as a fit as it violates
    // each existingPod's terms on all nodes").
    let sel = |k: &str| format!("{{key: {k}, operator: Exists}}");
    let world = World::new(
        &nodes,
        &[
            (
                0,
                pod(
                    "e1",
                    "default",
                    "",
                    Some(&Aff { anti: vec![term(&sel("foo"), "zone")], ..Aff::default() }),
                ),
            ),
            (
                1,
                pod(
                    "e2",
                    "default",
                    "",
                    Some(&Aff { anti: vec![term(&sel("foo"), "region")], ..Aff::default() }),
                ),
            ),
            (
                2,
                pod(
                    "e3",
                    "default",
                    "",
                    Some(&Aff { anti: vec![term(&sel("bar"), "zone")], ..Aff::default() }),
                ),
            ),
        ],
    );
    assert_eq!(world.filter(&pod("p", "default", "foo: x, bar: y", None)), vec![err(EXISTING); 3]);
    // Only foo: e1 (zone z11) and e2 (region r1) forbid nodeA and nodeB.
    assert_eq!(
        world.filter(&pod("p", "default", "foo: x", None)),
        vec![err(EXISTING), err(EXISTING), Ok(())]
    );
}

#[test]
fn unsupported_fields_are_refused_at_prefilter() {
    let world = World::new(&[NODE1], &[]);
    let p = PodInfo::new(pod_from_yaml(
        "metadata: {name: p, namespace: default}\nspec:\n  containers: []\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: zone, labelSelector: {}, namespaceSelector: {matchLabels: {team: a}}}\n",
    ))
    .unwrap();
    let mut state = CycleState::new();
    let PreFilterOutcome::Reject(r) = world.plugin.pre_filter(&ctx(), &mut state, &p) else {
        panic!("not refused");
    };
    assert_eq!(r.code, Code::UnschedulableAndUnresolvable);
    assert_eq!(
        r.reason,
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector is not supported"
    );
    // `namespaceSelector: {}` is every namespace: a pod in another
    // namespace is selected.
    let world = World::new(&[NODE1], &[(0, pod("e", "other", "app: x", None))]);
    let all = PodInfo::new(pod_from_yaml(
        "metadata: {name: p, namespace: default}\nspec:\n  containers: []\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: zone, labelSelector: {}, namespaceSelector: {}}\n",
    ))
    .unwrap();
    assert_eq!(world.filter(&all), vec![err(ANTI)]);
}

#[test]
fn rejection_codes_are_kubes() {
    let world = World::new(&[NODE1], &[(0, pod("e", "default", "a: b", None))]);
    let mut state = CycleState::new();
    let aff =
        Aff { req: vec![term("{key: a, operator: In, values: [zzz]}", "zone")], ..Aff::default() };
    let p = pod("p", "default", "", Some(&aff));
    assert_eq!(world.plugin.pre_filter(&ctx(), &mut state, &p), PreFilterOutcome::Proceed);
    let r = world.plugin.filter(&ctx(), &state, &p, &world.nodes[0]).unwrap_err();
    assert_eq!(r.code, Code::UnschedulableAndUnresolvable);
    let anti = Aff { anti: vec![term("{key: a, operator: Exists}", "zone")], ..Aff::default() };
    let p = pod("p", "default", "", Some(&anti));
    assert_eq!(world.plugin.pre_filter(&ctx(), &mut state, &p), PreFilterOutcome::Proceed);
    let r = world.plugin.filter(&ctx(), &state, &p, &world.nodes[0]).unwrap_err();
    assert_eq!(r.code, Code::Unschedulable);
}

const CHINA: &str = "region: China";
const INDIA: &str = "region: India";
const AZ1: &str = "az: az1";

fn s1(weight: i32, key: &str) -> (i32, String) {
    (weight, term("{key: security, operator: In, values: [S1]}", key))
}

/// kube-scheduler `TestPreferredAffinity`.
#[test]
fn preferred_affinity_kube_cases() {
    let nodes = [("node1", CHINA), ("node2", INDIA), ("node3", AZ1)];
    let incoming = |aff: &Aff| pod("p", "default", SECURITY_S1, Some(aff));
    // "all machines are same priority as Affinity is nil": nothing to score.
    let world = World::new(&nodes, &[]);
    assert_eq!(world.score(&pod("p", "default", SECURITY_S1, None)), None);
    // "Affinity: pod that matches topology key & pods in nodes will get
    // high score comparing to others which doesn't match either pods in
    // nodes or in topology key".
    let stay = Aff { pref: vec![s1(5, "region")], ..Aff::default() };
    let world = World::new(
        &nodes,
        &[
            (0, pod("a", "default", SECURITY_S1, None)),
            (1, pod("b", "default", "security: S2", None)),
            (2, pod("c", "default", SECURITY_S1, None)),
        ],
    );
    assert_eq!(world.score(&incoming(&stay)), Some((vec![5, 0, 0], vec![100, 0, 0])));
    // "All the nodes that have the same topology key & label value with one
    // of them has an existing pod that match the affinity rules, have the
    // same score".
    let same = [("node1", CHINA), ("node2", INDIA), ("node3", CHINA)];
    let world = World::new(&same, &[(0, pod("a", "default", SECURITY_S1, None))]);
    assert_eq!(world.score(&incoming(&stay)), Some((vec![5, 0, 5], vec![100, 0, 100])));
    // "Anti Affinity: pod that does not match existing pods in node will
    // get high score".
    let avoid = Aff { pref_anti: vec![s1(5, "region")], ..Aff::default() };
    let world = World::new(
        &[("node1", CHINA), ("node2", INDIA)],
        &[
            (0, pod("a", "default", SECURITY_S1, None)),
            (1, pod("b", "default", "security: S2", None)),
        ],
    );
    assert_eq!(world.score(&incoming(&avoid)), Some((vec![-5, 0], vec![0, 100])));
    // More matches in a region score higher: two S1 pods in China (one on
    // node1, one on node3), one in India; weight 5: 10, 5, 10 → 100, 0, 100.
    let world = World::new(
        &same,
        &[
            (0, pod("a", "default", SECURITY_S1, None)),
            (1, pod("b", "default", SECURITY_S1, None)),
            (2, pod("c", "default", SECURITY_S1, None)),
        ],
    );
    assert_eq!(world.score(&incoming(&stay)), Some((vec![10, 5, 10], vec![100, 0, 100])));
}

/// Mixed terms and symmetry, hand-checked.
#[test]
fn symmetric_and_mixed_scores() {
    let nodes = [
        ("n1", "region: A, zone: a1"),
        ("n2", "region: A, zone: a2"),
        ("n3", "region: B, zone: b1"),
        ("n4", "zone: x"),
    ];
    // Existing: e1 on n1 with required affinity to S1 by region (hard
    // weight applies), e2 on n3 with preferred anti-affinity (weight 3) to
    // S1 by zone, e3 on n2 labelled app: db.
    let e1 =
        pod("e1", "default", "", Some(&Aff { req: vec![s1(0, "region").1], ..Aff::default() }));
    let e2 =
        pod("e2", "default", "", Some(&Aff { pref_anti: vec![s1(3, "zone")], ..Aff::default() }));
    let e3 = pod("e3", "default", "app: db", None);
    let pods = [(0, e1), (2, e2), (1, e3)];
    // Incoming S1 pod, preferring app: db by zone with weight 7.
    let aff = Aff {
        pref: vec![(7, term("{key: app, operator: In, values: [db]}", "zone"))],
        ..Aff::default()
    };
    let p = pod("p", "default", SECURITY_S1, Some(&aff));
    // n1: region A +1 (e1 hard) = 1; n2: region A +1, zone a2 +7 = 8;
    // n3: zone b1 −3 = −3; n4: 0. Min −3, max 8, diff 11:
    // n1 100·4/11 = 36, n2 100, n3 0, n4 100·3/11 = 27.
    let world = World::new(&nodes, &pods);
    assert_eq!(world.score(&p), Some((vec![1, 8, -3, 0], vec![36, 100, 0, 27])));
    // Hard weight 10: n1 10, n2 17, n3 −3, n4 0 → diff 20: 65, 100, 0, 15.
    let args =
        InterPodAffinityArgs { hard_pod_affinity_weight: 10, ..InterPodAffinityArgs::default() };
    let world = World::with_args(args, &nodes, &pods);
    assert_eq!(world.score(&p), Some((vec![10, 17, -3, 0], vec![65, 100, 0, 15])));
    // Hard weight 0 and a pod without terms: only e2's preference, −3 on n3.
    let args =
        InterPodAffinityArgs { hard_pod_affinity_weight: 0, ..InterPodAffinityArgs::default() };
    let world = World::with_args(args, &nodes, &pods);
    let plain = pod("q", "default", SECURITY_S1, None);
    assert_eq!(world.score(&plain), Some((vec![0, 0, -3, 0], vec![100, 100, 0, 100])));
    // ... unless existing pods' preferred terms are ignored.
    let args = InterPodAffinityArgs {
        ignore_preferred_terms_of_existing_pods: true,
        ..InterPodAffinityArgs::default()
    };
    assert_eq!(World::with_args(args, &nodes, &pods).score(&plain), None);
    // Nothing selects an unlabelled pod in another namespace: skip.
    let world = World::new(&nodes, &pods);
    assert_eq!(world.score(&pod("r", "other", SECURITY_S1, None)), None);
}

#[test]
fn state_follows_events_and_trivially_passes() {
    let nodes = [("n1", "zone: a"), ("n2", "zone: b")];
    let mut world = World::new(&nodes, &[]);
    let plain = pod("p", "default", "app: web", None);
    assert!(world.plugin.trivially_passes(&plain));
    let anti = Aff {
        anti: vec![term("{key: app, operator: In, values: [web]}", "zone")],
        ..Aff::default()
    };
    let web = pod("w", "default", "app: web", Some(&anti));
    assert!(!world.plugin.trivially_passes(&web));
    let add = |p: &PodInfo, n: usize, assumed: bool| {
        world.plugin.on_event(&ClusterEvent::PodAdded {
            pod: p,
            node: &world.nodes[n],
            assumed,
            at: kolo_core::clock::Timestamp::UNIX_EPOCH,
        })
    };
    // An assumed pod counts; once a pod with terms is placed, nothing is
    // trivial any more.
    add(&web, 0, true);
    assert!(!world.plugin.trivially_passes(&plain));
    assert_eq!(world.filter(&plain), vec![err(EXISTING), Ok(())]);
    // Confirmed bound on the other node (upsert by key): counted once, there.
    add(&web, 1, false);
    assert_eq!(world.filter(&plain), vec![Ok(()), err(EXISTING)]);
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &web, node: NodeId(1) });
    assert_eq!(world.filter(&plain), ok(2));
    assert!(world.plugin.trivially_passes(&plain));
    // A node's labels change: its pods move domain.
    add(&pod("e", "default", "app: web", None), 0, false);
    assert_eq!(world.filter(&web), vec![err(ANTI), Ok(())]);
    world.nodes[0] = node(0, "n1", "zone: b");
    world.plugin.on_event(&ClusterEvent::NodeUpdated(&world.nodes[0]));
    // Node n2 (zone b) now shares the domain of the pod on n1 (looked up
    // with n1's new labels).
    assert_eq!(world.filter(&web)[1], err(ANTI));
    world.plugin.on_event(&ClusterEvent::PodRemoved {
        pod: &pod("e", "default", "", None),
        node: NodeId(0),
    });
    world.plugin.on_event(&ClusterEvent::NodeRemoved { id: NodeId(0), name: "n1" });
    assert_eq!(world.filter(&web), ok(2));
}

#[test]
fn args_are_checked() {
    let build = |v: serde_json::Value| InterPodAffinity::build(Some(&v)).map(|_| ());
    assert!(build(serde_json::json!({"hardPodAffinityWeight": 100})).is_ok());
    assert!(
        build(serde_json::json!({"kind": "InterPodAffinityArgs", "hardPodAffinityWeight": 0}))
            .is_ok()
    );
    let e = build(serde_json::json!({"hardPodAffinityWeight": 101})).unwrap_err();
    assert_eq!(e.field, "hardPodAffinityWeight");
    assert_eq!(e.to_string(), "hardPodAffinityWeight: must be in the range 0-100, got 101");
    let e = build(serde_json::json!({"hardPodAffinityWeight": -1})).unwrap_err();
    assert_eq!(e.field, "hardPodAffinityWeight");
    let e = build(serde_json::json!({"hardPodAffinityWeight": "x"})).unwrap_err();
    assert_eq!(e.field, "hardPodAffinityWeight");
    assert!(build(serde_json::json!({"unknown": 1})).is_err());
    assert!(InterPodAffinity::build(None).is_ok());
}

#[test]
fn alike_pods_are_counted_one_by_one() {
    // Replicas share a group (same namespace, labels and terms); each
    // counts where it runs, and removing one leaves the others.
    let nodes = [("n1", "zone: a"), ("n2", "zone: b"), ("n3", "zone: c")];
    let repel = Aff {
        anti: vec![term("{key: app, operator: In, values: [web]}", "zone")],
        ..Aff::default()
    };
    let replica = |name: &str| pod(name, "default", "app: web", Some(&repel));
    let mut world =
        World::new(&nodes, &[(0, replica("w1")), (1, replica("w2")), (1, replica("w3"))]);
    let plain = pod("p", "default", "app: web", None);
    assert_eq!(world.filter(&plain), vec![err(EXISTING), err(EXISTING), Ok(())]);
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &replica("w2"), node: NodeId(1) });
    assert_eq!(world.filter(&plain), vec![err(EXISTING), err(EXISTING), Ok(())]);
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &replica("w3"), node: NodeId(1) });
    assert_eq!(world.filter(&plain), vec![err(EXISTING), Ok(()), Ok(())]);
    // n1 moves to zone c: its replica now repels from zone c.
    world.nodes[0] = node(0, "n1", "zone: c");
    world.plugin.on_event(&ClusterEvent::NodeUpdated(&world.nodes[0]));
    assert_eq!(world.filter(&plain), vec![err(EXISTING), Ok(()), err(EXISTING)]);
    // Removing a pod twice, or one never seen, changes nothing.
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &replica("w3"), node: NodeId(1) });
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &replica("zz"), node: NodeId(1) });
    assert_eq!(world.filter(&plain), vec![err(EXISTING), Ok(()), err(EXISTING)]);
    world.plugin.on_event(&ClusterEvent::PodRemoved { pod: &replica("w1"), node: NodeId(0) });
    assert!(world.plugin.trivially_passes(&plain));
}
