//! Property tests of `ResourceVector`: the arithmetic and comparisons agree
//! with a per-resource reference model written with `i128` and `Option`.

use kolo_core::resources::{
    MAX_LIST_AMOUNT, ResourceName, ResourceSet, ResourceVector, WELL_KNOWN_NAMES,
};
use proptest::prelude::*;

/// The names the generated vectors draw from: all eight well-known ones
/// and three extended ones.
fn pool() -> Vec<ResourceName> {
    let mut names = WELL_KNOWN_NAMES.to_vec();
    for ext in ["props.example/gpu", "hugepages-2Mi", "props.example/fpga"] {
        names.push(ResourceName::parse(ext).expect("registry has room"));
    }
    names
}

/// A vector with each pool resource present with probability ~1/2 and values
/// from `values`.
fn vector(values: impl Strategy<Value = i64> + Clone) -> impl Strategy<Value = ResourceVector> {
    let n = pool().len();
    proptest::collection::vec(proptest::option::of(values), n).prop_map(|slots| {
        pool().into_iter().zip(slots).filter_map(|(name, v)| v.map(|v| (name, v))).collect()
    })
}

fn any_vector() -> impl Strategy<Value = ResourceVector> {
    // Mix extremes in so saturation is actually exercised.
    vector(prop_oneof![
        4 => any::<i64>(),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        2 => -1000i64..1000,
    ])
}

/// Amounts a Kubernetes resource list may carry: 0 to `MAX_LIST_AMOUNT`,
/// the extremes included.
fn list_vector() -> impl Strategy<Value = ResourceVector> {
    vector(prop_oneof![
        4 => 0..=MAX_LIST_AMOUNT,
        1 => Just(MAX_LIST_AMOUNT),
        1 => Just(0),
        2 => 0i64..1000,
    ])
}

/// Values far from the bounds: sums and differences of two never saturate.
fn small_vector() -> impl Strategy<Value = ResourceVector> {
    vector(-(1i64 << 60)..(1i64 << 60))
}

fn clamp(x: i128) -> i64 {
    x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn union(a: &ResourceVector, b: &ResourceVector) -> ResourceSet {
    a.names() | b.names()
}

proptest! {
    #[test]
    fn add_then_sub_is_identity_without_saturation(a in small_vector(), b in small_vector()) {
        let back = (a + b) - b;
        // Resources only in `b` stay present (quotav1 union) with amount 0.
        prop_assert_eq!(back.mask(a.names()), a);
        prop_assert_eq!(back.names(), union(&a, &b));
        for name in b.names().iter().filter(|n| !a.contains(*n)) {
            prop_assert_eq!(back.get(name), Some(0));
        }
        let mut acc = a;
        acc += b;
        acc -= b;
        prop_assert_eq!(acc, back);
    }

    #[test]
    fn add_and_sub_saturate_never_wrap(a in any_vector(), b in any_vector()) {
        let sum = a + b;
        let diff = a - b;
        prop_assert_eq!(sum.names(), union(&a, &b));
        prop_assert_eq!(diff.names(), union(&a, &b));
        for name in union(&a, &b).iter() {
            let (x, y) = (i128::from(a.value(name)), i128::from(b.value(name)));
            prop_assert_eq!(sum.value(name), clamp(x + y));
            // A resource only in `b` gives -b (saturating: -MIN is MAX).
            prop_assert_eq!(diff.value(name), clamp(x - y));
        }
        prop_assert_eq!(sum, b + a);
    }

    #[test]
    fn max_is_commutative_and_an_upper_bound(a in any_vector(), b in any_vector()) {
        let m = a.max(&b);
        prop_assert_eq!(m, b.max(&a));
        prop_assert_eq!(m.names(), union(&a, &b));
        for name in m.names().iter() {
            let expected = match (a.get(name), b.get(name)) {
                (Some(x), Some(y)) => x.max(y),
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => unreachable!(),
            };
            prop_assert_eq!(m.get(name), Some(expected));
        }
        prop_assert_eq!(a.max(&a), a);
    }

    #[test]
    fn less_than_or_equal_matches_per_key_quota_rule(a in any_vector(), b in any_vector()) {
        // quotav1: over the keys of the limit, only where the request has the
        // key too.
        let model = b
            .names()
            .iter()
            .all(|n| a.get(n).is_none_or(|x| x <= b.value(n)));
        prop_assert_eq!(a.less_than_or_equal(&b), model);
        prop_assert_eq!(a.fits_within(&b), model);
        let exceeding: ResourceSet = b
            .names()
            .iter()
            .filter(|n| a.get(*n).is_some_and(|x| x > b.value(*n)))
            .collect();
        prop_assert_eq!(a.exceeding(&b), exceeding);
        // Anything fits a limit with no resources.
        prop_assert!(a.less_than_or_equal(&ResourceVector::EMPTY));
        prop_assert!(a.less_than_or_equal(&a));
    }

    #[test]
    fn insufficient_matches_per_key_node_fit_rule(a in any_vector(), b in any_vector()) {
        let model: ResourceSet = a
            .names()
            .iter()
            .filter(|n| {
                let want = a.value(*n);
                want > 0 && want > b.get(*n).unwrap_or(0)
            })
            .collect();
        prop_assert_eq!(a.insufficient(&b), model);
        prop_assert_eq!(a.fits_allocatable(&b), model.is_empty());
    }

    #[test]
    fn sub_non_negative_matches_model(a in any_vector(), b in any_vector()) {
        let r = a.sub_non_negative(&b);
        prop_assert_eq!(r.names(), union(&a, &b));
        for name in r.names().iter() {
            let expected = match a.get(name) {
                Some(x) => clamp(i128::from(x) - i128::from(b.value(name))).max(0),
                None => 0,
            };
            prop_assert_eq!(r.get(name), Some(expected));
        }
        prop_assert!(r.negative().is_empty());
    }

    #[test]
    fn mask_keeps_exactly_the_intersection(a in any_vector(), b in any_vector()) {
        let set = b.names();
        let m = a.mask(set);
        prop_assert_eq!(m.names(), a.names() & set);
        for (name, v) in m.iter() {
            prop_assert_eq!(a.get(name), Some(v));
        }
    }

    #[test]
    fn iteration_is_sorted_and_matches_names(a in any_vector()) {
        let names: Vec<_> = a.iter().map(|(n, _)| n).collect();
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]));
        prop_assert_eq!(names, a.names().iter().collect::<Vec<_>>());
        prop_assert_eq!(a.len(), a.iter().len());
    }

    #[test]
    fn resource_list_round_trip(a in list_vector()) {
        let list = a.to_resource_list();
        prop_assert_eq!(list.len(), a.len());
        let back = ResourceVector::from_resource_list(&list)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, a);
        // Display never fails and names every resource.
        let shown = a.to_string();
        for (name, _) in a.iter() {
            prop_assert!(shown.contains(name.short_name()), "{} lacks {}", shown, name);
        }
    }
}
