//! Why a pod fits nowhere, in kube-scheduler's words:
//! `0/5000 nodes are available: 3100 Insufficient batch-cpu, 1900 node(s) cpu usage exceed threshold.`

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use crate::framework::{Code, Rejection};

/// How many nodes one plugin rejected a pod on, for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectionCount {
    /// The plugin.
    pub plugin: &'static str,
    /// The reason, as the failure message says it.
    pub reason: Cow<'static, str>,
    /// Its status code.
    pub code: Code,
    /// On how many nodes.
    pub nodes: usize,
}

/// Why a pod fits nowhere: kube-scheduler's message and, as data, the
/// rejections it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureSummary {
    /// `0/5000 nodes are available: 3100 Insufficient batch-cpu, ...`.
    pub message: String,
    /// Per (plugin, reason, code): on how many nodes; most nodes first,
    /// then by plugin and reason.
    pub rejections: Vec<RejectionCount>,
}

impl FailureSummary {
    /// The summary of one rejection that holds for every node (a PreFilter
    /// rejection).
    pub fn everywhere(
        total_nodes: usize,
        plugin: &'static str,
        rejection: &Rejection,
    ) -> FailureSummary {
        FailureSummary {
            message: format!("0/{total_nodes} nodes are available: {}.", rejection.reason),
            rejections: vec![RejectionCount {
                plugin,
                reason: rejection.reason.clone(),
                code: rejection.code,
                nodes: total_nodes,
            }],
        }
    }
}

/// The failure summary for a pod no node could take, from each node's
/// rejection and the index of the plugin that made it (`plugin_name`
/// names it): nodes counted per reason, most common first (kube-scheduler
/// sorts the texts alphabetically; by count is easier to read), ties by
/// reason.
pub fn failure_summary<'a>(
    total_nodes: usize,
    rejections: impl IntoIterator<Item = (u16, &'a Rejection)>,
    plugin_name: impl Fn(u16) -> &'static str,
) -> FailureSummary {
    // Neighbouring nodes mostly fail for the same reason, and a pod that
    // fits nowhere has a verdict per node: count runs of one rejection and
    // hash only where it changes (hashing every verdict was a tenth of the
    // scheduler's time in `kolo sim` at 1,000 nodes).
    type Key<'a> = (u16, &'a str, Code);
    let mut counts: HashMap<Key<'a>, (usize, &'a Rejection)> = HashMap::new();
    let mut run: Option<(Key<'a>, usize, &'a Rejection)> = None;
    for (plugin, r) in rejections {
        let key = (plugin, r.reason.as_ref(), r.code);
        match &mut run {
            Some((last, n, _)) if *last == key => *n += 1,
            _ => {
                if let Some((last, n, first)) = run.replace((key, 1, r)) {
                    counts.entry(last).or_insert((0, first)).0 += n;
                }
            }
        }
    }
    if let Some((last, n, first)) = run {
        counts.entry(last).or_insert((0, first)).0 += n;
    }
    let mut rejections: Vec<RejectionCount> = counts
        .into_iter()
        .map(|((plugin, _, code), (nodes, first))| RejectionCount {
            plugin: plugin_name(plugin),
            reason: first.reason.clone(),
            code,
            nodes,
        })
        .collect();
    fn rest(r: &RejectionCount) -> (&'static str, &str, Code) {
        (r.plugin, &r.reason, r.code)
    }
    rejections.sort_by(|a, b| b.nodes.cmp(&a.nodes).then_with(|| rest(a).cmp(&rest(b))));
    FailureSummary { message: failure_message(total_nodes, &rejections), rejections }
}

/// kube-scheduler's message: nodes counted per reason (whichever plugins
/// gave it), most common first, ties by reason.
fn failure_message(total_nodes: usize, rejections: &[RejectionCount]) -> String {
    if total_nodes == 0 {
        return "0/0 nodes are available: no nodes available to schedule pods.".to_string();
    }
    let mut by_reason: Vec<(&str, usize)> = Vec::new();
    for r in rejections {
        match by_reason.iter_mut().find(|(reason, _)| *reason == r.reason) {
            Some((_, n)) => *n += r.nodes,
            None => by_reason.push((&r.reason, r.nodes)),
        }
    }
    by_reason.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = by_reason.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!("0/{total_nodes} nodes are available: {}.", reasons.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 3] = ["Fit", "Load", "Taint"];

    fn summary(total: usize, all: &[(u16, Rejection)]) -> FailureSummary {
        failure_summary(total, all.iter().map(|(p, r)| (*p, r)), |p| NAMES[p as usize])
    }

    #[test]
    fn counts_reasons_most_common_first() {
        let cpu = (0, Rejection::unschedulable("Insufficient batch-cpu"));
        let hot = (
            1,
            Rejection::unschedulable("node(s) cpu usage exceed threshold")
                .with_detail("cpu usage 71% > 65%"),
        );
        let taint = (2, Rejection::unresolvable("node(s) had untolerated taint {dedicated: x}"));
        let all = [cpu.clone(), hot.clone(), cpu.clone(), taint, hot.clone(), cpu];
        let got = summary(6, &all);
        assert_eq!(
            got.message,
            "0/6 nodes are available: 3 Insufficient batch-cpu, 2 node(s) cpu usage exceed threshold, 1 node(s) had untolerated taint {dedicated: x}."
        );
        let rows: Vec<(&str, &str, Code, usize)> =
            got.rejections.iter().map(|r| (r.plugin, r.reason.as_ref(), r.code, r.nodes)).collect();
        assert_eq!(
            rows,
            [
                ("Fit", "Insufficient batch-cpu", Code::Unschedulable, 3),
                ("Load", "node(s) cpu usage exceed threshold", Code::Unschedulable, 2),
                (
                    "Taint",
                    "node(s) had untolerated taint {dedicated: x}",
                    Code::UnschedulableAndUnresolvable,
                    1
                ),
            ]
        );
        assert_eq!(
            summary(0, &[]).message,
            "0/0 nodes are available: no nodes available to schedule pods."
        );
    }

    #[test]
    fn one_reason_from_two_plugins_or_codes_counts_once_in_the_message() {
        let all = [
            (0, Rejection::unschedulable("x")),
            (1, Rejection::unschedulable("x")),
            (1, Rejection::unresolvable("x")),
            (0, Rejection::unschedulable("y")),
        ];
        let got = summary(4, &all);
        assert_eq!(got.message, "0/4 nodes are available: 3 x, 1 y.");
        assert_eq!(got.rejections.len(), 4, "{got:?}");
        let everywhere = FailureSummary::everywhere(5, "Numa", &Rejection::unresolvable("bad"));
        assert_eq!(everywhere.message, "0/5 nodes are available: bad.");
        assert_eq!(everywhere.rejections[0].nodes, 5);
        assert_eq!(everywhere.rejections[0].code, Code::UnschedulableAndUnresolvable);
    }

    proptest::proptest! {
        /// Counting runs of a reason gives the counts of counting every
        /// verdict on its own.
        #[test]
        fn runs_count_as_single_verdicts(picks in proptest::collection::vec(0usize..4, 0..60)) {
            let reasons = ["Insufficient cpu", "Insufficient memory", "node(s) didn't match", "x"];
            let all: Vec<(u16, Rejection)> =
                picks.iter().map(|&i| (0, Rejection::unschedulable(reasons[i]))).collect();
            let mut want: Vec<(usize, &str)> = reasons
                .iter()
                .enumerate()
                .map(|(i, r)| (picks.iter().filter(|&&p| p == i).count(), *r))
                .filter(|(n, _)| *n > 0)
                .collect();
            want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            let parts: Vec<String> = want.iter().map(|(n, r)| format!("{n} {r}")).collect();
            let message = summary(picks.len().max(1), &all).message;
            proptest::prop_assert_eq!(
                message,
                format!("0/{} nodes are available: {}.", picks.len().max(1), parts.join(", "))
            );
        }
    }
}
