//! A connection pool, with rustls TLS when the `rustls` feature is on, and [`Checkout`]: a
//! pooled connection that never goes back to the pool in an unknown state.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, RecyclingMethod, Runtime};
use serde::{Deserialize, Serialize};

pub use deadpool_postgres::{Pool, PoolError};

/// How to reach the server. `Debug` redacts the password in `url`. In a configuration file (a
/// sink's `connection` table) `url` is required, the rest defaults as
/// [`ConnectionConfig::new`] says, and an unknown key is refused with its name.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConnectionConfig {
    /// `postgres://user:password@host:port/db?sslmode=prefer` (key=value strings work too).
    pub url: String,
    /// Most connections the pool opens (default 2). One sink instance serves every partition of
    /// a process and uses one connection per batch in flight, so this bounds the batches
    /// written at once; more concurrent batches wait for a free connection.
    #[serde(default = "pool_size")]
    pub pool_size: usize,
    /// Connect timeout (`connect_timeout_ms`, default 10 000).
    #[serde(
        rename = "connect_timeout_ms",
        with = "pico_sink::config::millis",
        default = "connect_timeout"
    )]
    pub connect_timeout: Duration,
    /// PEM file with extra root certificates (a private CA); the webpki roots are always trusted
    /// (default: none).
    #[serde(default)]
    pub tls_ca_file: Option<String>,
}

/// The default of [`ConnectionConfig::pool_size`].
fn pool_size() -> usize {
    2
}

/// The default of [`ConnectionConfig::connect_timeout`].
fn connect_timeout() -> Duration {
    Duration::from_secs(10)
}

impl std::fmt::Debug for ConnectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionConfig")
            .field("url", &pico_sink::kit::redact_url(&self.url))
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("tls_ca_file", &self.tls_ca_file)
            .finish()
    }
}

impl ConnectionConfig {
    /// Defaults for `url`: pool of 2, 10 s connect timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: pool_size(),
            connect_timeout: connect_timeout(),
            tls_ca_file: None,
        }
    }
}

/// Builds the pool; a URL that does not parse is `Fatal` naming what is wrong. No connection is
/// made until first use.
pub fn connect_pool(config: &ConnectionConfig) -> Result<Pool, pico_sink::SinkError> {
    if config.url.trim().is_empty() {
        return Err(pico_sink::SinkError::fatal(
            "connection.url is empty: name the server (postgres://user:password@host:port/database), \
             or build the sink on a pool of your own with with_pool",
        ));
    }
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

/// The pool a sink writes through and its server as errors name it: one the sink built from
/// its configuration, or the caller's own.
#[derive(Clone)]
pub struct Connections {
    pool: Pool,
    target: String,
}

impl Connections {
    /// A pool of `connection.pool_size` for the configured URL (no connection yet), its server
    /// named `host:port/database`.
    pub fn from_config(connection: &ConnectionConfig) -> Result<Self, pico_sink::SinkError> {
        Ok(Self {
            pool: connect_pool(connection)?,
            target: target(&connection.url),
        })
    }

    /// The caller's pool. A URL in `connection` would not be used and is refused (`built_with`
    /// names the sink's constructor, `instead` the configuration constructor without a URL).
    pub fn given(
        pool: Pool,
        connection: &ConnectionConfig,
        built_with: &str,
        instead: &str,
    ) -> Result<Self, pico_sink::SinkError> {
        pico_sink::kit::refuse_unused_setting(
            "connection.url",
            &connection.url,
            built_with,
            instead,
        )?;
        Ok(Self {
            pool,
            target: format!("the server of the pool given to {built_with}"),
        })
    }

    /// A connection for one batch.
    pub async fn checkout(&self) -> Result<Checkout, pico_sink::SinkError> {
        Checkout::get(&self.pool, &self.target).await
    }

    /// The pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

/// A pooled connection for one batch. If the work using it ends any other way than
/// [`Checkout::release`] (an error, or the `consume` future dropped halfway, with a transaction
/// or a COPY open), the connection is taken out of the pool and closed, so the server rolls the
/// transaction back and no later batch inherits its state.
pub struct Checkout {
    object: Option<Object>,
}

impl Checkout {
    /// A connection from `pool`; `target` names its server in errors ([`target`]).
    pub async fn get(pool: &Pool, target: &str) -> Result<Self, pico_sink::SinkError> {
        let object = pool.get().await.map_err(|e| pool_error(e, target))?;
        Ok(Self {
            object: Some(object),
        })
    }

    /// The work finished cleanly: the connection goes back to the pool.
    pub fn release(mut self) {
        drop(self.object.take());
    }
}

impl Deref for Checkout {
    type Target = Object;

    fn deref(&self) -> &Object {
        self.object
            .as_ref()
            .unwrap_or_else(|| unreachable!("a checkout holds its connection until dropped"))
    }
}

impl DerefMut for Checkout {
    fn deref_mut(&mut self) -> &mut Object {
        self.object
            .as_mut()
            .unwrap_or_else(|| unreachable!("a checkout holds its connection until dropped"))
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(object) = self.object.take() {
            tracing::debug!(
                "connection left in an unknown state: closing it instead of pooling it"
            );
            drop(Object::take(object));
        }
    }
}

/// The server a connection URL names, for errors: `host:port/database` (every host of a
/// multi-host URL; no user or password), or a placeholder when the URL does not parse.
pub fn target(url: &str) -> String {
    let Ok(pg) = url.parse::<tokio_postgres::Config>() else {
        return "the server of connection.url".to_owned();
    };
    let ports = pg.get_ports();
    let hosts: Vec<String> = pg
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    let hosts = if hosts.is_empty() {
        format!("localhost:{}", ports.first().copied().unwrap_or(5432))
    } else {
        hosts.join(",")
    };
    match pg.get_dbname() {
        Some(db) => format!("{hosts}/{db}"),
        None => hosts,
    }
}

/// A failure to get a pooled connection to `target`, in the sink contract. A TLS mismatch and
/// a host name that does not exist are `Fatal` (no retry heals them), with what to change;
/// everything else is classified as any statement error.
pub fn pool_error(e: PoolError, target: &str) -> pico_sink::SinkError {
    let what = format!("connecting to {target}");
    match e {
        PoolError::Backend(e) => {
            let text = pico_sink::kit::error_chain(&e);
            if let Some(advice) = unhealable_connect_failure(&text) {
                return pico_sink::SinkError::fatal(format!("{what}: {text} — {advice}"))
                    .with_source(e);
            }
            crate::classify::classify(e, &what).into_sink_error()
        }
        other => pico_sink::SinkError::retryable(format!("{what}: {other}")).with_source(other),
    }
}

/// What to change for a connection failure no retry can heal, judged from its text: the
/// PostgreSQL refusal of TLS, then what any client meets ([`pico_sink::kit::unhealable_connect_failure`]).
fn unhealable_connect_failure(text: &str) -> Option<&'static str> {
    if text.contains("server does not support TLS") {
        return Some(
            "the server does not accept TLS and the url requires it: use sslmode=prefer or \
             sslmode=disable, or turn on ssl in the server",
        );
    }
    pico_sink::kit::unhealable_connect_failure(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_names_hosts_ports_and_database_without_credentials() {
        assert_eq!(
            target("postgres://app:hunter2@db.internal:5433/orders"),
            "db.internal:5433/orders"
        );
        assert_eq!(
            target("host=a,b port=5432,5433 dbname=x user=u"),
            "a:5432,b:5433/x"
        );
        assert_eq!(target("postgres://db/x"), "db:5432/x");
        assert_eq!(
            target("not a url at all ://"),
            "the server of connection.url"
        );
    }

    #[test]
    fn a_tls_mismatch_and_an_unknown_host_are_told_apart_from_transient_failures() {
        assert!(
            unhealable_connect_failure(
                "error performing TLS handshake: server does not support TLS"
            )
            .is_some_and(|a| a.contains("sslmode=prefer"))
        );
        assert!(
            unhealable_connect_failure(
                "error connecting to server: failed to lookup address information: Name or service not known"
            )
            .is_some_and(|a| a.contains("host"))
        );
        assert!(unhealable_connect_failure(
            "error connecting to server: failed to lookup address information: Temporary failure in name resolution"
        )
        .is_none());
        assert!(
            unhealable_connect_failure(
                "error connecting to server: Connection refused (os error 111)"
            )
            .is_none()
        );
    }

    #[test]
    fn debug_redacts_the_password() {
        let c = ConnectionConfig::new("postgres://app:hunter2@db:5432/x");
        let text = format!("{c:?}");
        assert!(
            !text.contains("hunter2") && text.contains("app:<redacted>@db"),
            "{text}"
        );
    }
}
