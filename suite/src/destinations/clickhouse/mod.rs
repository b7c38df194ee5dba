//! ClickHouse: its server ([`server`]), the conformance target, and the read-back of a table
//! that the crash suite shares.

pub mod server;
mod target;

pub use target::ClickHouseTarget;
pub(crate) use target::read_rows;
