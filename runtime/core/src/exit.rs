//! How a run ends, and the process exit code each end gives a supervisor.

/// How a runtime's run ended (pico-kafka: `pico_kafka::run`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Shut down on request: everything read was delivered and committed.
    Drained,
    /// A batch kept failing past `retry.max_retry_duration_ms` (or while a drain was
    /// requested), its commit hook failed, or a partition's worker panicked (the text names the
    /// partition and the panic): restart to resume from the committed offset. Exit code 2.
    GaveUp(String),
    /// The sink reported misconfiguration: fix it, then restart. Exit code 3.
    Fatal(String),
    /// Records were refused and there is no dead-letter topic (or producing to it failed):
    /// nothing was committed past them. Exit code 4.
    Refused(String),
}

impl Exit {
    /// The process exit code for this end.
    pub fn code(&self) -> i32 {
        match self {
            Exit::Drained => 0,
            Exit::GaveUp(_) => 2,
            Exit::Fatal(_) => 3,
            Exit::Refused(_) => 4,
        }
    }
}

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}
