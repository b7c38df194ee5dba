//! Elasticsearch (docker or a cluster of yours): the conformance target.

mod target;

pub use target::ElasticsearchTarget;
