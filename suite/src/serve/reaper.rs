//! Server processes a suite run started, stopped when the run is interrupted.
//!
//! Providers stop their servers when they are dropped, but SIGINT or SIGTERM ends a process
//! without running destructors: an interrupted conformance run left its SeaweedFS running (found
//! twice). Every native server is registered here while it lives ([`Tracked`] for child
//! processes, [`adopt`] for daemons such as PostgreSQL's postmaster), and the suite's binaries
//! run [`stop_on_signal`], which kills what is registered and exits.

use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio::process::Child;

static RUNNING: LazyLock<Mutex<BTreeSet<u32>>> = LazyLock::new(|| Mutex::new(BTreeSet::new()));

fn running() -> MutexGuard<'static, BTreeSet<u32>> {
    // A panic while holding the lock leaves the set itself intact.
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers a server process that is not a [`Tracked`] child, until [`forget`].
pub fn adopt(pid: u32) {
    running().insert(pid);
}

/// Unregisters a process registered with [`adopt`] (it was stopped).
pub fn forget(pid: u32) {
    running().remove(&pid);
}

/// The processes registered now.
pub fn registered() -> Vec<u32> {
    running().iter().copied().collect()
}

/// A server child process, registered from spawn until drop (it derefs to the [`Child`]).
#[derive(Debug)]
pub struct Tracked {
    child: Child,
    pid: Option<u32>,
}

impl Tracked {
    /// Registers `child`.
    pub fn new(child: Child) -> Self {
        let pid = child.id();
        if let Some(pid) = pid {
            adopt(pid);
        }
        Self { child, pid }
    }
}

impl Deref for Tracked {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.child
    }
}

impl DerefMut for Tracked {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            forget(pid);
        }
    }
}

/// Kills every registered process (SIGKILL: they are throwaway servers) and returns how many.
pub fn kill_registered() -> usize {
    let pids = registered();
    kill(&pids);
    pids.len()
}

fn kill(pids: &[u32]) {
    for pid in pids {
        send(*pid, "-KILL");
    }
}

/// Sends `signal` (`kill`'s spelling, e.g. `-QUIT`) to `pid`, reporting a failure to send.
fn send(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
    if let Err(e) = sent {
        eprintln!("could not signal server process {pid}: {e}");
    }
}

/// Stops a process registered with [`adopt`] by `signal` and unregisters it (a daemon whose
/// owner is dropped without stopping it).
pub fn stop_adopted(pid: u32, signal: &str) {
    send(pid, signal);
    forget(pid);
}

/// Waits for SIGINT or SIGTERM, kills every registered server and exits with 128 + the signal.
/// Returns at once (leaving the default behaviour) if the handlers cannot be installed.
pub async fn stop_on_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    let code = tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    };
    let n = kill_registered();
    eprintln!("interrupted: stopped {n} server process(es) this run had started");
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    #[tokio::test]
    async fn a_tracked_child_is_registered_until_dropped_and_killed_on_request() {
        let child = tokio::process::Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("sleep runs");
        let mut tracked = Tracked::new(child);
        let pid = tracked.id().expect("a pid");
        assert!(registered().contains(&pid));
        // Only this pid: other tests of this binary may have servers registered.
        kill(&[pid]);
        let status = tracked.wait().await.expect("waits");
        assert!(!status.success(), "killed, not finished: {status:?}");
        drop(tracked);
        assert!(!registered().contains(&pid));
    }
}
