//! Meilisearch (one binary, docker or a server of yours): the conformance target.

mod target;

pub use target::MeilisearchTarget;
