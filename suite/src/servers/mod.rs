//! Servers the providers start or connect to, shared by the targets that use them.

pub mod binary;
pub mod clickhouse;
pub mod container;
pub mod influxdb;
pub mod kafka;
pub mod postgres;
pub mod reaper;
pub mod s3;
