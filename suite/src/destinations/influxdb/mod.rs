//! InfluxDB: its server ([`server`]) and the conformance target.

pub mod server;
mod target;

pub use target::InfluxTarget;
