//! A partition's commit fence: no offset commit of a partition lands after its revoke returned.
//!
//! The worker's commits run on a blocking thread, which aborting the worker does not stop. A
//! commit still running when the partition is revoked could reach the broker after the new owner
//! committed further, and move the group's offset back. Each commit therefore runs while holding
//! the partition's fence, and the revoke callback closes the fence: closing waits for the
//! commit that holds it, and a commit that has not started yet never starts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// One partition's fence, shared by its worker (which commits through it) and the revoke
/// callback (which closes it).
#[derive(Debug, Default)]
pub struct CommitFence {
    /// Set once the partition is revoked: no commit starts afterwards.
    closed: AtomicBool,
    /// Held by the commit running through the fence.
    running: Mutex<()>,
}

impl CommitFence {
    fn hold(&self) -> MutexGuard<'_, ()> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `commit` unless the fence is closed (then `None`), holding the fence meanwhile: a
    /// [`Self::close`] waits until it returns. Blocks: call it from a blocking thread.
    pub fn run<R>(&self, commit: impl FnOnce() -> R) -> Option<R> {
        let running = self.hold();
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let result = commit();
        drop(running);
        Some(result)
    }

    /// Closes the fence at once: no commit starts through it afterwards. The one running (if
    /// any) goes on: [`Self::close`] waits for it.
    pub fn refuse(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Closes the fence once the commit running through it (if any) returned; no commit starts
    /// through it afterwards.
    pub fn close(&self) {
        self.refuse();
        drop(self.hold());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use super::CommitFence;

    #[test]
    fn an_open_fence_runs_the_commit() {
        let fence = CommitFence::default();
        assert_eq!(fence.run(|| 7), Some(7));
    }

    #[test]
    fn a_closed_fence_starts_no_commit() {
        let fence = CommitFence::default();
        fence.close();
        let ran = AtomicBool::new(false);
        assert_eq!(fence.run(|| ran.store(true, Ordering::SeqCst)), None);
        assert!(!ran.load(Ordering::SeqCst), "a commit ran after the close");
    }

    #[test]
    fn a_refused_fence_starts_no_commit_without_waiting() {
        let fence = CommitFence::default();
        fence.refuse();
        assert_eq!(fence.run(|| 7), None);
    }

    #[test]
    fn closing_waits_for_the_commit_in_flight() {
        let fence = Arc::new(CommitFence::default());
        let landed = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicBool::new(false));
        let commit = {
            let (fence, landed, started) = (fence.clone(), landed.clone(), started.clone());
            std::thread::spawn(move || {
                fence.run(|| {
                    started.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(300));
                    landed.store(true, Ordering::SeqCst);
                })
            })
        };
        let t0 = Instant::now();
        while !started.load(Ordering::SeqCst) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the commit never started"
            );
            std::thread::yield_now();
        }
        fence.close();
        assert!(
            landed.load(Ordering::SeqCst),
            "close returned while the commit was still in flight"
        );
        assert_eq!(commit.join().unwrap(), Some(()));
    }
}
