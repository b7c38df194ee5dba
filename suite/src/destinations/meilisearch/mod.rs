//! Meilisearch (one binary, docker or a server of yours): the conformance target and the crash
//! suite's smoke test under pico-kafka.

pub mod runtime;
mod target;

pub use target::MeilisearchTarget;
