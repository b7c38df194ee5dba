//! PostgreSQL: its server ([`server`]), the Postgres target, the Redshift target, which runs on
//! the same server standing in for Redshift, the destination pico-kafka writes into in the
//! crash suite ([`runtime`]) and the benchmark anchors ([`mod@bench`]).

pub mod bench;
mod redshift;
pub mod redshift_runtime;
pub mod runtime;
pub mod server;
mod target;

pub use redshift::RedshiftTarget;
pub use target::PostgresTarget;
pub(crate) use target::read_table;
