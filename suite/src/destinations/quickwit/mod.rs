//! Quickwit: the conformance target, [`start`], the node the benchmark also runs on, and the
//! benchmark anchor ([`mod@bench`]).

pub mod bench;
mod target;

pub use target::{QuickwitTarget, start};
