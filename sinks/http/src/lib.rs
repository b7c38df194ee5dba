//! A sink that POSTs each batch to an HTTP endpoint with an `Idempotency-Key` derived from the
//! batch identity (draft-ietf-httpapi-idempotency-key-header).
//!
//! The key is a function of `[namespace/]topic:partition:first..=last` only, so a replay of the
//! same batch — from this process or a new one — carries the same key, and an endpoint that
//! honours the header stores it once. What this can and cannot cover:
//!
//! * **Same batch replayed** (crash before commit, lost response, retry): no duplicate at an
//!   endpoint that honours the key; the batch is stored again at one that ignores it.
//! * **Re-batched replay** (`[0..99]` then `[50..149]`): the second batch has another key, so its
//!   overlap is stored again even by a key-honouring endpoint. Only the records carry a stable
//!   identity there (`pico_id` in every element), which the endpoint can dedupe on.
//! * **Too-large or malformed batches** (413, 400): the batch is split in halves, each half with
//!   its own deterministic key, down to single records; a single record still refused is
//!   reported in [`pico_sink::Outcome::rejected`] with its offset and the endpoint's reason.
//!
//! Status mapping: 2xx success; 409 (same key in flight), 408, 425, 429, 5xx → `Retryable`
//! (honouring `Retry-After`); 422 (key reused with another payload) → `Fatal` naming the key;
//! 401/403/404/405 and other 4xx → `Fatal` saying what to check.
//!
//! ```no_run
//! use pico_sink::driver::{Driver, MemoryHooks};
//! use pico_sink::{Batch, Record};
//! use pico_sink::identity::RecordId;
//! use pico_sink_http::{HttpSink, HttpSinkConfig};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let sink = HttpSink::new(HttpSinkConfig::new("http://127.0.0.1:8080/ingest"))?;
//! let mut driver = Driver::new(sink);
//! driver.open().await?;
//! let batch = Batch::new(vec![Record::new(RecordId::new("orders", 0, 0), "{\"total\":3}")])?;
//! driver.deliver(&batch, &mut MemoryHooks::default()).await?;
//! # Ok(()) }
//! ```

mod config;
mod request;
mod response;
mod sink;

/// The HTTP client the sink is built on, so a caller's own client has the same version.
pub use reqwest;

pub use config::{BodyFormat, HttpSinkConfig};
pub use sink::HttpSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
