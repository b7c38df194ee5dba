//! [`Overlap`]: counts the `consume` calls in flight at once across the sinks it wraps — the
//! evidence that a concurrency scenario really wrote concurrently.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};

/// Shared counters of consumes in flight; clone it to wrap several sinks with one count.
#[derive(Debug, Clone, Default)]
pub struct Overlap(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    now: AtomicU64,
    peak: AtomicU64,
}

impl Overlap {
    /// `sink`, passing every call through and counting its consumes here.
    pub fn wrap(&self, sink: Arc<dyn Sink>) -> Arc<dyn Sink> {
        Arc::new(Counted {
            inner: sink,
            overlap: self.clone(),
        })
    }

    /// The most consumes that were in flight at one time.
    pub fn peak(&self) -> u64 {
        self.0.peak.load(Ordering::SeqCst)
    }
}

/// Decrements the in-flight count when the consume ends, however it ends (a dropped future
/// included).
struct InFlight<'a>(&'a Counters);

impl<'a> InFlight<'a> {
    fn enter(c: &'a Counters) -> Self {
        let now = c.now.fetch_add(1, Ordering::SeqCst) + 1;
        c.peak.fetch_max(now, Ordering::SeqCst);
        Self(c)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Counted {
    inner: Arc<dyn Sink>,
    overlap: Overlap,
}

#[async_trait]
impl Sink for Counted {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let _in_flight = InFlight::enter(&self.overlap.0);
        self.inner.consume(batch).await
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.inner.close().await
    }

    fn describe(&self) -> Description {
        self.inner.describe()
    }

    fn commit_policy(&self) -> Option<pico_sink::CommitPolicy> {
        self.inner.commit_policy()
    }
}
