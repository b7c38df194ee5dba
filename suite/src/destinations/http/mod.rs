//! An HTTP endpoint that honours or ignores Idempotency-Key: the conformance target.

mod target;

pub use target::HttpTarget;
