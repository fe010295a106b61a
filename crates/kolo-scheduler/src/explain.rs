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
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in rejections {
        *counts.entry(r.reason.as_ref()).or_default() += 1;
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
}
