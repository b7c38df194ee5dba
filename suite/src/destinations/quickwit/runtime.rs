//! Quickwit under pico-kafka: the smoke test's `quickwit` sink section and read-back, through
//! the conformance target's store.

use crate::destinations::runtime::{Runtime, ServedRuntime, boxed};
use crate::provide::first_available;

/// Its entry in the crash suite: keyed on the record identity (the sink's own dedupe), smoke
/// test.
pub const RUNTIME: Runtime = Runtime {
    id: "quickwit",
    serde_name: "quickwit",
    keyed: true,
    replays_told_per_record: false,
    smoke: true,
    provide: || boxed(provide),
};

/// A Quickwit node through the first kind that works.
async fn provide() -> Result<ServedRuntime<super::target::Qw>, String> {
    first_available(super::target::serve)
        .await
        .map(ServedRuntime::new)
}
