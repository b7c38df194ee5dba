//! A sink that prints every record as one JSON line carrying its identity.
//!
//! A replay prints the batch again: stdout has no way to refuse a line. The identity
//! (`pico_id`, `pico_topic`, `pico_partition`, `pico_offset`, see [`pico_sink::Envelope`]) is in
//! every line, so a consumer of the output can drop repeats by `pico_id`.
//!
//! ```
//! use pico_sink::identity::RecordId;
//! use pico_sink::{Batch, Record, Sink};
//! use pico_sink_stdout::StdoutSink;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut out = Vec::new();
//! let mut sink = StdoutSink::to_writer(&mut out, Default::default());
//! let batch = Batch::new(vec![Record::new(RecordId::new("orders", 0, 7), "{\"n\":1}")]).unwrap();
//! sink.consume(&batch).await.unwrap();
//! drop(sink);
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     "{\"pico_id\":\"orders:0:7\",\"pico_topic\":\"orders\",\"pico_partition\":0,\"pico_offset\":7,\"value\":{\"json\":{\"n\":1}}}\n"
//! );
//! # });
//! ```

use std::io::{self, Write};

use async_trait::async_trait;
use pico_sink::identity::Scope;
use pico_sink::{Batch, Claim, Description, Envelope, Scenario, Sink, SinkError, WriteReport};
use tracing::debug;

/// Writes JSON lines to any [`Write`] (stdout by default).
pub struct StdoutSink<W: Write + Send> {
    out: W,
    scope: Scope,
    buf: Vec<u8>,
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
            out,
            scope,
            buf: Vec::new(),
        }
    }

    /// The writer.
    pub fn writer(&self) -> &W {
        &self.out
    }

    /// Takes the writer back.
    pub fn into_writer(self) -> W {
        self.out
    }
}

/// Maps an I/O error to the sink contract: a closed pipe cannot recover, anything else may.
fn io_error(e: io::Error) -> SinkError {
    match e.kind() {
        io::ErrorKind::BrokenPipe => SinkError::fatal(format!(
            "output closed ({e}): whatever reads this sink's output has gone away"
        )),
        _ => SinkError::retryable(format!("write failed: {e}")),
    }
}

#[async_trait]
impl<W: Write + Send> Sink for StdoutSink<W> {
    async fn open(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
        self.buf.clear();
        for record in batch.records() {
            let envelope = Envelope::from_record(&self.scope, record);
            serde_json::to_writer(&mut self.buf, &envelope)
                .map_err(|e| SinkError::fatal(format!("cannot serialize record: {e}")))?;
            self.buf.push(b'\n');
        }
        self.out.write_all(&self.buf).map_err(io_error)?;
        self.out.flush().map_err(io_error)?;
        debug!(batch = %batch.id(), "printed");
        Ok(WriteReport {
            written: batch.len() as u64,
            already_present: 0,
        })
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(io_error)
    }

    fn describe(&self) -> Description {
        Description {
            sink: "stdout".into(),
            mechanism: "JSON lines with pico_id/pico_topic/pico_partition/pico_offset in every \
                        line; nothing is refused, a replay prints again and a reader dedupes by \
                        pico_id"
                .into(),
            claims: vec![
                (Scenario::ConcurrentPartitions, Claim::NoVisibleDuplicate),
                (Scenario::BadInput, Claim::NoVisibleDuplicate),
            ],
            default_claim: Claim::Repeats,
        }
    }
}
