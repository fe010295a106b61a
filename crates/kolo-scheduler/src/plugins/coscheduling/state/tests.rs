use super::*;
use crate::plugins::coscheduling::gang::group_id;

fn spec(id: &str, min: u32, mode: GangMode, policy: MatchPolicy, groups: &[&str]) -> Defined {
    let mut groups: Vec<Box<str>> = groups.iter().map(|g| (*g).into()).collect();
    groups.push(id.into());
    groups.sort();
    groups.dedup();
    Defined {
        spec: GangSpec {
            id: id.into(),
            min_member: min,
            total: min,
            mode,
            match_policy: policy,
            wait_time: Duration::from_secs(30),
            group_id: group_id(&groups),
            groups,
            created: Some(1),
        },
        notes: Vec::new(),
    }
}

fn strict(id: &str, min: u32) -> Defined {
    spec(id, min, GangMode::Strict, MatchPolicy::OnceSatisfied, &[])
}

fn never() -> Result<Defined, GangFieldError> {
    unreachable!("a PodGroup gang is not defined by its pods")
}

/// A PodGroup gang `id` with rules `d` and pending pods `pods`.
fn with_pods(gangs: &mut Gangs, id: &str, d: Defined, pods: &[&str]) {
    gangs.apply_pod_group(id, Ok(d));
    for p in pods {
        gangs.pod_pending(id, GangSource::PodGroup, p, never);
    }
}

fn verdicts(gangs: &mut Gangs) -> Vec<String> {
    let mut v: Vec<String> = std::mem::take(&mut gangs.verdicts)
        .into_iter()
        .map(|v| match v {
            WaitingVerdict::Allow(p) => format!("allow {p}"),
            WaitingVerdict::Reject { pod, rejection } => format!("reject {pod}: {rejection}"),
        })
        .collect();
    v.sort();
    v
}

#[test]
fn pre_filter_refuses_unknown_uninitialised_and_short_gangs() {
    let mut g = Gangs::default();
    let err = |g: &mut Gangs, id: &str| g.pre_filter(id, "ns/p").unwrap_err().to_string();
    assert_eq!(err(&mut g, "ns/x"), "can't find gang, gangName: ns/x, podName: ns/p");
    g.pod_pending("ns/x", GangSource::PodGroup, "ns/p", never);
    assert_eq!(err(&mut g, "ns/x"), "gang has not init, gangName: ns/x, podName: ns/p");
    g.apply_pod_group(
        "ns/x",
        Ok(spec("ns/x", 2, GangMode::Strict, MatchPolicy::OnceSatisfied, &["ns/y"])),
    );
    g.apply_pod_group("ns/y", Ok(strict("ns/y", 1)));
    assert_eq!(
        err(&mut g, "ns/x"),
        "gangGroup [ns/x ns/y] basic check: memberGangs [ns/x ns/y] child pod not collect enough, \
         current gang: ns/x, podName: ns/p"
    );
    g.pod_pending("ns/x", GangSource::PodGroup, "ns/q", never);
    g.pod_pending("ns/y", GangSource::PodGroup, "ns/r", never);
    assert_eq!(g.pre_filter("ns/x", "ns/p"), Ok(()));
    // A bound member is a child too.
    g.pod_not_pending("ns/x", "ns/q");
    g.pod_bound("ns/x", GangSource::PodGroup, "ns/q", never);
    assert_eq!(g.gangs["ns/x"].children(), 2);
}

#[test]
fn permit_waits_for_min_then_allows_every_waiting_member() {
    let mut g = Gangs::default();
    with_pods(&mut g, "ns/g", strict("ns/g", 3), &["ns/a", "ns/b", "ns/c", "ns/d"]);
    assert_eq!(g.permit("ns/g", "ns/a"), PermitOutcome::Wait(Duration::from_secs(30)));
    assert_eq!(g.permit("ns/g", "ns/b"), PermitOutcome::Wait(Duration::from_secs(30)));
    assert!(verdicts(&mut g).is_empty());
    assert_eq!(g.permit("ns/g", "ns/c"), PermitOutcome::Allow);
    assert_eq!(verdicts(&mut g), ["allow ns/a", "allow ns/b"]);
    let gang = &g.gangs["ns/g"];
    assert_eq!((gang.waiting.len(), gang.binding.len()), (0, 3));
    // PreBind annotates the three, not the others.
    let group: Arc<str> = "ns/g".into();
    assert_eq!(g.binding_annotation("ns/g", "ns/a"), Some((group, 3)));
    assert_eq!(g.binding_annotation("ns/g", "ns/d"), None);
    // Once one is seen bound, a late member passes alone (once-satisfied),
    // and a lone member gets no annotation.
    g.pod_not_pending("ns/g", "ns/a");
    g.pod_bound("ns/g", GangSource::PodGroup, "ns/a", never);
    assert_eq!(g.permit("ns/g", "ns/d"), PermitOutcome::Allow);
    assert_eq!(g.binding_annotation("ns/g", "ns/d"), None);
}

#[test]
fn match_policies_count_what_they_say() {
    // (policy, bound members, once satisfied, waiting needed before Allow)
    let cases = [
        (MatchPolicy::OnlyWaiting, 2, true, 3),
        (MatchPolicy::WaitingAndRunning, 2, true, 1),
        (MatchPolicy::OnceSatisfied, 0, false, 3),
        (MatchPolicy::OnceSatisfied, 2, true, 1),
    ];
    for (policy, bound, once, needed) in cases {
        let mut g = Gangs::default();
        with_pods(&mut g, "ns/g", spec("ns/g", 3, GangMode::Strict, policy, &[]), &[]);
        for i in 0..bound {
            g.pod_bound("ns/g", GangSource::PodGroup, &format!("ns/b{i}"), never);
        }
        assert_eq!(g.groups.get("ns/g").is_some_and(|s| s.once_satisfied), once);
        let mut allowed_at = None;
        for i in 1..=3 {
            let pod = format!("ns/w{i}");
            g.pod_pending("ns/g", GangSource::PodGroup, &pod, never);
            if g.permit("ns/g", &pod) == PermitOutcome::Allow {
                allowed_at = Some(i);
                break;
            }
        }
        assert_eq!(allowed_at, Some(needed), "{policy:?} with {bound} bound");
    }
}

#[test]
fn a_group_is_allowed_only_when_every_gang_is_complete() {
    let mut g = Gangs::default();
    let grouped = |id| spec(id, 2, GangMode::Strict, MatchPolicy::OnceSatisfied, &["ns/x", "ns/y"]);
    with_pods(&mut g, "ns/x", grouped("ns/x"), &["ns/x1", "ns/x2"]);
    with_pods(&mut g, "ns/y", grouped("ns/y"), &["ns/y1", "ns/y2"]);
    for p in ["ns/x1", "ns/x2", "ns/y1"] {
        let id = &p[..4];
        assert!(matches!(g.permit(id, p), PermitOutcome::Wait(_)), "{p}: x complete, y not");
    }
    assert_eq!(g.permit("ns/y", "ns/y2"), PermitOutcome::Allow);
    assert_eq!(verdicts(&mut g), ["allow ns/x1", "allow ns/x2", "allow ns/y1"]);
    assert_eq!(g.binding_annotation("ns/x", "ns/x1"), Some(("ns/x,ns/y".into(), 4)));
}

#[test]
fn strict_failures_reject_the_group_and_fail_the_untried_fast() {
    let mut g = Gangs::default();
    with_pods(&mut g, "ns/g", strict("ns/g", 4), &["ns/a", "ns/b", "ns/c", "ns/d"]);
    for p in ["ns/a", "ns/b"] {
        g.pre_filter("ns/g", p).unwrap();
        assert!(matches!(g.permit("ns/g", p), PermitOutcome::Wait(_)));
    }
    g.pre_filter("ns/g", "ns/c").unwrap();
    g.post_filter("ns/g");
    let message = "Gang \"ns/g\" gets rejected due to pod is unschedulable";
    assert_eq!(
        verdicts(&mut g),
        [format!("reject ns/a: {message}"), format!("reject ns/b: {message}")]
    );
    // Their unreserve does not fail the group again.
    g.unreserve("ns/g", "ns/a");
    g.unreserve("ns/g", "ns/b");
    assert!(verdicts(&mut g).is_empty());
    // d was not tried: it fails fast, once; then it starts a new attempt.
    assert_eq!(g.pre_filter("ns/g", "ns/d").unwrap_err().to_string(), message);
    assert_eq!(g.pre_filter("ns/g", "ns/d"), Ok(()));
    // A member of the failed attempt coming back starts the next one too.
    assert_eq!(g.pre_filter("ns/g", "ns/a"), Ok(()));
    // A member unreserved on its own (timeout) fails the attempt.
    assert!(matches!(g.permit("ns/g", "ns/d"), PermitOutcome::Wait(_)));
    assert!(matches!(g.permit("ns/g", "ns/a"), PermitOutcome::Wait(_)));
    g.unreserve("ns/g", "ns/d");
    let unreserved = "Gang \"ns/g\" gets rejected due to member ns/d was unreserved";
    assert_eq!(verdicts(&mut g), [format!("reject ns/a: {unreserved}")]);
    assert_eq!(g.gangs["ns/g"].waiting_for_bind(), 0);
}

#[test]
fn non_strict_and_satisfied_groups_reject_nobody() {
    for (mode, bound) in [(GangMode::NonStrict, false), (GangMode::Strict, true)] {
        let mut g = Gangs::default();
        let d = spec("ns/g", 3, mode, MatchPolicy::OnceSatisfied, &[]);
        with_pods(&mut g, "ns/g", d, &["ns/a", "ns/b", "ns/c"]);
        if bound {
            g.pod_bound("ns/g", GangSource::PodGroup, "ns/z", never);
        }
        g.pre_filter("ns/g", "ns/a").unwrap();
        let _ = g.permit("ns/g", "ns/a");
        g.post_filter("ns/g");
        g.unreserve("ns/g", "ns/b");
        assert!(verdicts(&mut g).is_empty(), "{mode:?} bound {bound}");
        assert_eq!(g.pre_filter("ns/g", "ns/c"), Ok(()), "no fail-fast");
    }
}

#[test]
fn annotation_gangs_come_with_their_first_valid_pod_and_go_with_their_last() {
    let mut g = Gangs::default();
    let bad = || {
        Err(GangFieldError { object: "pod ns/a".into(), field: "f".into(), message: "m".into() })
    };
    g.pod_pending("ns/g", GangSource::Annotations, "ns/a", bad);
    assert!(g.gangs["ns/g"].spec.is_none());
    assert_eq!(g.gangs["ns/g"].notes.len(), 1);
    g.pod_pending("ns/g", GangSource::Annotations, "ns/b", || Ok(strict("ns/g", 2)));
    assert_eq!(g.gangs["ns/g"].spec.as_ref().map(|s| s.min_member), Some(2));
    // The first pod's rules stay.
    g.pod_pending("ns/g", GangSource::Annotations, "ns/c", || Ok(strict("ns/g", 9)));
    assert_eq!(g.gangs["ns/g"].spec.as_ref().map(|s| s.min_member), Some(2));
    let mut stale: Vec<&str> = g.stale_keys.iter().map(|k| &**k).collect();
    stale.sort();
    assert_eq!(stale, ["ns/a", "ns/b"], "queued before the gang had a time");
    for p in ["ns/a", "ns/b"] {
        g.pod_not_pending("ns/g", p);
    }
    g.pod_not_pending("ns/g", "ns/c");
    g.pod_bound("ns/g", GangSource::Annotations, "ns/c", || Ok(strict("ns/g", 2)));
    assert!(g.gangs.contains_key("ns/g"));
    g.pod_unbound("ns/g", "ns/c");
    assert!(!g.gangs.contains_key("ns/g") && g.groups.is_empty(), "gone with its last pod");
}

#[test]
fn a_pod_group_gang_outlives_its_pods_and_loses_its_rules_with_the_object() {
    let mut g = Gangs::default();
    with_pods(&mut g, "ns/g", strict("ns/g", 1), &["ns/a"]);
    g.pod_not_pending("ns/g", "ns/a");
    assert!(g.gangs.contains_key("ns/g"));
    // A refused update keeps the last good rules, noted.
    let refused = GangFieldError {
        object: "PodGroup ns/g".into(),
        field: "spec.minMember".into(),
        message: "m".into(),
    };
    g.apply_pod_group("ns/g", Err(refused));
    assert_eq!(g.gangs["ns/g"].spec.as_ref().map(|s| s.min_member), Some(1));
    assert_eq!(g.gangs["ns/g"].notes.len(), 1);
    g.pod_pending("ns/g", GangSource::PodGroup, "ns/b", never);
    g.remove_pod_group("ns/g");
    assert_eq!(
        g.pre_filter("ns/g", "ns/b").unwrap_err().to_string(),
        "gang has not init, gangName: ns/g, podName: ns/b"
    );
    g.pod_not_pending("ns/g", "ns/b");
    assert!(!g.gangs.contains_key("ns/g"));
}
