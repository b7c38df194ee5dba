//! The Redshift sink under pico-kafka, on PostgreSQL standing in for Redshift: the smoke test's
//! `redshift` sink section and read-back, through the conformance target's store.

use crate::destinations::runtime::{Runtime, ServedRuntime, boxed};
use crate::provide::first_available;

/// Its entry in the crash suite: keyed on the record identity (its merge), smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "redshift",
    serde_name: "redshift",
    keyed: true,
    replays_told_per_record: true,
    smoke: true,
    provide: || boxed(provide),
};

/// PostgreSQL standing in for Redshift, through the first kind that works.
async fn provide() -> Result<ServedRuntime<super::target::PgStore>, String> {
    first_available(super::redshift::serve)
        .await
        .map(ServedRuntime::new)
}
