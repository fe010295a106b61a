//! Classification of a measured node (spec §9.2 step 5); usage is compared
//! with `>` over the threshold resources.

use kolo_core::resources::{ResourceName, ResourceVector};

use super::report::NodeClass;
use super::thresholds::NodeThresholds;

/// Whether some resource of `used` is over `limit`.
pub fn over(used: &ResourceVector, limit: &ResourceVector, resources: &[ResourceName]) -> bool {
    resources.iter().any(|&r| used.value(r) > limit.value(r))
}

/// The node's class.
pub fn classify(
    schedulable: bool,
    usage: &ResourceVector,
    prod_usage: &ResourceVector,
    t: &NodeThresholds,
    resources: &[ResourceName],
) -> NodeClass {
    let low = schedulable && !over(usage, &t.low, resources);
    let high = over(usage, &t.high, resources);
    let prod_low = schedulable && !over(prod_usage, &t.prod_low, resources);
    let prod_high = over(prod_usage, &t.prod_high, resources);
    match () {
        () if low && prod_high => NodeClass::ProdHigh,
        () if low && prod_low => NodeClass::BothLow,
        () if low => NodeClass::Low,
        () if high => NodeClass::Source,
        () if prod_high => NodeClass::ProdHigh,
        () if prod_low => NodeClass::ProdLow,
        () => NodeClass::Normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceName::Cpu;

    fn t() -> NodeThresholds {
        // cpu: low 300, high 700; prod low 100, prod high 400.
        let v = |c| ResourceVector::EMPTY.with(Cpu, c);
        NodeThresholds { low: v(300), high: v(700), prod_low: v(100), prod_high: v(400) }
    }

    #[test]
    fn every_branch_of_step_5() {
        let v = |c| ResourceVector::EMPTY.with(Cpu, c);
        let cases = [
            // (schedulable, usage, prod usage, class)
            (true, 300, 100, NodeClass::BothLow),
            (true, 300, 200, NodeClass::Low),
            (true, 300, 401, NodeClass::ProdHigh),
            (false, 300, 100, NodeClass::Normal),
            (true, 701, 0, NodeClass::Source),
            (true, 701, 500, NodeClass::Source),
            (true, 500, 401, NodeClass::ProdHigh),
            (true, 500, 100, NodeClass::ProdLow),
            (false, 500, 100, NodeClass::Normal),
            (true, 700, 200, NodeClass::Normal),
        ];
        for (schedulable, used, prod, want) in cases {
            assert_eq!(
                classify(schedulable, &v(used), &v(prod), &t(), &[Cpu]),
                want,
                "{used}/{prod}/{schedulable}"
            );
        }
    }
}
