//! The [`Sink`] trait.

use async_trait::async_trait;
use serde::Serialize;

use crate::batch::Batch;
use crate::claim::Description;
use crate::error::SinkError;

/// What a successful `consume` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WriteReport {
    /// Records written (or overwritten) by this call.
    pub written: u64,
    /// Records the destination already held, so this call skipped them (watermark, 412, label
    /// already used, ...), where the sink can tell.
    pub already_present: u64,
}

/// A destination adapter.
///
/// Contract:
/// * `consume` returns `Ok` only after the destination has durably accepted every record of the
///   batch (or reported it as already held).
/// * `consume` must be safe to call again with the same or an overlapping batch at any time,
///   from a new process: that is how an at-least-once runtime recovers.
/// * Records the destination cannot take are returned in [`SinkError::Rejected`] with their
///   offsets; they are never dropped silently.
#[async_trait]
pub trait Sink: Send {
    /// Connects and prepares the destination (create-if-missing etc.).
    async fn open(&mut self) -> Result<(), SinkError>;

    /// Writes one batch; see the trait contract.
    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError>;

    /// Flushes and releases resources.
    async fn close(&mut self) -> Result<(), SinkError>;

    /// The mechanism and the behaviour claimed per scenario.
    fn describe(&self) -> Description;
}

#[async_trait]
impl<S: Sink + ?Sized> Sink for Box<S> {
    async fn open(&mut self) -> Result<(), SinkError> {
        (**self).open().await
    }

    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
        (**self).consume(batch).await
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        (**self).close().await
    }

    fn describe(&self) -> Description {
        (**self).describe()
    }
}
