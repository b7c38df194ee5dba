//! JSON lines on a captured writer: the conformance target.

mod target;

pub use target::StdoutTarget;
