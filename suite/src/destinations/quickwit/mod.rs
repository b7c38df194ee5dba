//! Quickwit: the conformance target, and [`start`], the node the benchmark also runs on.

mod target;

pub use target::{QuickwitTarget, start};
