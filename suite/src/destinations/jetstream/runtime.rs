//! JetStream under pico-kafka: the smoke test's `jetstream` sink section and read-back, through
//! the conformance target's store.

use crate::destinations::runtime::{Runtime, ServedRuntime, boxed};

/// Its entry in the crash suite: keyed on the record identity (the message id), and every
/// replayed record inside the window is acknowledged as a duplicate whatever the batch
/// boundaries; smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "jetstream",
    serde_name: "jetstream",
    keyed: true,
    replays_told_per_record: true,
    smoke: true,
    provide: || boxed(provide),
};

/// A nats-server with JetStream on this machine.
async fn provide() -> Result<ServedRuntime<super::target::JetStream>, String> {
    super::target::serve().await.map(ServedRuntime::new)
}
