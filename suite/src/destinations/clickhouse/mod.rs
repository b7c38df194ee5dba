//! ClickHouse: its server ([`server`]), the conformance target, the read-back of a table, the
//! destination pico-kafka writes into in the crash suite ([`runtime`]) and the benchmark anchor
//! ([`mod@bench`]).

pub mod bench;
pub mod runtime;
pub mod server;
mod target;

pub use target::ClickHouseTarget;
pub(crate) use target::read_rows;
