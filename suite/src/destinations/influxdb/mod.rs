//! InfluxDB: its server ([`server`]), the conformance target and the benchmark anchor
//! ([`mod@bench`]).

pub mod bench;
pub mod server;
mod target;

pub use target::InfluxTarget;
