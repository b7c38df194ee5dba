//! SQLSTATE classes onto the sink contract.

use tokio_postgres::error::SqlState;

/// What a failed statement means for the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Transient: the connection, the server or a lock; the same batch may succeed.
    Retryable(String),
    /// The data of some record (class 22 data exception, class 23 integrity): find the record
    /// and reject it.
    Data(String),
    /// Configuration or schema: retrying cannot help; the message says what to change.
    Fatal(String),
}

impl Failure {
    /// Into the sink contract (a `Data` failure of a whole batch is retryable only after the
    /// caller has isolated the record; callers that cannot isolate use this).
    pub fn into_sink_error(self) -> pico_sink::SinkError {
        match self {
            Failure::Retryable(m) => pico_sink::SinkError::retryable(m),
            Failure::Data(m) | Failure::Fatal(m) => pico_sink::SinkError::fatal(m),
        }
    }
}

/// Classifies an error from `what` (a short description of the statement).
pub fn classify(e: &tokio_postgres::Error, what: &str) -> Failure {
    let Some(db) = e.as_db_error() else {
        // No server answer: I/O, closed connection, timeout, protocol.
        return Failure::Retryable(format!("{what}: {e}"));
    };
    let code = db.code();
    let msg = format!("{what}: {} ({})", db.message(), code.code());
    let detail = db.detail().map(|d| format!(" — {d}")).unwrap_or_default();
    let class = &code.code()[..2];
    if *code == SqlState::UNDEFINED_TABLE {
        return Failure::Fatal(format!(
            "{msg}: the table does not exist — create it, or set create_if_missing = true"
        ));
    }
    if *code == SqlState::UNDEFINED_COLUMN {
        return Failure::Fatal(format!(
            "{msg}: the table lacks a column the sink writes — add it, or point the sink at a table of the documented shape"
        ));
    }
    if *code == SqlState::INVALID_COLUMN_REFERENCE
        || *code == SqlState::DATATYPE_MISMATCH
        || *code == SqlState::CANNOT_COERCE
    {
        return Failure::Fatal(format!(
            "{msg}: a column has the wrong type — fix the table or the sink's column types"
        ));
    }
    match class {
        "08" | "40" | "53" | "55" | "57" | "58" | "XX" => {
            Failure::Retryable(format!("{msg}{detail}"))
        }
        "22" | "23" => Failure::Data(format!("{}{detail}", db.message())),
        "28" => Failure::Fatal(format!("{msg}: check the user and password in the url")),
        "3D" => Failure::Fatal(format!("{msg}: the database in the url does not exist")),
        "3F" => Failure::Fatal(format!(
            "{msg}: the schema does not exist — create it, or set create_if_missing = true"
        )),
        "42" => Failure::Fatal(format!(
            "{msg}{detail}: check the table and the sink's configuration"
        )),
        _ => Failure::Retryable(format!("{msg}{detail}")),
    }
}
