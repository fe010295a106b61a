use super::*;
use crate::sample::ContainerSample;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_767_225_600 + secs).unwrap()
}

fn at_ms(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_767_225_600_000 + ms).unwrap()
}

fn node(secs: i64, cpu: f64, mem: u64) -> NodeSample {
    NodeSample { at: at(secs), cpu_cores: cpu, memory_bytes: mem, memory_with_cache_bytes: mem * 2 }
}

fn pod(secs: i64, uid: &str, cpu: f64, mem: u64, containers: usize) -> PodSample {
    PodSample {
        at: at(secs),
        uid: uid.to_string(),
        cpu_cores: cpu,
        memory_bytes: mem,
        memory_with_cache_bytes: mem + 4096,
        containers: (0..containers)
            .map(|i| ContainerSample {
                name: format!("c{i}"),
                id: format!("{uid}-c{i}"),
                cpu_cores: cpu / containers as f64,
                memory_bytes: mem / containers as u64,
            })
            .collect(),
    }
}

#[test]
fn node_queries_in_metric_units() {
    let mut s = MetricStore::default();
    for t in 0..10 {
        s.record_node(&node(t, t as f64 / 10.0, (t as u64 + 1) << 20));
    }
    let mut scratch = Vec::new();
    let (start, end) = (at(0), at(9));
    let q = |agg| s.aggregate(Entity::Node, Metric::Cpu, start, end, agg, &mut Vec::new());
    assert_eq!(q(Aggregation::Count), Some(10.0));
    assert!((q(Aggregation::Avg).unwrap() - 0.45).abs() < 1e-6);
    assert!((q(Aggregation::Last).unwrap() - 0.9).abs() < 1e-6);
    // p90 of 10 points is the 9th smallest: 0.8.
    assert!((q(Aggregation::P90).unwrap() - 0.8).abs() < 1e-6);
    assert!((q(Aggregation::P99).unwrap() - 0.8).abs() < 1e-6);
    // Memory comes back in bytes, exactly (stored in KiB).
    let p50 = s
        .aggregate(Entity::Node, Metric::Memory, start, end, Aggregation::P50, &mut scratch)
        .unwrap();
    assert_eq!(p50, (5u64 << 20) as f64);
    let last_cache = s.last(Entity::Node, Metric::MemoryWithCache, at(9), Duration::from_secs(2));
    assert_eq!(last_cache, Some((20u64 << 20) as f64));
}

#[test]
fn empty_windows_and_unknown_series_are_none() {
    let mut s = MetricStore::default();
    let mut scratch = Vec::new();
    assert!(s.window(Entity::Node, Metric::Cpu, at(0), at(100)).is_none());
    s.record_node(&node(50, 1.0, 1 << 20));
    assert!(s.window(Entity::Node, Metric::Cpu, at(0), at(49)).is_none());
    assert!(s.window(Entity::Node, Metric::Cpu, at(51), at(100)).is_none());
    assert!(s.window(Entity::Pod("nope"), Metric::Cpu, at(0), at(100)).is_none());
    assert!(s.window(Entity::Node, Metric::CpuPressureSome, at(0), at(100)).is_none());
    assert_eq!(
        s.aggregate(
            Entity::Container("x"),
            Metric::Cpu,
            at(0),
            at(99),
            Aggregation::Avg,
            &mut scratch
        ),
        None
    );
    // "Last" with a max age: too old → None.
    assert_eq!(s.last(Entity::Node, Metric::Cpu, at(53), Duration::from_secs(2)), None);
    assert_eq!(s.last(Entity::Node, Metric::Cpu, at(52), Duration::from_secs(2)), Some(1.0));
}

#[test]
fn window_boundaries_are_inclusive_to_the_millisecond() {
    let mut s = MetricStore::default();
    for t in 0..5 {
        s.record_node(&NodeSample {
            at: at_ms(t * 1000),
            cpu_cores: t as f64,
            memory_bytes: 0,
            memory_with_cache_bytes: 0,
        });
    }
    let count = |a: i64, b: i64| {
        s.window(Entity::Node, Metric::Cpu, at_ms(a), at_ms(b)).map_or(0, |w| w.count())
    };
    assert_eq!(count(1000, 3000), 3);
    assert_eq!(count(1001, 3000), 2);
    assert_eq!(count(1000, 2999), 2);
    assert_eq!(count(-5000, 10_000), 5);
    assert_eq!(count(4000, 4000), 1);
    let w = s.window(Entity::Node, Metric::Cpu, at_ms(1000), at_ms(3000)).unwrap();
    assert_eq!(w.first_at(), at_ms(1000));
    assert_eq!(w.last_at(), at_ms(3000));
    assert_eq!(w.time_range(), Duration::from_secs(2));
}

#[test]
fn pods_containers_and_system() {
    let mut s = MetricStore::default();
    let pods = [pod(0, "a", 1.5, 3 << 20, 2), pod(0, "b", 0.5, 1 << 20, 1)];
    s.record_round(&node(0, 3.0, 10 << 20), &pods);
    let w = |e, m| s.window(e, m, at(0), at(0)).map(|w| w.last());
    assert_eq!(w(Entity::Pod("a"), Metric::Cpu), Some(1.5));
    assert_eq!(w(Entity::Pod("a"), Metric::Memory), Some((3 << 20) as f64));
    assert_eq!(w(Entity::Pod("a"), Metric::MemoryWithCache), None, "off by default");
    assert_eq!(w(Entity::Container("a-c1"), Metric::Cpu), Some(0.75));
    assert_eq!(w(Entity::Container("b-c0"), Metric::Memory), Some((1 << 20) as f64));
    assert_eq!(w(Entity::System, Metric::Cpu), Some(1.0));
    assert_eq!(w(Entity::System, Metric::Memory), Some((6 << 20) as f64));
    // with cache: node 20 MiB − (3 MiB + 4 KiB + 1 MiB + 4 KiB)
    assert_eq!(w(Entity::System, Metric::MemoryWithCache), Some(((16 << 20) - 8192) as f64));
    // System never goes negative.
    let sys = system_sample(&node(1, 1.0, 1 << 20), &pods);
    assert_eq!((sys.cpu_cores, sys.memory_bytes), (0.0, 0));
}

#[test]
fn pod_page_cache_series_follow_the_config() {
    let mut s = MetricStore::new(StoreConfig { pod_memory_with_cache: true, ..Default::default() });
    s.record_pod(&pod(0, "a", 1.0, 8192, 0));
    let last = |s: &MetricStore| {
        s.window(Entity::Pod("a"), Metric::MemoryWithCache, at(0), at(0)).map(|w| w.last())
    };
    assert_eq!(last(&s), Some(12288.0));
    s.reconfigure(StoreConfig::default());
    assert_eq!(last(&s), None);
}

#[test]
fn psi_series() {
    let mut s = MetricStore::default();
    let psi = PsiSample {
        cpu: Pressure { some_avg10: 1.5, full_avg10: None },
        memory: Pressure { some_avg10: 2.0, full_avg10: Some(0.5) },
        io: Pressure::default(),
    };
    s.record_psi(Entity::Node, at(0), &psi);
    s.record_psi(Entity::Pod("p"), at(0), &psi);
    s.record_psi(Entity::Container("c"), at(0), &psi);
    s.record_psi(Entity::System, at(0), &psi);
    for e in [Entity::Node, Entity::Pod("p"), Entity::Container("c")] {
        let last = |m| s.window(e, m, at(0), at(0)).map(|w| w.last());
        assert_eq!(last(Metric::CpuPressureSome), Some(1.5));
        assert_eq!(last(Metric::CpuPressureFull), None, "no full line, no point");
        assert_eq!(last(Metric::MemoryPressureFull), Some(0.5));
        assert_eq!(last(Metric::IoPressureSome), Some(0.0));
    }
    assert!(s.window(Entity::System, Metric::CpuPressureSome, at(0), at(0)).is_none());
    // A container first seen through PSI gets its owner from the pod sample
    // and goes with the pod.
    let mut owned = pod(0, "p", 1.0, 0, 1);
    owned.containers[0].id = "c".into();
    s.record_pod(&owned);
    assert_eq!(s.stats().containers, 1);
    s.remove_pod("p");
    assert_eq!((s.stats().pods, s.stats().containers), (0, 0));
    s.record_psi(Entity::Pod("p"), at(0), &psi);
    s.record_psi(Entity::Container("c"), at(0), &psi);
    // PSI-only entities are freed by gc once stale.
    s.gc(at(3600));
    assert_eq!(s.stats().pods, 0);
    assert_eq!(s.stats().containers, 0);
}

#[test]
fn counters_and_clock_steps() {
    let mut s = MetricStore::default();
    s.record_node(&node(10, f64::NAN, 0));
    s.record_node(&node(11, 1.0, 0));
    s.record_node(&node(5, 2.0, 0));
    let c = s.stats().counters;
    assert_eq!(c.not_finite, 1);
    assert_eq!(c.clock_resets, 3, "cpu, memory and memory-with-cache restarted");
    let w = s.window(Entity::Node, Metric::Cpu, at(0), at(100)).unwrap();
    assert_eq!((w.count(), w.last()), (1, 2.0));
}

#[test]
fn ring_wraps_keeping_the_retention() {
    // 10 s pod retention at 1 s: 12 points a ring.
    let mut s = MetricStore::new(StoreConfig {
        pod_retention: Duration::from_secs(10),
        ..Default::default()
    });
    for t in 0..100 {
        s.record_pod(&pod(t, "a", t as f64, 0, 0));
    }
    let w = s.window(Entity::Pod("a"), Metric::Cpu, at(0), at(99)).unwrap();
    assert_eq!(w.count(), 12);
    assert_eq!(w.first_at(), at(88));
    assert_eq!(w.avg(), (88..100).sum::<i64>() as f64 / 12.0);
    // The last 10 s window is complete.
    assert_eq!(s.window(Entity::Pod("a"), Metric::Cpu, at(89), at(99)).unwrap().count(), 11);
    s.assert_capacities();
}

/// Simulates 24 h of 1 s collection: memory reaches its plateau once the
/// longest retention is full and never grows after that.
#[test]
fn memory_is_bounded_over_24_hours() {
    let mut s = MetricStore::default();
    let pods = 4;
    let mut plateau = 0;
    for t in 0..86_400 {
        let samples: Vec<PodSample> =
            (0..pods).map(|i| pod(t, &format!("pod-{i}"), 0.1 * i as f64, 1 << 20, 2)).collect();
        s.record_round(&node(t, 2.0, 1 << 30), &samples);
        if t % 600 == 0 {
            s.record_psi(Entity::Node, at(t), &PsiSample::default());
        }
        if t == 3600 {
            plateau = s.approx_bytes();
        }
        if t > 3600 && t % 3600 == 0 {
            assert_eq!(s.approx_bytes(), plateau, "grew at t={t}");
            s.gc(at(t));
        }
    }
    let stats = s.stats();
    assert_eq!((stats.pods, stats.containers), (4, 8));
    let [node_cap, pod_cap, container_cap, psi_cap] = s.ring_capacities();
    assert_eq!((node_cap, pod_cap, container_cap, psi_cap), (1802, 302, 62, 8));
    // Every ring is full and holds exactly its capacity (PSI without `full`
    // lines: three series).
    assert_eq!(
        stats.points,
        6 * node_cap + 3 * psi_cap + pods * (2 * pod_cap + 2 * 2 * container_cap)
    );
}

fn fill(s: &mut MetricStore, pods: usize, secs: i64) {
    for t in 0..secs {
        let samples: Vec<PodSample> =
            (0..pods).map(|i| pod(t, &format!("{i:036}"), 0.1, 1 << 20, 2)).collect();
        s.record_round(&node(t, 2.0, 1 << 30), &samples);
    }
}

/// Memory is linear in the number of pods and freed when they go.
#[test]
fn memory_is_linear_in_pods_and_freed() {
    let empty = {
        let mut s = MetricStore::default();
        fill(&mut s, 0, 400);
        s.approx_bytes()
    };
    let [_, pod_cap, container_cap, _] = MetricStore::default().ring_capacities();
    // Rings of one pod with two containers, plus keys and map slots.
    let rings = (2 * pod_cap + 4 * container_cap) * 8;
    let per_pod_bound = rings + 1024;
    let mut last = empty;
    for pods in [10, 50, 150] {
        let mut s = MetricStore::default();
        fill(&mut s, pods, 400);
        let bytes = s.approx_bytes();
        assert!(bytes >= empty + pods * rings, "{pods} pods: {bytes}");
        assert!(bytes <= empty + pods * per_pod_bound, "{pods} pods: {bytes}");
        assert!(bytes > last);
        last = bytes;
        if pods == 150 {
            // The budget: well under 3 MiB for 150 pods × 2 containers.
            assert!(bytes < 2 << 20, "150 pods: {bytes} bytes");
            s.remove_pod(&format!("{:036}", 0));
            assert_eq!(s.stats().pods, 149);
            assert_eq!(s.stats().containers, 298);
            s.retain_pods(|uid| uid.ends_with('7'));
            assert_eq!(s.stats().pods, 15);
            assert_eq!(s.stats().containers, 30);
            s.retain_pods(|_| false);
            s.gc(at(400));
            assert_eq!(s.approx_bytes(), empty, "everything of the pods is freed");
        }
    }
}

#[test]
fn gc_frees_stale_series_only() {
    let mut s = MetricStore::default();
    s.record_pod(&pod(0, "old", 1.0, 0, 1));
    s.record_pod(&pod(290, "new", 1.0, 0, 1));
    s.gc(at(300));
    assert_eq!((s.stats().pods, s.stats().containers), (2, 1), "old container (60 s) went");
    s.gc(at(301));
    assert_eq!(s.pod_uids().collect::<Vec<_>>(), vec!["new"]);
}

#[test]
fn reconfigure_resizes_rings() {
    let mut s = MetricStore::default();
    fill(&mut s, 2, 400);
    let before = s.approx_bytes();
    s.reconfigure(StoreConfig { pod_retention: Duration::from_secs(60), ..Default::default() });
    assert!(s.approx_bytes() < before);
    s.assert_capacities();
    let w = s.window(Entity::Pod(&format!("{:036}", 1)), Metric::Cpu, at(0), at(400)).unwrap();
    assert_eq!(w.count(), 62);
    assert_eq!(w.last_at(), at(399));
}

#[test]
fn retention_is_capped() {
    let s = MetricStore::new(StoreConfig {
        node_retention: Duration::from_secs(1_000_000),
        ..Default::default()
    });
    assert_eq!(s.ring_capacities()[0], 7202);
}
