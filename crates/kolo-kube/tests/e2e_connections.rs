//! End-to-end: a client from `kolo_kube::client` keeps within its bound of
//! TCP connections to a real kube-apiserver while 200 requests are in
//! flight at once (and a watch holds a connection), and every request
//! succeeds; kube's default client, for contrast, opens a connection per
//! request in flight.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kolo_kube::client::{ConnectionLimits, bounded_client, established_connections};
use kube::Api;
use kube::runtime::watcher;

const REQUESTS: usize = 200;

fn kubeconfig() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("KOLO_TEST_KUBECONFIG").map(Into::into);
    if path.is_none() {
        // Straight to stderr, past the harness's capture, so the skip shows.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED e2e_connections test: KOLO_TEST_KUBECONFIG is not set. \
             Run scripts/test (which starts a test cluster) to run it. ***"
        );
    }
    path
}

async fn config(path: &std::path::Path) -> kube::Config {
    kolo_kube::client::config(Some(path)).await.unwrap()
}

/// Samples this process's established connections to `port` every 2 ms
/// until `stop`, and returns the most seen at once.
fn sample_peak(port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(established_connections(std::process::id(), port).unwrap());
            std::thread::sleep(Duration::from_millis(2));
        }
        peak
    })
}

/// Sends `REQUESTS` GETs at once through `client`; returns how many
/// succeeded and the peak of established connections meanwhile.
async fn burst(client: kube::Client, port: u16) -> (usize, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak(port, stop.clone());
    let ok = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let (api, ok) = (Api::<Namespace>::all(client.clone()), ok.clone());
            tokio::spawn(async move {
                if api.get("default").await.is_ok() {
                    ok.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    // Let the sampler see the connections as they are after the burst.
    tokio::time::sleep(Duration::from_millis(20)).await;
    stop.store(true, Ordering::Relaxed);
    (ok.load(Ordering::Relaxed), sampler.join().unwrap())
}

/// Connections the server may close and the client reopen during a burst.
const REOPENED: u64 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_keep_within_the_connection_bound() {
    let Some(path) = kubeconfig() else { return };
    let config = config(&path).await;
    let port = config.cluster_url.port_u16().unwrap_or(443);
    let limits = ConnectionLimits { max_connections: 12 };
    let (client, counter) = bounded_client(config.clone(), limits).unwrap();

    // A watch holds one of the 12 connections throughout (12 is the least
    // a client may be limited to).
    let watch = {
        let api = Api::<Namespace>::all(client.clone());
        tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
            while events.next().await.is_some() {}
        })
    };
    let (ok, peak) = burst(client.clone(), port).await;
    assert_eq!(ok, REQUESTS, "every request succeeds");
    eprintln!("bounded client: {peak} connections at once for {REQUESTS} requests");
    assert!(peak <= 12, "{peak} connections at once, bound 12");
    assert!(peak >= 2, "the sampler saw the watch and requests ({peak})");
    // Connections are reused: a few more than the bound may be opened over
    // the run, since the API server may close a kept-alive connection (one
    // CI run saw 13), but nowhere near one per request.
    let opened = counter.opened();
    assert!(opened <= 12 + REOPENED, "{opened} connections opened for {REQUESTS} requests");
    // A second burst reuses the idle connections.
    let (ok, _) = burst(client.clone(), port).await;
    assert_eq!(ok, REQUESTS);
    let again = counter.opened() - opened;
    assert!(again <= REOPENED, "{again} new connections for the second burst of {REQUESTS}");
    watch.abort();

    // kube's default stack, for contrast: a connection per request in
    // flight (what the bound is for).
    let unbounded = kube::Client::try_from(config).unwrap();
    let (ok, peak) = burst(unbounded, port).await;
    assert_eq!(ok, REQUESTS);
    eprintln!("kube's default client: {peak} connections at once for {REQUESTS} requests");
    assert!(peak > 16, "kube's default client opened only {peak} connections");
}
