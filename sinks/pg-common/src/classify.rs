//! SQLSTATE classes onto the sink contract.

use pico_sink::SinkError;
use tokio_postgres::error::SqlState;

/// What a failed statement means for the batch.
#[derive(Debug, Clone)]
pub enum Failure {
    /// Transient: the connection, the server or a lock; the same batch may succeed.
    Retryable(SinkError),
    /// The data of some record (class 22 data exception, class 23 integrity): find the record
    /// and reject it (the reason).
    Data(String),
    /// Configuration or schema: retrying cannot help; the message says what to change.
    Fatal(SinkError),
}

impl Failure {
    /// Into the sink contract (a `Data` failure of a whole batch is retryable only after the
    /// caller has isolated the record; callers that cannot isolate use this).
    pub fn into_sink_error(self) -> SinkError {
        match self {
            Failure::Retryable(e) | Failure::Fatal(e) => e,
            Failure::Data(m) => SinkError::fatal(m),
        }
    }

    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Failure::Retryable(e) | Failure::Fatal(e) => e.message(),
            Failure::Data(m) => m,
        }
    }
}

/// Classifies an error from `what` (a short description of the statement); the error is kept
/// as the source of the sink error.
pub fn classify(e: tokio_postgres::Error, what: &str) -> Failure {
    let kind = kind_of(&e, what);
    match kind {
        Kind::Retryable(m) => Failure::Retryable(SinkError::retryable(m).with_source(e)),
        Kind::Fatal(m) => Failure::Fatal(SinkError::fatal(m).with_source(e)),
        Kind::Data(m) => Failure::Data(m),
    }
}

enum Kind {
    Retryable(String),
    Data(String),
    Fatal(String),
}

fn kind_of(e: &tokio_postgres::Error, what: &str) -> Kind {
    let Some(db) = e.as_db_error() else {
        // No server answer: I/O, closed connection, timeout, protocol.
        return Kind::Retryable(format!("{what}: {}", pico_sink::kit::error_chain(e)));
    };
    let code = db.code();
    let msg = format!("{what}: {} ({})", db.message(), code.code());
    let detail = db.detail().map(|d| format!(" — {d}")).unwrap_or_default();
    let class = &code.code()[..2];
    if *code == SqlState::UNDEFINED_TABLE {
        return Kind::Fatal(format!(
            "{msg}: the table does not exist — create it, or set create_if_missing = true"
        ));
    }
    if *code == SqlState::UNDEFINED_COLUMN {
        return Kind::Fatal(format!(
            "{msg}: the table lacks a column the sink writes — add it, or point the sink at a table of the documented shape"
        ));
    }
    if *code == SqlState::INVALID_COLUMN_REFERENCE
        || *code == SqlState::DATATYPE_MISMATCH
        || *code == SqlState::CANNOT_COERCE
    {
        return Kind::Fatal(format!(
            "{msg}: a column has the wrong type — fix the table or the sink's column types"
        ));
    }
    match class {
        "08" | "40" | "53" | "55" | "57" | "58" | "XX" => Kind::Retryable(format!("{msg}{detail}")),
        "22" | "23" => Kind::Data(format!("{}{detail}", db.message())),
        "28" => Kind::Fatal(format!("{msg}: check the user and password in the url")),
        "3D" => Kind::Fatal(format!("{msg}: the database in the url does not exist")),
        "3F" => Kind::Fatal(format!(
            "{msg}: the schema does not exist — create it, or set create_if_missing = true"
        )),
        "42" => Kind::Fatal(format!(
            "{msg}{detail}: check the table and the sink's configuration"
        )),
        _ => Kind::Retryable(format!("{msg}{detail}")),
    }
}
