//! A SurrealDB sink that upserts on the record identity.
//!
//! Every record becomes the SurrealDB record `table:[topic, partition, offset]` — the array id
//! of [`pico_sink::identity::Scope::surreal_key`] — written with `UPSERT … CONTENT` inside one
//! transaction per batch. A replay (same batch, other boundaries, a second writer) upserts the
//! same ids: no visible duplicate, and a batch is either all in or not at all.
//!
//! The transaction first reads the stored `pico_digest` of the batch's ids: the outcome tells
//! written from already present, and counts in [`pico_sink::Outcome::changed`] an id held with
//! another payload, which [`SurrealSinkConfig::conflict`] overwrites, keeps or rejects.
//!
//! Works with remote servers (`ws://`, `wss://`) and, with the feature `embedded`, the
//! in-memory engine (`mem://`, the real SurrealDB engine in-process; without the feature a
//! `mem://` URL is refused as `Fatal`). For an embedded store shared by several sinks, build one
//! client and pass clones to [`SurrealSink::with_client`].
//!
//! The content carries `pico_topic`, `pico_partition`, `pico_offset`, `pico_digest`, `key`, `value`,
//! `headers` and `ts` (milliseconds; the names of `pico_identity::columns`); payloads are stored as `{json: …}`, `{text: …}` or
//! `{base64: …}` ([`pico_sink::kit::Payload`]). Offsets above `i64::MAX` are rejected with their
//! offset (SurrealDB integers are signed 64-bit).

mod sink;

/// The client crate the sink is built on, so a caller's own client has the same version.
pub use surrealdb;

pub use sink::{SurrealSink, SurrealSinkConfig};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
