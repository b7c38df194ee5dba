//! An S3 bucket (on the object store of [`crate::serve::s3`]): the conformance target, the
//! read-back of a prefix, the destination pico-kafka writes into in the crash suite
//! ([`runtime`]) and the benchmark anchor ([`mod@bench`]).

pub mod bench;
pub mod runtime;
mod target;

pub use target::S3Target;
pub(crate) use target::read_objects;
