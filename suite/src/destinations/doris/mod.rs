//! Apache Doris (docker or a cluster of yours): the conformance target.

mod target;

pub use target::DorisTarget;
