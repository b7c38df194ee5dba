//! InfluxDB under pico-kafka: the smoke test's `influxdb` sink section and read-back, through
//! the conformance target's store.

use crate::destinations::runtime::{Runtime, ServedRuntime, boxed};
use crate::provide::first_available;

/// Its entry in the crash suite: keyed on the record identity (series and time), smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "influxdb",
    serde_name: "influxdb",
    keyed: true,
    replays_told_per_record: false,
    smoke: true,
    provide: || boxed(provide),
};

/// An InfluxDB through the first kind that works.
async fn provide() -> Result<ServedRuntime<super::target::InfluxStore>, String> {
    first_available(super::target::serve)
        .await
        .map(ServedRuntime::new)
}
