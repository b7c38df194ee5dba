//! Plumbing shared by the pico-sinks crates that talk to HTTP APIs (the generic HTTP sink,
//! Elasticsearch, Meilisearch, Quickwit, Doris): building a client from [`HttpSettings`],
//! sending a request and reading its whole answer as a [`Reply`] (a transport failure is
//! `Retryable`), `Retry-After`, and short body snippets for messages.

mod client;
mod reply;
mod settings;

pub use client::HttpClient;
pub use reply::{Reply, exchange, retry_after, send_failure, snippet};
pub use settings::{HttpSettings, base_url, header_map, redacted_headers};
