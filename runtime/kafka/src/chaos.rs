//! [`PanicOnce`]: a sink wrapper that panics inside one `consume`, for tests of what a runtime
//! does when a plugin panics (the process aborts and resumes from the committed offset).

use std::path::PathBuf;

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};

/// Panics inside the first `consume` after start if `marker` does not exist (creating it
/// first, so a restarted process runs normally).
pub struct PanicOnce<S> {
    inner: S,
    marker: PathBuf,
}

impl<S> PanicOnce<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, marker: impl Into<PathBuf>) -> Self {
        Self {
            inner,
            marker: marker.into(),
        }
    }
}

#[async_trait]
impl<S: Sink> Sink for PanicOnce<S> {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if !self.marker.exists() && std::fs::write(&self.marker, batch.id().to_string()).is_ok() {
            panic!(
                "chaos: a sink panics inside consume of {} (panic_once_file {})",
                batch.id(),
                self.marker.display()
            );
        }
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
