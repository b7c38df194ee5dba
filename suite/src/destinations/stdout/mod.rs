//! JSON lines on a captured writer: the conformance target; and on the output of pico-kafka
//! processes: the crash suite's smoke test.

pub mod runtime;
mod target;

pub use target::StdoutTarget;
