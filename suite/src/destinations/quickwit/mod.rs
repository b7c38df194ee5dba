//! Quickwit: the conformance target, [`start`], the node the benchmark also runs on, the
//! benchmark anchor ([`mod@bench`]) and the crash suite's smoke test under pico-kafka.

pub mod bench;
pub mod runtime;
mod target;

pub(crate) use target::read_index;
pub use target::{QuickwitTarget, start};
