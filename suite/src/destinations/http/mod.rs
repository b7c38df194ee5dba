//! An HTTP endpoint that honours or ignores Idempotency-Key: the conformance target, and the
//! key-honouring endpoint pico-kafka writes into in the crash suite ([`runtime`]).

pub mod runtime;
mod target;

pub use target::HttpTarget;
