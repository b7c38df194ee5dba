//! An HTTP endpoint that honours or ignores Idempotency-Key: the conformance target.

pub mod runtime;
mod target;

pub use target::HttpTarget;
