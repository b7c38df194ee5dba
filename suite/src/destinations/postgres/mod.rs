//! PostgreSQL: its server ([`server`]), the Postgres target, and the Redshift target, which
//! runs on the same server standing in for Redshift.

mod redshift;
pub mod server;
mod target;

pub use redshift::RedshiftTarget;
pub use target::PostgresTarget;
