//! InfluxDB: its server ([`server`]), the conformance target, the benchmark anchor
//! ([`mod@bench`]) and the crash suite's smoke test under pico-kafka.

pub mod bench;
pub mod runtime;
pub mod server;
mod target;

pub use target::InfluxTarget;
