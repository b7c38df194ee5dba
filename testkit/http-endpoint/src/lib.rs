//! A real HTTP ingest endpoint for testing HTTP sinks: it stores what is POSTed and serves it
//! back, and either honours `Idempotency-Key` as draft-ietf-httpapi-idempotency-key-header
//! describes or ignores it.
//!
//! * `POST /ingest` — a JSON array (`application/json`) or JSON lines (`application/x-ndjson`)
//!   of objects. With [`KeyPolicy::Honour`]: a missing key is 400; a key seen with the same body
//!   gets the first answer again (with `Idempotent-Replayed: true`) and stores nothing; a key
//!   seen with another body is 422; a key whose first request is still being processed is 409.
//!   Answered keys are forgotten after [`EndpointConfig::key_retention`] (24 h by default;
//!   [`Endpoint::age_keys`] moves the key clock ahead in tests).
//!   With [`KeyPolicy::Ignore`] every request is stored.
//!   An element larger than [`EndpointConfig::max_element_bytes`] makes the request 413.
//! * `GET /records` — every stored element, in arrival order, as one JSON array.
//! * `GET /stats` — request counters ([`Stats`]).

mod server;
mod state;

pub use server::{Endpoint, EndpointConfig, KEY_RETENTION, KeyPolicy};
pub use state::Stats;
