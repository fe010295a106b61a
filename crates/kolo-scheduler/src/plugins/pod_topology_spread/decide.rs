//! The pure arithmetic of topology spreading, as kube-scheduler's plugin:
//! the global minimum and skew check of Filter, and the per-node score and
//! its normalization.

/// The global minimum of a constraint (kube's `minMatchNum`): the fewest
/// matching pods in any eligible domain, or 0 while there are fewer
/// eligible domains than `min_domains` (so a new domain must be opened
/// before the existing ones fill further).
pub fn global_min(eligible_counts: impl IntoIterator<Item = i64>, min_domains: i64) -> i64 {
    let mut domains = 0i64;
    let mut min = i64::MAX;
    for count in eligible_counts {
        domains += 1;
        min = min.min(count);
    }
    if domains < min_domains { 0 } else { min }
}

/// Whether placing the pod in a domain with `count` matching pods keeps the
/// skew within `max_skew`: `count + self − min ≤ maxSkew`.
pub fn within_skew(count: i64, self_match: bool, min: i64, max_skew: i64) -> bool {
    count.saturating_add(i64::from(self_match)).saturating_sub(min) <= max_skew
}

/// The weight of one matching pod for a constraint with `domains` domains
/// among the scored nodes (kube's `topologyNormalizingWeight`): more
/// domains, heavier, so a constraint over many small domains is not drowned
/// by one over a few large ones.
pub fn topology_weight(domains: usize) -> f64 {
    ((domains + 2) as f64).ln()
}

/// One constraint's contribution to a node's raw score (kube's
/// `scoreForCount`): the matching pods in the node's domain, weighted, plus
/// `maxSkew − 1` (so a larger tolerated skew evens nodes out).
pub fn score_for_count(count: i64, max_skew: i64, weight: f64) -> f64 {
    count as f64 * weight + (max_skew - 1) as f64
}

/// kube's `NormalizeScore`: raw scores count pods, so fewer is better:
/// `100 · (max + min − s) / max`; every node 100 when the maximum is 0;
/// `None` (a node lacking a required topology key) scores 0 and takes no
/// part in the minimum and maximum.
pub fn normalize(raw: &[Option<i64>], out: &mut [i64]) {
    let present = || raw.iter().flatten().copied();
    let min = present().min().unwrap_or(0);
    let max = present().max().unwrap_or(0);
    for (slot, score) in out.iter_mut().zip(raw) {
        *slot = match *score {
            None => 0,
            Some(_) if max == 0 => 100,
            Some(s) => 100 * (max + min - s) / max,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn global_minimum_honours_min_domains() {
        // kube's "normal case with one spreadConstraint, on a 3-zone
        // cluster": zone1 3, zone2 2, zone3 0 → minimum 0.
        assert_eq!(global_min([3, 2, 0], 1), 0);
        assert_eq!(global_min([3, 2], 1), 2);
        // Two domains but minDomains 3: the minimum is taken as 0.
        assert_eq!(global_min([3, 2], 3), 0);
        assert_eq!(global_min([3, 2, 4], 3), 2);
        assert_eq!(global_min([], 1), 0);
    }

    #[test]
    fn skew_table() {
        // (count, self, min, maxSkew, ok): kube's "normal case with two
        // spreadConstraints": zones 3 / 4, min 3, maxSkew 1.
        let cases = [
            (3, true, 3, 1, true),
            (4, true, 3, 1, false),
            (4, false, 3, 1, true),
            (0, true, 0, 1, true),
            (1, true, 0, 1, false),
            (5, true, 0, 6, true),
        ];
        for (count, me, min, skew, ok) in cases {
            assert_eq!(within_skew(count, me, min, skew), ok, "{count} {me} {min} {skew}");
        }
    }

    #[test]
    fn score_and_normalize_by_hand() {
        // Two zones scored, so weight ln(4) = 1.386; maxSkew 1.
        let w = topology_weight(2);
        assert!((w - 4f64.ln()).abs() < 1e-12);
        // Domains with 3 and 1 matching pods: raw 4.16 → 4 and 1.39 → 1.
        let raw = [3, 1].map(|c| Some(score_for_count(c, 1, w).round() as i64));
        assert_eq!(raw, [Some(4), Some(1)]);
        let mut out = [0; 3];
        normalize(&[raw[0], raw[1], None], &mut out);
        // 100·(4+1−4)/4 = 25, 100·(4+1−1)/4 = 100, lacking keys 0.
        assert_eq!(out, [25, 100, 0]);
        normalize(&[Some(0), Some(0)], &mut out[..2]);
        assert_eq!(out[..2], [100, 100]);
    }

    proptest! {
        /// Normalized scores lie in 0..=100, the lowest raw score gets 100,
        /// and more matching pods never score higher.
        #[test]
        fn normalize_is_bounded_and_reversed(raw in prop::collection::vec(prop::option::of(0i64..10_000), 1..20)) {
            let mut out = vec![0; raw.len()];
            normalize(&raw, &mut out);
            for (a, sa) in raw.iter().zip(&out) {
                prop_assert!((0..=100).contains(sa));
                match a {
                    None => prop_assert_eq!(*sa, 0),
                    Some(a) => {
                        if Some(*a) == raw.iter().flatten().min().copied() {
                            prop_assert_eq!(*sa, 100);
                        }
                        for (b, sb) in raw.iter().zip(&out) {
                            if let Some(b) = b && a < b {
                                prop_assert!(sa >= sb);
                            }
                        }
                    }
                }
            }
        }
    }
}
