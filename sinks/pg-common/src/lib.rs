//! Pieces shared by the pico-sinks sinks that speak the PostgreSQL protocol (Postgres,
//! Redshift): a small connection pool with optional rustls TLS, SQLSTATE classification onto
//! the sink contract, identifier quoting, and mapped-column extraction from JSON payloads.

mod classify;
mod connect;
mod ident;
mod mapping;
mod record;

pub use classify::{Failure, classify};
pub use connect::{Checkout, ConnectionConfig, Pool, PoolError, connect_pool, pool_error};
pub use ident::{QualifiedTable, quote_ident, quote_literal};
pub use mapping::{ConflictAction, extract_mapped};
pub use pico_sink::MappedColumn;
pub use record::{CommonFields, common_fields, json_has_nul};
