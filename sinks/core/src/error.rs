//! [`SinkError`]: why `consume` (or `open`/`close`) failed; [`RejectedRecord`] and
//! [`DeadLetter`]: records the destination refused.

use std::sync::Arc;
use std::time::Duration;

use crate::batch::Batch;
use crate::record::Record;
use pico_identity::RecordId;
use serde::Serialize;

/// The error a failure came from, kept for `source()`, downcasting and structured logs.
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A record the destination cannot take, with the reason. Sinks report these inside an
/// [`crate::Outcome`]; they are never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RejectedRecord {
    /// The record's identity (topic, partition, offset).
    pub id: RecordId,
    /// Why the destination cannot take it.
    pub reason: String,
    /// The sink cannot tell whether the destination stored it after all (it accepted the
    /// request and then lost or dropped track of the record). `false` means refused: the
    /// destination does not hold it, and replaying it from a dead-letter queue is safe.
    pub may_be_stored: bool,
}

impl RejectedRecord {
    /// The destination refused `id` for `reason` and does not hold it.
    pub fn new(id: RecordId, reason: impl Into<String>) -> Self {
        Self {
            id,
            reason: reason.into(),
            may_be_stored: false,
        }
    }

    /// The sink could not confirm `id` and cannot rule out that the destination holds it.
    pub fn uncertain(id: RecordId, reason: impl Into<String>) -> Self {
        Self {
            may_be_stored: true,
            ..Self::new(id, reason)
        }
    }
}

/// A refused record with everything a dead-letter queue needs: the whole record (identity,
/// key, value, headers, timestamp) and the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DeadLetter {
    /// The record as the runtime handed it to the sink.
    pub record: Record,
    /// Why the destination cannot take it.
    pub reason: String,
    /// The destination may hold it after all (see [`RejectedRecord::may_be_stored`]).
    pub may_be_stored: bool,
}

impl DeadLetter {
    /// The dead letters of `rejected`, each with its record looked up in `batch`. A rejection
    /// naming an offset the batch does not hold (a sink bug) still becomes a dead letter, with
    /// an empty value and the reason saying so, so that nothing disappears.
    pub fn from_batch(batch: &Batch, rejected: &[RejectedRecord]) -> Vec<DeadLetter> {
        rejected
            .iter()
            .map(|r| match batch.get(r.id.offset) {
                Some(record) if record.id == r.id => DeadLetter {
                    record: record.clone(),
                    reason: r.reason.clone(),
                    may_be_stored: r.may_be_stored,
                },
                _ => DeadLetter {
                    record: Record::new(r.id.clone(), bytes::Bytes::new()),
                    reason: format!("{} (the sink named a record not in the batch)", r.reason),
                    may_be_stored: r.may_be_stored,
                },
            })
            .collect()
    }
}

/// How `consume`, `open` or `close` failed. Records the destination refuses are not errors:
/// they come back in [`crate::Outcome::rejected`].
///
/// Both variants keep the error they came from as [`std::error::Error::source`] (the original
/// error, so `downcast_ref` works); use [`SinkError::is_retryable`] and
/// [`SinkError::retry_after`] in a loop of your own.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SinkError {
    /// A transient failure: the same batch may succeed later. Nothing is known to be written,
    /// or what was written is safe to write again.
    #[non_exhaustive]
    Retryable {
        /// What failed.
        message: String,
        /// How long the destination asked us to wait, if it said (e.g. `Retry-After`).
        retry_after: Option<Duration>,
        /// The underlying error, if any.
        source: Option<ErrorSource>,
    },
    /// Misconfiguration or a destination state the sink cannot fix by retrying; the message
    /// says what to change.
    #[non_exhaustive]
    Fatal {
        /// What is wrong and what to change.
        message: String,
        /// The underlying error, if any.
        source: Option<ErrorSource>,
    },
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Retryable { message, .. } => write!(f, "retryable: {message}"),
            Self::Fatal { message, .. } => write!(f, "fatal: {message}"),
        }
    }
}

// Written by hand rather than derived: a derived `source()` would hand out the `Arc` itself,
// and `downcast_ref` on it would never find the original error type.
impl std::error::Error for SinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Retryable { source, .. } | Self::Fatal { source, .. } => source
                .as_deref()
                .map(|s| s as &(dyn std::error::Error + 'static)),
        }
    }
}

impl SinkError {
    /// A retryable error without a server-given delay.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self::Retryable {
            message: message.into(),
            retry_after: None,
            source: None,
        }
    }

    /// A fatal error; say what to change.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::Fatal {
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the error this one came from (kept as `source()`).
    pub fn with_source(mut self, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        let new: ErrorSource = Arc::new(error);
        match &mut self {
            Self::Retryable { source, .. } | Self::Fatal { source, .. } => *source = Some(new),
        }
        self
    }

    /// Sets the delay the destination asked for (only meaningful on a retryable error).
    pub fn with_retry_after(mut self, delay: Option<Duration>) -> Self {
        if let Self::Retryable { retry_after, .. } = &mut self {
            *retry_after = delay;
        }
        self
    }

    /// Whether the same batch may succeed if tried again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable { .. })
    }

    /// Whether no retry can help (misconfiguration): stop and fix what the message says.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Fatal { .. })
    }

    /// How long the destination asked to wait before the next attempt, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Retryable { retry_after, .. } => *retry_after,
            Self::Fatal { .. } => None,
        }
    }

    /// The message without the underlying error.
    pub fn message(&self) -> &str {
        match self {
            Self::Retryable { message, .. } | Self::Fatal { message, .. } => message,
        }
    }
}

/// Converts every record of `batch` with `convert(index, record)`; a record it refuses becomes
/// a rejection with its identity and the reason. Sinks use it to validate a batch up front.
pub fn convert_records<'a, T>(
    batch: &'a crate::Batch,
    mut convert: impl FnMut(usize, &'a crate::Record) -> Result<T, String>,
) -> (Vec<T>, Vec<RejectedRecord>) {
    let mut ok = Vec::with_capacity(batch.len());
    let mut rejected = Vec::new();
    for (index, record) in batch.records().iter().enumerate() {
        match convert(index, record) {
            Ok(t) => ok.push(t),
            Err(reason) => rejected.push(RejectedRecord::new(record.id.clone(), reason)),
        }
    }
    (ok, rejected)
}

/// An error with its chain of sources, for messages (client errors often hide the useful part,
/// such as "connection refused", in a source). A source whose text the message already holds
/// is not repeated (clients often quote their source in their own text).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Refused;

    #[test]
    fn the_source_is_kept_and_can_be_downcast() {
        let e = SinkError::retryable("sending the batch").with_source(Refused);
        assert!(e.is_retryable());
        let source = e.source().expect("a source");
        assert!(source.downcast_ref::<Refused>().is_some());
        assert_eq!(
            error_chain(&e),
            "retryable: sending the batch: connection refused"
        );
        assert_eq!(e.message(), "sending the batch");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("error connecting to server: {0} (and then some)")]
    struct Quoting(#[source] Refused);

    #[test]
    fn a_source_quoted_anywhere_in_the_text_is_not_repeated() {
        let e = SinkError::retryable("connecting to db:5432/x").with_source(Quoting(Refused));
        let chain = error_chain(&e);
        assert_eq!(chain.matches("connection refused").count(), 1, "{chain}");
        assert!(chain.ends_with("(and then some)"), "{chain}");
    }

    #[test]
    fn retry_after_only_on_retryable() {
        let wait = Some(Duration::from_secs(3));
        assert_eq!(
            SinkError::retryable("429")
                .with_retry_after(wait)
                .retry_after(),
            wait
        );
        let fatal = SinkError::fatal("bad url").with_retry_after(wait);
        assert_eq!(fatal.retry_after(), None);
        assert!(fatal.is_fatal() && !fatal.is_retryable());
    }

    #[test]
    fn dead_letters_carry_the_whole_record() {
        let batch = Batch::new(
            (0..3)
                .map(|o| {
                    Record::new(RecordId::new("t", 1, o), format!("v{o}"))
                        .with_key("k")
                        .with_header("h", "x")
                        .with_timestamp_ms(5)
                })
                .collect(),
        )
        .expect("valid batch");
        let letters = DeadLetter::from_batch(
            &batch,
            &[
                RejectedRecord::new(RecordId::new("t", 1, 1), "too big"),
                RejectedRecord::new(RecordId::new("t", 1, 9), "odd"),
            ],
        );
        assert_eq!(letters[0].record, batch.records()[1]);
        assert_eq!(letters[0].reason, "too big");
        assert_eq!(letters[1].record.id, RecordId::new("t", 1, 9));
        assert!(letters[1].reason.contains("not in the batch"));
    }
}
