//! Plumbing shared by the pico-sinks crates that talk to HTTP APIs (the generic HTTP sink, InfluxDB,
//! Elasticsearch, Meilisearch, Quickwit, Doris): building a client from [`HttpSettings`],
//! sending a request and reading its whole answer as a [`Reply`] (a transport failure is
//! `Retryable`), the one table from status to contract ([`StatusClass`], with each sink's
//! [`Advice`]), `Retry-After`, cutting a batch into requests by count and bytes ([`chunks`]),
//! and short body snippets for messages.

mod chunk;
mod client;
mod reply;
mod settings;
mod status;

pub use chunk::chunks;
pub use client::HttpClient;
pub use reply::{Reply, exchange, retry_after, send_failure, snippet};
pub use settings::{HttpSettings, base_url, header_map, redacted_headers};
pub use status::{Advice, StatusClass};
