//! The report's story: a one-sentence headline with the result and its
//! cost, and the paragraphs a person needs to read the table — why
//! co-location lands above or below the baseline, what the LS latency
//! proxy says, and what the BE pods left pending mean. Pure: the
//! sentences come from the runs' summaries.

use super::PolicyRun;
use crate::metrics::Summary;
use crate::policy::PolicyKind;

/// What the story needs to know besides the runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// The share of the cluster's CPU the LS pods request.
    pub ls_requested_share: f64,
}

/// Below this share of the CPU requested by LS pods, co-location has
/// little to reclaim.
const LITTLE_TO_RECLAIM: f64 = 0.35;

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// The first run of `kind`.
fn first(runs: &[PolicyRun], kind: PolicyKind) -> Option<&Summary> {
    runs.iter().find(|r| r.kind == kind).map(|r| &r.result.summary)
}

/// The headline: co-location's utilization against the baseline's, and
/// what it cost LS (or, with one kind only, that run's figures).
pub fn headline(runs: &[PolicyRun]) -> String {
    let (Some(b), Some(c)) =
        (first(runs, PolicyKind::Baseline), first(runs, PolicyKind::Colocation))
    else {
        return runs
            .iter()
            .map(|r| {
                let s = &r.result.summary;
                format!(
                    "{}: CPU utilization {} on average, LS latency proxy p99 {:.3}×.",
                    s.policy,
                    pct(s.cpu_utilization_avg),
                    s.ls_latency_proxy_p99
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
    };
    let delta = (c.cpu_utilization_avg - b.cpu_utilization_avg) * 100.0;
    let direction = if delta >= 0.0 { "raises" } else { "lowers" };
    format!(
        "{} {direction} average CPU utilization from {} ({}) to {} ({:+.1} points), with the LS \
         latency proxy at p99 {:.3}× against {:.3}× and {:.0} LS CPU-seconds starved against {:.0}.",
        c.policy,
        pct(b.cpu_utilization_avg),
        b.policy,
        pct(c.cpu_utilization_avg),
        delta,
        c.ls_latency_proxy_p99,
        b.ls_latency_proxy_p99,
        c.ls_starved_cpu_seconds,
        b.ls_starved_cpu_seconds
    )
}

/// The paragraphs after the headline.
pub fn paragraphs(runs: &[PolicyRun], setting: Setting) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(b), Some(c)) =
        (first(runs, PolicyKind::Baseline), first(runs, PolicyKind::Colocation))
    else {
        return out;
    };
    if c.cpu_utilization_avg < b.cpu_utilization_avg {
        let mut why = format!(
            "Why co-location is below the baseline here: under the baseline, BE pods run on CFS \
             shares without CPU limits, so they also take the CPU that LS pods requested but left \
             idle ({} used on average, {} at p95), and nothing gives it back when LS needs it: \
             {:.0} hot node-minutes and {:.0} LS CPU-seconds starved. Co-location holds BE to the \
             batch capacity the manager publishes and suppresses it when a node's usage passes \
             the suppression threshold, so nodes stay below it ({} at p95) and LS waits less \
             ({:.0} CPU-seconds starved). The utilization the baseline wins is taken from LS.",
            pct(b.cpu_utilization_avg),
            pct(b.cpu_utilization_p95),
            b.descheduler.hot_node_minutes,
            b.ls_starved_cpu_seconds,
            pct(c.cpu_utilization_p95),
            c.ls_starved_cpu_seconds
        );
        if setting.ls_requested_share < LITTLE_TO_RECLAIM {
            why.push_str(&format!(
                " Besides, the LS pods request only {} of the CPU: there is little requested but \
                 idle capacity for co-location to reclaim.",
                pct(setting.ls_requested_share)
            ));
        }
        out.push(why);
    }
    out.push(latency(b, c));
    out.push(pending(b, c));
    out
}

/// What the LS latency proxy says.
fn latency(b: &Summary, c: &Summary) -> String {
    let verdict = if c.ls_latency_proxy_p99 <= b.ls_latency_proxy_p99 {
        "LS pods fared no worse with co-location than without it"
    } else {
        "LS pods paid for co-location's utilization with some latency"
    };
    format!(
        "The LS latency proxy is how much longer an LS pod's CPU work takes than it would on an \
         idle node (1.000× = no interference), at the 99th percentile over pods and steps: {:.3}× \
         under {} and {:.3}× under {}. {verdict}.",
        b.ls_latency_proxy_p99, b.policy, c.ls_latency_proxy_p99, c.policy
    )
}

/// What the BE pods left pending mean.
fn pending(b: &Summary, c: &Summary) -> String {
    let more = c.be_pods_pending > b.be_pods_pending;
    let cause = if more {
        "Co-location leaves more pending: batch capacity follows measured usage, so it shrinks \
         when LS pods are busy, and batch pods wait for it rather than crowd LS."
    } else {
        "Co-location leaves no more pending than the baseline."
    };
    format!(
        "BE pods pending at the end of the run were submitted but never found room: {} under {} \
         and {} under {}, of {} submitted. {cause} Pending pods are work deferred, not lost; the \
         BE CPU-hours completed ({:.0} and {:.0}) count what was done.",
        b.be_pods_pending,
        b.policy,
        c.be_pods_pending,
        c.policy,
        c.be_pods_submitted,
        b.be_cpu_hours_completed,
        c.be_cpu_hours_completed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RunResult;
    use crate::metrics::HeatMap;

    fn run(
        kind: PolicyKind,
        name: &str,
        util: f64,
        p99: f64,
        starved: f64,
        pending: u64,
    ) -> PolicyRun {
        let mut result =
            RunResult { summary: Summary::default(), steps: Vec::new(), heat: HeatMap::default() };
        let s = &mut result.summary;
        s.policy = name.to_string();
        s.cpu_utilization_avg = util;
        s.ls_latency_proxy_p99 = p99;
        s.ls_starved_cpu_seconds = starved;
        s.be_pods_pending = pending;
        s.be_pods_submitted = 100;
        PolicyRun { result, description: String::new(), kind, wall_seconds: 1.0 }
    }

    #[test]
    fn the_headline_says_which_way_and_at_what_cost() {
        let runs = [
            run(PolicyKind::Baseline, "baseline", 0.686, 1.091, 393.0, 47),
            run(PolicyKind::Colocation, "colocation", 0.620, 1.067, 0.0, 73),
        ];
        let h = headline(&runs);
        assert!(h.starts_with("colocation lowers average CPU utilization from 68.6 % (baseline) to 62.0 % (-6.6 points)"), "{h}");
        assert!(
            h.contains("1.067× against 1.091×")
                && h.contains("0 LS CPU-seconds starved against 393"),
            "{h}"
        );
        let p = paragraphs(&runs, Setting { ls_requested_share: 0.12 });
        assert_eq!(p.len(), 3, "below the baseline: explained");
        assert!(
            p[0].contains("without CPU limits") && p[0].contains("393 LS CPU-seconds starved"),
            "{}",
            p[0]
        );
        assert!(p[0].contains("request only 12.0 %"), "{}", p[0]);
        let high = paragraphs(&runs, Setting { ls_requested_share: 0.67 });
        assert!(!high[0].contains("request only"), "{}", high[0]);
        assert!(p[1].contains("no worse"), "{}", p[1]);
        assert!(
            p[2].contains("47 under baseline and 73 under colocation")
                && p[2].contains("Co-location leaves more pending"),
            "{}",
            p[2]
        );
        let runs = [
            run(PolicyKind::Baseline, "baseline", 0.33, 1.01, 0.0, 0),
            run(PolicyKind::Colocation, "colocation", 0.61, 1.05, 0.0, 0),
        ];
        assert!(headline(&runs).contains("raises") && headline(&runs).contains("+28.0 points"));
        let p = paragraphs(&runs, Setting { ls_requested_share: 0.75 });
        assert_eq!(p.len(), 2, "above the baseline: nothing to explain");
        assert!(p[0].contains("paid for co-location's utilization"), "{}", p[0]);
    }

    #[test]
    fn one_kind_only_gets_its_own_figures() {
        let runs = [run(PolicyKind::Colocation, "tuned", 0.5, 1.02, 0.0, 0)];
        assert_eq!(
            headline(&runs),
            "tuned: CPU utilization 50.0 % on average, LS latency proxy p99 1.020×."
        );
        assert!(paragraphs(&runs, Setting { ls_requested_share: 0.5 }).is_empty());
    }
}
