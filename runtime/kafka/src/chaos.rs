//! Sink wrappers for crash tests: [`PanicOnce`] panics inside one `consume` (the process
//! aborts and resumes from the committed offset); [`HoldAfterWrite`] says when a batch is
//! written and holds it before its commit, so a kill lands between the two.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

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

/// Once the inner sink confirmed a batch: appends the batch id as a line to `written`, then
/// waits `hold` before returning (and so before the runtime commits the batch's offset).
pub struct HoldAfterWrite<S> {
    inner: S,
    written: PathBuf,
    hold: Duration,
}

impl<S> HoldAfterWrite<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, written: impl Into<PathBuf>, hold: Duration) -> Self {
        Self {
            inner,
            written: written.into(),
            hold,
        }
    }

    fn tell_written(&self, batch: &Batch) -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.written)?;
        writeln!(file, "{}", batch.id())
    }
}

#[async_trait]
impl<S: Sink> Sink for HoldAfterWrite<S> {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let outcome = self.inner.consume(batch).await?;
        if let Err(e) = self.tell_written(batch) {
            tracing::warn!(file = %self.written.display(), error = %e, "chaos: cannot append to written_file");
        }
        tokio::time::sleep(self.hold).await;
        Ok(outcome)
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
