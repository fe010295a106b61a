//! Defining a gang (spec §8.2), pure: which gang a pod names, and a gang's
//! rules read from its PodGroup or from its first pod's annotations.

use std::sync::Arc;
use std::time::Duration;

use kolo_api::crd::{PodGroup, parse_go_duration};
use kolo_api::names::annotation::{
    GANG_GROUPS, GANG_MATCH_POLICY, GANG_MIN_AVAILABLE, GANG_MODE, GANG_NAME, GANG_TOTAL_NUMBER,
    GANG_WAITING_TIME,
};
use kolo_api::names::label::{
    POD_GROUP, POD_GROUP_MIN_AVAILABLE_DEPRECATED, POD_GROUP_NAME_DEPRECATED,
};

use super::args::{CoschedulingArgs, MatchPolicy};

/// The alias of [`GANG_MATCH_POLICY`] (an annotation or a label).
pub const POD_GROUP_MATCH_POLICY: &str = "pod-group.scheduling.sigs.k8s.io/match-policy";

/// What happens to the rest of a gang when one member fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GangMode {
    /// `Strict` (the default): a member's failure rejects every waiting
    /// member of the gang's group.
    #[default]
    Strict,
    /// `NonStrict`: the others keep waiting until their own timeout.
    NonStrict,
}

/// Where a gang's rules come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GangSource {
    /// A PodGroup object (the pod label `pod-group.scheduling.sigs.k8s.io`).
    PodGroup,
    /// The annotations of its first pod (the deprecated name label or the
    /// `gang.scheduling.koordinator.sh/name` annotation).
    Annotations,
}

/// The gang a pod names: its id (`namespace/name`) and where its rules come
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangName {
    /// `namespace/name`.
    pub id: Box<str>,
    /// PodGroup or annotations.
    pub source: GangSource,
}

/// The gang a pod belongs to, if any: the PodGroup label, else the
/// deprecated name label, else the name annotation (empty values count as
/// absent).
pub fn gang_of<'a>(
    namespace: &str,
    label: impl Fn(&str) -> Option<&'a str>,
    annotation: impl Fn(&str) -> Option<&'a str>,
) -> Option<GangName> {
    let present = |v: Option<&'a str>| v.filter(|v| !v.is_empty());
    let (name, source) = match present(label(POD_GROUP)) {
        Some(name) => (name, GangSource::PodGroup),
        None => (
            present(label(POD_GROUP_NAME_DEPRECATED)).or_else(|| present(annotation(GANG_NAME)))?,
            GangSource::Annotations,
        ),
    };
    Some(GangName { id: format!("{namespace}/{name}").into(), source })
}

/// A gang's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GangSpec {
    /// `namespace/name`.
    pub id: Box<str>,
    /// How many members must be placed together.
    pub min_member: u32,
    /// How many members the gang has in all (at least `min_member`).
    pub total: u32,
    /// Strict or NonStrict.
    pub mode: GangMode,
    /// When the gang counts as complete at Permit.
    pub match_policy: MatchPolicy,
    /// How long a member waits at Permit for the rest.
    pub wait_time: Duration,
    /// The gangs placed all-or-nothing with this one (itself included),
    /// sorted.
    pub groups: Vec<Box<str>>,
    /// The group's id: `groups` joined with `,`.
    pub group_id: Arc<str>,
    /// When the gang was created (its PodGroup, or its first pod), in
    /// nanoseconds since the epoch; `None` when undated.
    pub created: Option<i64>,
}

/// A gang field that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {field}: {message}")]
pub struct GangFieldError {
    /// The PodGroup or pod (`namespace/name`).
    pub object: String,
    /// The annotation, label or field.
    pub field: String,
    /// What is wrong, and what was used instead if anything.
    pub message: String,
}

/// A gang's rules and the fields that fell back to defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defined {
    /// The rules.
    pub spec: GangSpec,
    /// Invalid values replaced by defaults, as the spec says.
    pub notes: Vec<GangFieldError>,
}

/// Reads the fields PodGroups and pods share: total, mode, match policy and
/// groups.
struct Reader<'a, F> {
    object: &'a str,
    id: &'a str,
    get: F,
    notes: Vec<GangFieldError>,
}

impl<'a, F: Fn(&str) -> Option<&'a str>> Reader<'a, F> {
    /// The gang's rules: `min`, `wait_time` and `created` as the caller
    /// read them (a PodGroup's spec or a pod's annotations), the rest from
    /// the annotations; the notes gathered on the way.
    fn define(
        mut self,
        min: u32,
        wait_time: Duration,
        created: Option<i64>,
        args: &CoschedulingArgs,
    ) -> Defined {
        let spec = GangSpec {
            total: self.total(min),
            mode: self.mode(),
            match_policy: self.match_policy(args.default_match_policy),
            groups: self.groups(),
            group_id: Arc::from(""),
            wait_time,
            min_member: min,
            created,
            id: self.id.into(),
        };
        Defined { spec: with_group_id(spec), notes: self.notes }
    }

    fn note(&mut self, field: &str, message: String) {
        let object = self.object.to_string();
        self.notes.push(GangFieldError { object, field: field.to_string(), message });
    }

    /// `total-number`: empty, 0 or below min gives min.
    fn total(&mut self, min: u32) -> u32 {
        let Some(text) = (self.get)(GANG_TOTAL_NUMBER).filter(|t| !t.is_empty()) else {
            return min;
        };
        match text.parse::<u32>() {
            Ok(total) => total.max(min),
            Err(_) => {
                self.note(GANG_TOTAL_NUMBER, format!("{text:?} is not a count; using {min}"));
                min
            }
        }
    }

    fn mode(&mut self) -> GangMode {
        match (self.get)(GANG_MODE) {
            None | Some("" | "Strict") => GangMode::Strict,
            Some("NonStrict") => GangMode::NonStrict,
            Some(other) => {
                self.note(GANG_MODE, format!("{other:?} is neither Strict nor NonStrict; Strict"));
                GangMode::Strict
            }
        }
    }

    fn match_policy(&mut self, default: MatchPolicy) -> MatchPolicy {
        let text = (self.get)(GANG_MATCH_POLICY).or_else(|| (self.get)(POD_GROUP_MATCH_POLICY));
        match text.filter(|t| !t.is_empty()) {
            None => default,
            Some(text) => MatchPolicy::parse(text).unwrap_or_else(|| {
                self.note(GANG_MATCH_POLICY, format!("unknown policy {text:?}; the default"));
                default
            }),
        }
    }

    /// `groups`: a JSON array of gang ids; the gang itself by default, and
    /// always among them.
    fn groups(&mut self) -> Vec<Box<str>> {
        let mut groups: Vec<Box<str>> = match (self.get)(GANG_GROUPS).filter(|t| !t.is_empty()) {
            None => Vec::new(),
            Some(text) => serde_json::from_str::<Vec<String>>(text).map_or_else(
                |e| {
                    self.note(GANG_GROUPS, format!("not a JSON array of gang ids ({e})"));
                    Vec::new()
                },
                |ids| ids.into_iter().map(Into::into).collect(),
            ),
        };
        groups.push(self.id.into());
        groups.sort();
        groups.dedup();
        groups
    }
}

/// The group id of a sorted list of gang ids.
pub fn group_id(groups: &[Box<str>]) -> Arc<str> {
    groups.join(",").into()
}

/// A gang's rules from its PodGroup: `spec.minMember`, the timeout when
/// positive, the rest from the PodGroup's annotations. A negative
/// `minMember` is refused.
pub fn from_pod_group(pg: &PodGroup, args: &CoschedulingArgs) -> Result<Defined, GangFieldError> {
    let namespace = pg.metadata.namespace.as_deref().unwrap_or_default();
    let name = pg.metadata.name.as_deref().unwrap_or_default();
    let id = format!("{namespace}/{name}");
    let min = pg.spec.min_member.unwrap_or(0);
    let min = u32::try_from(min).map_err(|_| GangFieldError {
        object: format!("PodGroup {id}"),
        field: "spec.minMember".into(),
        message: format!("must not be negative, got {min}"),
    })?;
    let wait_time = match pg.spec.schedule_timeout_seconds {
        Some(s) if s > 0 => Duration::from_secs(s as u64),
        _ => args.default_timeout,
    };
    let annotations = pg.metadata.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    let object = format!("PodGroup {id}");
    let r = Reader { object: &object, id: &id, get, notes: Vec::new() };
    let created = pg.metadata.creation_timestamp.as_ref().map(|t| nanos(t.0));
    Ok(r.define(min, wait_time, created, args))
}

/// A gang's rules from the annotations (and deprecated labels) of its first
/// pod `pod` (`namespace/name`), created at `created` (nanoseconds).
/// `min-available` is required (the deprecated label wins over the
/// annotation); other invalid values give their defaults.
pub fn from_pod<'a>(
    id: &str,
    pod: &str,
    created: Option<i64>,
    label: impl Fn(&str) -> Option<&'a str>,
    annotation: impl Fn(&str) -> Option<&'a str>,
    args: &CoschedulingArgs,
) -> Result<Defined, GangFieldError> {
    let object = format!("pod {pod}");
    let (field, text) = match label(POD_GROUP_MIN_AVAILABLE_DEPRECATED) {
        Some(text) => (POD_GROUP_MIN_AVAILABLE_DEPRECATED, text),
        None => (GANG_MIN_AVAILABLE, annotation(GANG_MIN_AVAILABLE).unwrap_or_default()),
    };
    let min = text.parse::<u32>().map_err(|_| GangFieldError {
        object: object.clone(),
        field: field.into(),
        message: format!("{text:?} is not a count (required for an annotation gang)"),
    })?;
    let get = |key: &str| annotation(key).or_else(|| label(key));
    let mut r = Reader { object: &object, id, get, notes: Vec::new() };
    let wait_time = match annotation(GANG_WAITING_TIME).filter(|t| !t.is_empty()) {
        None => args.default_timeout,
        Some(text) => match parse_go_duration(text) {
            Some(d) if !d.is_zero() => d,
            Some(_) => args.default_timeout,
            None => {
                let message = format!("{text:?} is not a positive Go duration; the default");
                r.note(GANG_WAITING_TIME, message);
                args.default_timeout
            }
        },
    };
    Ok(r.define(min, wait_time, created, args))
}

fn with_group_id(mut spec: GangSpec) -> GangSpec {
    spec.group_id = group_id(&spec.groups);
    spec
}

/// A timestamp in nanoseconds since the epoch (saturating).
pub fn nanos(t: kolo_core::clock::Timestamp) -> i64 {
    t.as_second().saturating_mul(1_000_000_000).saturating_add(i64::from(t.subsec_nanosecond()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_gang_name_comes_from_the_label_then_the_deprecated_label_then_the_annotation() {
        // (labels, annotations, expected)
        type Pairs<'a> = &'a [(&'a str, &'a str)];
        type Case<'a> = (Pairs<'a>, Pairs<'a>, Option<(&'a str, GangSource)>);
        let cases: [Case; 5] = [
            (&[], &[], None),
            (&[(POD_GROUP, "pg")], &[(GANG_NAME, "a")], Some(("ns/pg", GangSource::PodGroup))),
            (
                &[(POD_GROUP_NAME_DEPRECATED, "old")],
                &[(GANG_NAME, "a")],
                Some(("ns/old", GangSource::Annotations)),
            ),
            (&[], &[(GANG_NAME, "a")], Some(("ns/a", GangSource::Annotations))),
            (&[(POD_GROUP, "")], &[(GANG_NAME, "")], None),
        ];
        for (labels, annotations, want) in cases {
            let (l, a) = (map(labels), map(annotations));
            let got =
                gang_of("ns", |k| l.get(k).map(String::as_str), |k| a.get(k).map(String::as_str));
            assert_eq!(got.map(|g| (g.id.to_string(), g.source)), want.map(|(i, s)| (i.into(), s)));
        }
    }

    fn annotated(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Result<Defined, String> {
        let (l, a) = (map(labels), map(annotations));
        from_pod(
            "ns/g",
            "ns/p",
            Some(7),
            |k| l.get(k).map(String::as_str),
            |k| a.get(k).map(String::as_str),
            &CoschedulingArgs::default(),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn annotation_gangs_read_each_field_with_its_fallback() {
        let d = annotated(
            &[],
            &[
                (GANG_MIN_AVAILABLE, "3"),
                (GANG_TOTAL_NUMBER, "5"),
                (GANG_MODE, "NonStrict"),
                (GANG_MATCH_POLICY, "only-waiting"),
                (GANG_WAITING_TIME, "1m30s"),
                (GANG_GROUPS, r#"["nsB/b","ns/g","nsA/a"]"#),
            ],
        )
        .unwrap();
        let s = &d.spec;
        assert_eq!((s.min_member, s.total, s.mode), (3, 5, GangMode::NonStrict));
        assert_eq!(
            (s.match_policy, s.wait_time),
            (MatchPolicy::OnlyWaiting, Duration::from_secs(90))
        );
        assert_eq!(&*s.group_id, "ns/g,nsA/a,nsB/b");
        assert_eq!(s.created, Some(7));
        assert!(d.notes.is_empty());

        // Defaults: total = min, Strict, once-satisfied, 600 s, the gang alone.
        let d = annotated(&[], &[(GANG_MIN_AVAILABLE, "2")]).unwrap();
        let s = &d.spec;
        assert_eq!((s.min_member, s.total, s.mode), (2, 2, GangMode::Strict));
        assert_eq!(s.match_policy, MatchPolicy::OnceSatisfied);
        assert_eq!(s.wait_time, Duration::from_secs(600));
        assert_eq!(&*s.group_id, "ns/g");

        // total below min and 0 give min; the deprecated label wins; the
        // alias names the policy.
        let d = annotated(
            &[(POD_GROUP_MIN_AVAILABLE_DEPRECATED, "4")],
            &[
                (GANG_MIN_AVAILABLE, "1"),
                (GANG_TOTAL_NUMBER, "2"),
                (POD_GROUP_MATCH_POLICY, "waiting-and-running"),
                (GANG_WAITING_TIME, "0s"),
            ],
        )
        .unwrap();
        assert_eq!((d.spec.min_member, d.spec.total), (4, 4));
        assert_eq!(d.spec.match_policy, MatchPolicy::WaitingAndRunning);
        assert_eq!(d.spec.wait_time, Duration::from_secs(600), "0 gives the default");
        let d = annotated(&[], &[(GANG_MIN_AVAILABLE, "2"), (GANG_TOTAL_NUMBER, "0")]).unwrap();
        assert_eq!(d.spec.total, 2);

        // Invalid values: defaults, each noted with its field.
        let d = annotated(
            &[],
            &[
                (GANG_MIN_AVAILABLE, "2"),
                (GANG_TOTAL_NUMBER, "many"),
                (GANG_MODE, "Loose"),
                (GANG_MATCH_POLICY, "all"),
                (GANG_WAITING_TIME, "-5s"),
                (GANG_GROUPS, "ns/a,ns/b"),
            ],
        )
        .unwrap();
        let s = &d.spec;
        assert_eq!(
            (s.total, s.mode, s.match_policy),
            (2, GangMode::Strict, MatchPolicy::OnceSatisfied)
        );
        assert_eq!((s.wait_time, &*s.group_id), (Duration::from_secs(600), "ns/g"));
        let fields: Vec<&str> = d.notes.iter().map(|n| n.field.as_str()).collect();
        assert_eq!(
            fields,
            [GANG_WAITING_TIME, GANG_TOTAL_NUMBER, GANG_MODE, GANG_MATCH_POLICY, GANG_GROUPS]
        );
    }

    #[test]
    fn an_annotation_gang_without_min_available_is_refused() {
        let got = annotated(&[], &[(GANG_NAME, "g")]).unwrap_err();
        assert_eq!(
            got,
            "pod ns/p: gang.scheduling.koordinator.sh/min-available: \"\" is not a count (required for an annotation gang)"
        );
        assert!(annotated(&[], &[(GANG_MIN_AVAILABLE, "-1")]).is_err());
    }

    fn pod_group(min: i32, timeout: Option<i32>, annotations: &[(&str, &str)]) -> PodGroup {
        let mut pg: PodGroup = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "pg", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:01Z"},
            "spec": {"minMember": min},
        }))
        .unwrap();
        pg.spec.schedule_timeout_seconds = timeout;
        pg.metadata.annotations = Some(map(annotations));
        pg
    }

    #[test]
    fn pod_groups_give_min_member_timeout_and_their_annotations() {
        let args = CoschedulingArgs::default();
        let d = from_pod_group(
            &pod_group(3, Some(30), &[(GANG_MODE, "NonStrict"), (GANG_GROUPS, r#"["ns/x"]"#)]),
            &args,
        )
        .unwrap();
        let s = &d.spec;
        assert_eq!((&*s.id, s.min_member, s.total), ("ns/pg", 3, 3));
        assert_eq!((s.mode, s.wait_time), (GangMode::NonStrict, Duration::from_secs(30)));
        assert_eq!(&*s.group_id, "ns/pg,ns/x");
        assert_eq!(s.created, Some(1_767_225_601_000_000_000));
        for timeout in [None, Some(0), Some(-3)] {
            let d = from_pod_group(&pod_group(1, timeout, &[]), &args).unwrap();
            assert_eq!(d.spec.wait_time, Duration::from_secs(600), "{timeout:?}");
        }
        let err = from_pod_group(&pod_group(-1, None, &[]), &args).unwrap_err();
        assert_eq!(err.to_string(), "PodGroup ns/pg: spec.minMember: must not be negative, got -1");
    }
}
