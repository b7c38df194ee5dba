//! An Apache Doris sink: Stream Load with a label derived from the batch identity, into a Unique
//! Key table keyed by the record identity.
//!
//! Two mechanisms, each covering what the other cannot:
//!
//! * **Label** — every Stream Load carries
//!   [`pico_sink::identity::Scope::doris_label`]`(batch)` (`[ns/]topic:partition:first..=last`
//!   in Doris's label alphabet, SHA-256-shortened above 128 characters). Doris runs a label at
//!   most once: a replay of the same batch answers `Label Already Exists`. With
//!   `ExistingJobStatus` `FINISHED` the sink reports the batch as already present; while the
//!   first load is still `RUNNING` it waits and asks again (up to
//!   [`DorisSinkConfig::label_wait`], then `Retryable`).
//! * **Unique Key model** — the table's key is `(pico_topic, pico_partition, pico_offset)`, so a
//!   re-batched replay (another label) or a replay after the label expired replaces rows with
//!   identical content instead of adding them. Labels are kept for `label_keep_max_second` on
//!   the FE (3 days by default); after that only the unique key protects.
//!
//! A load is all-or-nothing with `max_filter_ratio` 0: when Doris filters rows (a value too long
//! for `STRING`, a bad type), the batch is split in halves — each half with its own label —
//! down to the offending records, which are rejected with their offsets and Doris's message.
//! Values and keys travel as text: a non-UTF-8 payload is rejected (Doris `STRING` over a JSON
//! load carries text), with its offset.
//!
//! Transport: `PUT /api/{db}/{table}/_stream_load` on the FE with `Expect: 100-continue`; the FE
//! answers `307` to a BE, and the sink repeats the request there itself, because HTTP clients
//! drop credentials on a redirect to another host. The BE address is the one the FE
//! advertises, which must be reachable from the sink (or set
//! [`DorisSinkConfig::load_url`] to load through one BE directly).
//!
//! With [`DorisSinkConfig::create_table`] the sink creates the database and table through the
//! FE's SQL endpoint (`/api/query/default_cluster/{db}`).

mod config;
mod load;
mod sink;
mod sql;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::DorisSinkConfig;
pub use sink::DorisSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
