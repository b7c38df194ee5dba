//! [`SinkError`]: what a sink tells the runtime when `consume` does not fully succeed.

use std::time::Duration;

use pico_identity::RecordId;
use serde::Serialize;
use thiserror::Error;

use crate::sink::WriteReport;

/// A record the destination cannot take, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedRecord {
    /// The record's identity (topic, partition, offset).
    pub id: RecordId,
    /// Why the destination cannot take it.
    pub reason: String,
}

/// How `consume` (or `open`/`close`) failed.
#[derive(Debug, Clone, Error)]
pub enum SinkError {
    /// A transient failure: the same batch may succeed later. Nothing is known to be written, or
    /// what was written is safe to write again.
    #[error("retryable: {message}")]
    Retryable {
        /// What failed.
        message: String,
        /// How long the destination asked us to wait, if it said (e.g. `Retry-After`).
        retry_after: Option<Duration>,
    },
    /// Misconfiguration or a destination state the sink cannot fix by retrying; the message
    /// says what to change.
    #[error("fatal: {message}")]
    Fatal {
        /// What is wrong and what to change.
        message: String,
    },
    /// These records cannot be taken by the destination (bad payload, oversized, ...). Every
    /// other record of the batch was durably written, as `written` reports.
    #[error("{} record(s) rejected, first: {}", records.len(), first_rejection(records))]
    Rejected {
        /// The records refused, each with its reason.
        records: Vec<RejectedRecord>,
        /// What happened to the rest of the batch.
        written: WriteReport,
    },
}

fn first_rejection(records: &[RejectedRecord]) -> String {
    records
        .first()
        .map(|r| format!("{} ({})", r.id, r.reason))
        .unwrap_or_default()
}

impl SinkError {
    /// A retryable error without a server-given delay.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self::Retryable {
            message: message.into(),
            retry_after: None,
        }
    }

    /// A fatal error; say what to change.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::Fatal {
            message: message.into(),
        }
    }

    /// Whether the same batch may succeed if tried again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Retryable { .. })
    }

    /// The outcome of a `consume` that wrote `report` and refused `rejected`: `Ok` when nothing
    /// was refused, otherwise [`SinkError::Rejected`] with the records in offset order.
    pub fn outcome(
        report: WriteReport,
        mut rejected: Vec<RejectedRecord>,
    ) -> Result<WriteReport, SinkError> {
        if rejected.is_empty() {
            Ok(report)
        } else {
            rejected.sort_by_key(|r| r.id.offset);
            Err(SinkError::Rejected {
                records: rejected,
                written: report,
            })
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
            Err(reason) => rejected.push(RejectedRecord {
                id: record.id.clone(),
                reason,
            }),
        }
    }
    (ok, rejected)
}

/// An error with its chain of sources, for messages (client errors often hide the useful part,
/// such as "connection refused", in a source).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
