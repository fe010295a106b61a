//! Why a pod fits nowhere, in kube-scheduler's words:
//! `0/5000 nodes are available: 3100 Insufficient batch-cpu, 1900 node(s) cpu usage exceed threshold.`

use std::collections::HashMap;

use crate::framework::Rejection;

/// The failure summary for a pod no node could take: nodes counted per
/// reason, most common first (kube-scheduler sorts the texts
/// alphabetically; by count is easier to read), ties by reason.
pub fn failure_message<'a>(
    total_nodes: usize,
    rejections: impl IntoIterator<Item = &'a Rejection>,
) -> String {
    // Neighbouring nodes mostly fail for the same reason, and a pod that
    // fits nowhere has a verdict per node: count runs of one reason and
    // hash only where the reason changes (hashing every verdict was a tenth
    // of the scheduler's time in `kolo sim` at 1,000 nodes).
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let mut run: Option<(&str, usize)> = None;
    for r in rejections {
        let reason = r.reason.as_ref();
        match &mut run {
            Some((last, n)) if *last == reason => *n += 1,
            _ => {
                if let Some((last, n)) = run.replace((reason, 1)) {
                    *counts.entry(last).or_default() += n;
                }
            }
        }
    }
    if let Some((last, n)) = run {
        *counts.entry(last).or_default() += n;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let reasons: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    if total_nodes == 0 {
        return "0/0 nodes are available: no nodes available to schedule pods.".to_string();
    }
    format!("0/{total_nodes} nodes are available: {}.", reasons.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reasons_most_common_first() {
        let cpu = Rejection::unschedulable("Insufficient batch-cpu");
        let hot = Rejection::unschedulable("node(s) cpu usage exceed threshold")
            .with_detail("cpu usage 71% > 65%");
        let taint = Rejection::unresolvable("node(s) had untolerated taint {dedicated: x}");
        let all = [cpu.clone(), hot.clone(), cpu.clone(), taint, hot.clone(), cpu];
        assert_eq!(
            failure_message(6, &all),
            "0/6 nodes are available: 3 Insufficient batch-cpu, 2 node(s) cpu usage exceed threshold, 1 node(s) had untolerated taint {dedicated: x}."
        );
        assert_eq!(
            failure_message(0, &[]),
            "0/0 nodes are available: no nodes available to schedule pods."
        );
    }

    proptest::proptest! {
        /// Counting runs of a reason gives the counts of counting every
        /// verdict on its own.
        #[test]
        fn runs_count_as_single_verdicts(picks in proptest::collection::vec(0usize..4, 0..60)) {
            let reasons = ["Insufficient cpu", "Insufficient memory", "node(s) didn't match", "x"];
            let all: Vec<Rejection> =
                picks.iter().map(|&i| Rejection::unschedulable(reasons[i])).collect();
            let mut want: Vec<(usize, &str)> = reasons
                .iter()
                .enumerate()
                .map(|(i, r)| (picks.iter().filter(|&&p| p == i).count(), *r))
                .filter(|(n, _)| *n > 0)
                .collect();
            want.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            let parts: Vec<String> = want.iter().map(|(n, r)| format!("{n} {r}")).collect();
            let message = failure_message(picks.len().max(1), &all);
            proptest::prop_assert_eq!(
                message,
                format!("0/{} nodes are available: {}.", picks.len().max(1), parts.join(", "))
            );
        }
    }
}
