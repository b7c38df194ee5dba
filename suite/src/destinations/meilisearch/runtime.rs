//! Meilisearch under pico-kafka: the smoke test's `meilisearch` sink section and read-back,
//! through the conformance target's store.

use crate::destinations::runtime::{Runtime, ServedRuntime, boxed};
use crate::provide::first_available;

/// Its entry in the crash suite: keyed on the record identity (the document id), smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "meilisearch",
    serde_name: "meilisearch",
    keyed: true,
    replays_told_per_record: false,
    smoke: true,
    provide: || boxed(provide),
};

/// A Meilisearch through the first kind that works.
async fn provide() -> Result<ServedRuntime<super::target::Meili>, String> {
    first_available(super::target::serve)
        .await
        .map(ServedRuntime::new)
}
