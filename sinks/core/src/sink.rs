//! The [`Sink`] trait and what `consume` returns: [`Outcome`] (with its counts, [`WriteReport`]).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::batch::Batch;
use crate::claim::Description;
use crate::error::{DeadLetter, RejectedRecord, SinkError};
use crate::policy::CommitPolicy;

/// Counts of what a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WriteReport {
    /// Records written (or overwritten) by this call.
    pub written: u64,
    /// Records the destination already held, so this call skipped them (watermark, 412, label
    /// already used, ...), where the sink can tell.
    pub already_present: u64,
}

impl WriteReport {
    /// `n` records written.
    pub fn written(n: usize) -> Self {
        Self {
            written: n as u64,
            already_present: 0,
        }
    }

    /// `n` records found already present.
    pub fn already_present(n: usize) -> Self {
        Self {
            written: 0,
            already_present: n as u64,
        }
    }
}

/// What a successful `consume` did with every record of the batch: written, already present,
/// or rejected (each with its offset and reason). The offset of the batch may be committed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Outcome {
    /// Records written (or overwritten) by this call.
    pub written: u64,
    /// Records the destination already held (skipped), where the sink can tell.
    pub already_present: u64,
    /// Records the destination cannot take, in offset order; hand them to a dead-letter queue
    /// ([`Outcome::dead_letters`] gives them with their records). Nothing else of the batch
    /// was refused.
    pub rejected: Vec<RejectedRecord>,
    /// Records whose identity the destination already held with *another* payload, where the
    /// sink can tell cheaply (0 where it cannot: see its README). They are also counted as
    /// written (overwritten), already present (kept) or rejected, as the sink's configuration
    /// says. Not a replay: a recreated topic (offsets start again at 0), a second cluster
    /// without its own namespace, or an upstream that is not deterministic.
    pub changed: u64,
}

impl Outcome {
    /// The outcome of a write that did `report` and refused `rejected` (sorted by offset here).
    pub fn new(report: WriteReport, mut rejected: Vec<RejectedRecord>) -> Self {
        rejected.sort_by_key(|r| r.id.offset);
        Self {
            written: report.written,
            already_present: report.already_present,
            rejected,
            changed: 0,
        }
    }

    /// The same outcome, with `changed` records found held with another payload.
    pub fn with_changed(mut self, changed: u64) -> Self {
        self.changed = changed;
        self
    }

    /// The counts, without the rejections.
    pub fn report(&self) -> WriteReport {
        WriteReport {
            written: self.written,
            already_present: self.already_present,
        }
    }

    /// Whether every record was taken (written or already present).
    pub fn is_complete(&self) -> bool {
        self.rejected.is_empty()
    }

    /// The rejected records with their whole records from `batch`, for a dead-letter queue.
    pub fn dead_letters(&self, batch: &Batch) -> Vec<DeadLetter> {
        DeadLetter::from_batch(batch, &self.rejected)
    }
}

impl From<WriteReport> for Outcome {
    fn from(report: WriteReport) -> Self {
        Self::new(report, Vec::new())
    }
}

/// A destination adapter. One instance serves every partition of a process: `consume` takes
/// `&self` and may run concurrently for different batches (and even for overlapping batches of
/// one partition, as during a rebalance); per-partition state lives inside the sink behind its
/// own synchronisation. Share it as `Arc<S>` (which is itself a `Sink`).
///
/// Contract:
/// * `consume` returns `Ok` only after the destination has durably accepted every record of the
///   batch that is not listed in [`Outcome::rejected`] (or reported it as already held). The
///   runtime then commits the offset past the batch.
/// * `Err` is only [`SinkError::Retryable`] (deliver the same batch again later, offset
///   unmoved) or [`SinkError::Fatal`] (stop and fix the configuration).
/// * `consume` must be safe to call again with the same or an overlapping batch at any time,
///   from a new process: that is how an at-least-once runtime recovers.
/// * **Cancellation**: dropping a `consume` future at any await point (shutdown, rebalance,
///   timeout) leaves the destination with the batch either not written, partly written or
///   written, never corrupted; redelivering the batch afterwards (to this instance or a new
///   one) converges to what the sink's [`Description`] claims. The conformance suite checks it
///   (scenario `cancelled-consume`).
/// * `open` prepares the destination (create-if-missing, feature detection); it is idempotent,
///   and `consume` calls it implicitly when needed. `close` releases resources; a closed sink
///   is not used again.
#[async_trait]
pub trait Sink: Send + Sync {
    /// Connects and prepares the destination (create-if-missing etc.); idempotent. The default
    /// does nothing: a sink that prepares lazily in `consume` needs no `open`.
    async fn open(&self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Writes one batch; see the trait contract.
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError>;

    /// Flushes and releases resources. The default does nothing: a sink that holds nothing
    /// beyond its clients' own pools needs no `close`.
    async fn close(&self) -> Result<(), SinkError> {
        Ok(())
    }

    /// The mechanism and the behaviour claimed per scenario.
    fn describe(&self) -> Description;

    /// How large a batch this sink wants, where every `consume` is one costly commit (a
    /// lakehouse table commit): a runtime gathers that many records per batch unless told
    /// otherwise. `None` (the default): any batch size suits the sink.
    fn commit_policy(&self) -> Option<CommitPolicy> {
        None
    }
}

macro_rules! forward_sink {
    ($($ptr:ty),*) => {$(
        #[async_trait]
        impl<S: Sink + ?Sized> Sink for $ptr {
            async fn open(&self) -> Result<(), SinkError> {
                (**self).open().await
            }

            async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
                (**self).consume(batch).await
            }

            async fn close(&self) -> Result<(), SinkError> {
                (**self).close().await
            }

            fn describe(&self) -> Description {
                (**self).describe()
            }

            fn commit_policy(&self) -> Option<CommitPolicy> {
                (**self).commit_policy()
            }
        }
    )*};
}

forward_sink!(Box<S>, Arc<S>);
