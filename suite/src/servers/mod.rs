//! Servers the providers start or connect to, shared by the targets that use them.

pub mod clickhouse;
pub mod influxdb;
pub mod kafka;
pub mod postgres;
pub mod s3;
