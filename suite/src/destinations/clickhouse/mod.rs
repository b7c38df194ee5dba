//! ClickHouse: its server ([`server`]), the conformance target, the read-back of a table that
//! the crash suite shares, and the benchmark anchor ([`mod@bench`]).

pub mod bench;
pub mod runtime;
pub mod server;
mod target;

pub use target::ClickHouseTarget;
pub(crate) use target::read_rows;
