//! Sink wrappers for crash tests: [`PanicOnce`] panics inside one `consume` once it wrote part
//! of the batch (its worker stops the run, the process exits and resumes from the committed
//! offset); [`HoldAfterWrite`] says when a batch is written and holds it before its commit, so
//! a kill lands between the two.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use pico_sink::{Batch, Description, Outcome, Sink, SinkError};

/// Inside the first `consume` after start, if `marker` does not exist: writes the first half
/// of the batch (at least one record) through the inner sink, records what it wrote in
/// `marker` ([`CutBatch`]), waits `hold` (the process still owns its partitions, nothing of the
/// batch is committed) and panics, so the run ends (`Exit::GaveUp`, exit code 2) with part of
/// a batch in the destination. Once the marker exists, nothing happens: a restarted process
/// runs normally.
pub struct PanicOnce<S> {
    inner: S,
    marker: PathBuf,
    hold: Duration,
}

impl<S> PanicOnce<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, marker: impl Into<PathBuf>, hold: Duration) -> Self {
        Self {
            inner,
            marker: marker.into(),
            hold,
        }
    }
}

/// What [`PanicOnce`] wrote of the batch it panicked in, as its marker file holds it: one line
/// `partition first last_written last refused`, then the batch id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutBatch {
    /// The batch's partition.
    pub partition: u32,
    /// The batch's first offset.
    pub first: u64,
    /// The last offset written before the panic.
    pub last_written: u64,
    /// The batch's last offset.
    pub last: u64,
    /// Records of the written part the inner sink refused (they are not in the destination).
    pub refused: u64,
}

impl CutBatch {
    /// The marker file's text.
    pub fn to_marker(self, batch: &Batch) -> String {
        format!(
            "{} {} {} {} {}\n{}\n",
            self.partition,
            self.first,
            self.last_written,
            self.last,
            self.refused,
            batch.id()
        )
    }

    /// Reads a marker file's text back (a marker without the refused count refused none).
    pub fn from_marker(text: &str) -> Option<Self> {
        let mut n = text
            .lines()
            .next()?
            .split_whitespace()
            .map(str::parse::<u64>);
        let mut next = || n.next().and_then(Result::ok);
        Some(Self {
            partition: u32::try_from(next()?).ok()?,
            first: next()?,
            last_written: next()?,
            last: next()?,
            refused: next().unwrap_or(0),
        })
    }
}

/// The first half of `batch` (at least one record), and what it covers.
fn first_half(batch: &Batch) -> Result<(Batch, CutBatch), SinkError> {
    let records = batch.records();
    let half = records.len().div_ceil(2).max(1);
    let prefix = Batch::new(records[..half].to_vec())
        .map_err(|e| SinkError::fatal(format!("chaos: cutting batch {}: {e}", batch.id())))?;
    let offset = |r: Option<&pico_sink::Record>| r.map_or(0, |r| r.id.offset);
    let cut = CutBatch {
        partition: batch.partition(),
        first: offset(records.first()),
        last_written: offset(prefix.records().last()),
        last: offset(records.last()),
        refused: 0,
    };
    Ok((prefix, cut))
}

#[async_trait]
impl<S: Sink> Sink for PanicOnce<S> {
    async fn open(&self) -> Result<(), SinkError> {
        self.inner.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        if self.marker.exists() || batch.is_empty() {
            return self.inner.consume(batch).await;
        }
        let (prefix, mut cut) = first_half(batch)?;
        // A failure here is the inner sink's: the runtime retries the whole batch, cut again.
        cut.refused = self.inner.consume(&prefix).await?.rejected.len() as u64;
        if let Err(e) = std::fs::write(&self.marker, cut.to_marker(batch)) {
            tracing::warn!(file = %self.marker.display(), error = %e, "chaos: cannot write panic_once_file; not panicking");
            return self.inner.consume(batch).await;
        }
        tokio::time::sleep(self.hold).await;
        panic!(
            "chaos: a sink panics inside consume of {} after writing offsets {}..={} \
             (panic_once_file {})",
            batch.id(),
            cut.first,
            cut.last_written,
            self.marker.display()
        );
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use pico_sink::identity::Scope;
    use pico_sink::testing::batch_with;
    use pico_sink::{Batch, Sink};
    use pico_sink_stdout::StdoutSink;

    use super::{CutBatch, PanicOnce};

    fn batch(records: u64) -> Batch {
        batch_with("t", 3, 10..=9 + records, |o| format!("v{o}"))
    }

    fn lines(sink: &PanicOnce<StdoutSink<Vec<u8>>>) -> usize {
        sink.inner
            .with_writer(|w| String::from_utf8_lossy(w).lines().count())
    }

    #[tokio::test]
    async fn the_panic_comes_after_half_the_batch_is_written_and_only_once() {
        let marker = std::env::temp_dir().join(format!("pico-panic-once-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let sink = Arc::new(PanicOnce::new(
            StdoutSink::to_writer(Vec::new(), Scope::default()),
            &marker,
            std::time::Duration::ZERO,
        ));
        let first = {
            let sink = sink.clone();
            tokio::spawn(async move { sink.consume(&batch(5)).await })
        };
        let failed = first.await.unwrap_err();
        assert!(failed.is_panic(), "the first consume must panic");
        assert_eq!(
            lines(&sink),
            3,
            "three of five records written before the panic"
        );
        let cut = CutBatch::from_marker(&std::fs::read_to_string(&marker).unwrap()).unwrap();
        assert_eq!(
            cut,
            CutBatch {
                partition: 3,
                first: 10,
                last_written: 12,
                last: 14,
                refused: 0
            }
        );
        sink.consume(&batch(5)).await.unwrap();
        assert_eq!(
            lines(&sink),
            8,
            "the marker exists: the whole batch goes through"
        );
        std::fs::remove_file(&marker).unwrap();
    }
}
