//! Ctrl-C and SIGTERM for the commands that make cgroups and processes of
//! their own (`kolo agent demo`, `kolo bench agent-overhead`,
//! `kolo bench interference`): a signal kills the process without running
//! `Drop`, so a watcher thread catches it, removes what the sandboxes made
//! ([`kolo_agent::sandbox::clean_up_after_signal`]) and exits with the
//! shell's status for the signal (130 for SIGINT, 143 for SIGTERM).

use std::io::Write;

/// Starts the watcher; call it before the first sandbox is made.
pub fn clean_up_sandboxes_on_signals() {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "kolo: warning: cannot watch for Ctrl-C: {e}");
            return;
        }
    };
    // Registered here, before returning, so no signal slips through
    // between the return and the watcher thread's start.
    let signals = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    });
    let (mut interrupt, mut terminate) = match signals {
        Ok(signals) => signals,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "kolo: warning: cannot watch for Ctrl-C: {e}");
            return;
        }
    };
    std::thread::spawn(move || {
        let status = runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => 130,
                _ = terminate.recv() => 143,
            }
        });
        let removed = kolo_agent::sandbox::clean_up_after_signal();
        let _ = writeln!(
            std::io::stderr(),
            "kolo: interrupted: killed the sandbox's processes and removed its {removed} cgroup tree(s)"
        );
        std::process::exit(status);
    });
}
