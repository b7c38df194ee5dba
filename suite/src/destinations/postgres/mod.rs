//! PostgreSQL: its server ([`server`]), the Postgres target, the Redshift target, which runs on
//! the same server standing in for Redshift, and the benchmark anchors of both ([`mod@bench`]).

pub mod bench;
mod redshift;
pub mod runtime;
pub mod server;
mod target;

pub use redshift::RedshiftTarget;
pub use target::PostgresTarget;
