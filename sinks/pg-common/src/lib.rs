//! Pieces shared by the pico-sinks sinks that speak the PostgreSQL protocol (Postgres,
//! Redshift): the sink itself ([`TableSink`]) around what each destination fills in (its
//! [`Dialect`]), a small connection pool with optional rustls TLS, SQLSTATE classification onto
//! the sink contract, identifier quoting, and mapped-column extraction from JSON payloads.

mod classify;
mod connect;
mod dialect;
mod ident;
mod mapping;
mod record;
mod relation;
mod replay;
mod table_sink;

/// The pool crate the sinks are built on, so a caller builds its pool with the same version.
pub use deadpool_postgres;
/// The client crate under the pool, for its `Config`, TLS connectors and error types.
pub use tokio_postgres;

pub use classify::{Failure, classify};
pub use connect::{
    Checkout, ConnectionConfig, Connections, Pool, PoolError, connect_pool, pool_error, target,
};
pub use dialect::{Dialect, Known, Settings};
pub use ident::{QualifiedTable, quote_ident, quote_literal};
pub use mapping::extract_mapped;
pub use pico_sink::kit::MappedColumn;
/// The conflict action and its reason live in the core crate, shared with other sinks.
pub use pico_sink::kit::{CHANGED_REASON, ConflictAction};
pub use record::{CommonFields, common_fields, json_has_nul};
pub use relation::{NameUse, RelationKind};
pub use replay::{
    Probe, batch_sum, changed_in, changed_records, judge as judge_probe, probe_batch, probe_sql,
    record_digest, reject_changed, reject_needs_digest, stored_digests_sql,
};

pub use table_sink::TableSink;
