//! A small connection pool, with rustls TLS when the `rustls` feature is on.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod, Runtime};
use serde::{Deserialize, Serialize};

pub use deadpool_postgres::{Pool, PoolError};

/// How to reach the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionConfig {
    /// `postgres://user:password@host:port/db?sslmode=prefer` (key=value strings work too).
    pub url: String,
    /// Connections kept (a sink uses one at a time; more help several sinks in one process).
    pub pool_size: usize,
    /// Connect timeout.
    #[serde(with = "millis")]
    pub connect_timeout: Duration,
    /// PEM file with extra root certificates (a private CA); the webpki roots are always trusted.
    pub tls_ca_file: Option<String>,
}

impl ConnectionConfig {
    /// Defaults for `url`: pool of 2, 10 s connect timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 2,
            connect_timeout: Duration::from_secs(10),
            tls_ca_file: None,
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Builds the pool; a URL that does not parse is `Fatal` naming what is wrong. No connection is
/// made until first use.
pub fn connect_pool(config: &ConnectionConfig) -> Result<Pool, pico_sink::SinkError> {
    let mut pg: tokio_postgres::Config = config.url.parse().map_err(|e| {
        pico_sink::SinkError::fatal(format!(
            "url is not a PostgreSQL connection string ({e}): use postgres://user:password@host:port/database"
        ))
    })?;
    pg.connect_timeout(config.connect_timeout);
    let manager_config = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = make_manager(pg, manager_config, config)?;
    Pool::builder(manager)
        .max_size(config.pool_size.max(1))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| pico_sink::SinkError::fatal(format!("cannot build the pool: {e}")))
}

#[cfg(feature = "rustls")]
fn make_manager(
    pg: tokio_postgres::Config,
    manager_config: ManagerConfig,
    config: &ConnectionConfig,
) -> Result<Manager, pico_sink::SinkError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &config.tls_ca_file {
        let certs = CertificateDer::pem_file_iter(path).map_err(|e| {
            pico_sink::SinkError::fatal(format!("tls_ca_file {path:?} cannot be read: {e}"))
        })?;
        for cert in certs {
            let cert = cert.map_err(|e| {
                pico_sink::SinkError::fatal(format!(
                    "tls_ca_file {path:?} holds a bad certificate: {e}"
                ))
            })?;
            roots
                .add(cert)
                .map_err(|e| pico_sink::SinkError::fatal(format!("tls_ca_file {path:?}: {e}")))?;
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| pico_sink::SinkError::fatal(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
    Ok(Manager::from_config(pg, connector, manager_config))
}

#[cfg(not(feature = "rustls"))]
fn make_manager(
    pg: tokio_postgres::Config,
    manager_config: ManagerConfig,
    _: &ConnectionConfig,
) -> Result<Manager, pico_sink::SinkError> {
    Ok(Manager::from_config(
        pg,
        tokio_postgres::NoTls,
        manager_config,
    ))
}

/// A failure to get a pooled connection, in the sink contract.
pub fn pool_error(e: PoolError) -> pico_sink::SinkError {
    match e {
        PoolError::Backend(e) => crate::classify::classify(&e, "connecting").into_sink_error(),
        other => pico_sink::SinkError::retryable(format!("getting a connection: {other}")),
    }
}
