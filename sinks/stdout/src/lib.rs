//! A sink that prints every record as one JSON line carrying its identity.
//!
//! A replay prints the batch again: stdout has no way to refuse a line. The identity
//! (`pico_id`, `pico_topic`, `pico_partition`, `pico_offset`, see [`pico_sink::kit::Envelope`]) is in
//! every line, so a consumer of the output can drop repeats by `pico_id`.
//!
//! ```
//! use pico_sink::identity::RecordId;
//! use pico_sink::{Batch, Record, Sink};
//! use pico_sink_stdout::StdoutSink;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let sink = StdoutSink::to_writer(Vec::new(), Default::default());
//! let batch = Batch::new(vec![Record::new(RecordId::new("orders", 0, 7), "{\"n\":1}")]).unwrap();
//! sink.consume(&batch).await.unwrap();
//! assert_eq!(
//!     String::from_utf8(sink.into_writer()).unwrap(),
//!     "{\"pico_id\":\"orders:0:7\",\"pico_topic\":\"orders\",\"pico_partition\":0,\"pico_offset\":7,\"value\":{\"json\":{\"n\":1}}}\n"
//! );
//! # });
//! ```

use std::io::{self, Write};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use pico_sink::identity::Scope;
use pico_sink::kit::Envelope;
use pico_sink::{Batch, Claim, Description, Outcome, Scenario, Sink, SinkError, WriteReport};
use tracing::debug;

/// Writes JSON lines to any [`Write`] (stdout by default). Batches of concurrent partitions
/// are written whole, one after the other: lines of two batches never interleave.
pub struct StdoutSink<W: Write + Send> {
    out: Mutex<W>,
    scope: Scope,
}

impl StdoutSink<io::Stdout> {
    /// A sink printing to the process's standard output.
    pub fn stdout(scope: Scope) -> Self {
        Self::to_writer(io::stdout(), scope)
    }
}

impl<W: Write + Send> StdoutSink<W> {
    /// A sink writing to `out`.
    pub fn to_writer(out: W, scope: Scope) -> Self {
        Self {
            out: Mutex::new(out),
            scope,
        }
    }

    /// Runs `f` on the writer (between batches).
    pub fn with_writer<T>(&self, f: impl FnOnce(&mut W) -> T) -> T {
        f(&mut self.lock())
    }

    /// Takes the writer back.
    pub fn into_writer(self) -> W {
        self.out.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, W> {
        // A panic while writing leaves at worst a partial line: the writer stays usable.
        self.out.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Maps an I/O error to the sink contract: a closed pipe cannot recover, anything else may.
fn io_error(e: io::Error) -> SinkError {
    match e.kind() {
        io::ErrorKind::BrokenPipe => {
            SinkError::fatal("output closed: whatever reads this sink's output has gone away")
                .with_source(e)
        }
        _ => SinkError::retryable("writing the output").with_source(e),
    }
}

#[async_trait]
impl<W: Write + Send> Sink for StdoutSink<W> {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        // Serialized before taking the writer; written with one call under the lock, so a
        // future dropped before it wrote nothing and concurrent batches never interleave.
        let mut buf = Vec::with_capacity(batch.len() * 128);
        for record in batch.records() {
            let envelope = Envelope::from_record(&self.scope, record);
            serde_json::to_writer(&mut buf, &envelope).map_err(|e| {
                SinkError::fatal("cannot serialize a record as JSON").with_source(e)
            })?;
            buf.push(b'\n');
        }
        {
            let mut out = self.lock();
            out.write_all(&buf).map_err(io_error)?;
            out.flush().map_err(io_error)?;
        }
        debug!(batch = %batch.id(), "printed");
        Ok(WriteReport::written(batch.len()).into())
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.lock().flush().map_err(io_error)
    }

    fn describe(&self) -> Description {
        Description::new(
            "stdout",
            "JSON lines with pico_id/pico_topic/pico_partition/pico_offset in every line; nothing \
             is refused, a replay prints again and a reader dedupes by pico_id",
            Claim::Repeats,
        )
        .with_claim(Scenario::ConcurrentPartitions, Claim::NoVisibleDuplicate)
        .with_claim(Scenario::BadInput, Claim::NoVisibleDuplicate)
    }
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
