//! SurrealDB (in-process, docker or a server of yours): the conformance target.

mod target;

pub use target::SurrealTarget;
