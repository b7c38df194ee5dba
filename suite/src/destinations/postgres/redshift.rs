//! The Redshift sink against PostgreSQL standing in for Redshift: the same statements, a table
//! with no primary key (as Redshift enforces none), the fault proxy cutting the COMMIT answer.

use async_trait::async_trait;
use pico_sink_redshift::{Dialect, RedshiftSink, RedshiftSinkConfig};

use super::server::PgServer;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{Destination, ServerInfo, Target};

use super::target::pg_destination;
use crate::provide::ANY_SERVER;

/// The Redshift sink, verified on PostgreSQL.
pub struct RedshiftTarget;

#[async_trait]
impl Target for RedshiftTarget {
    fn name(&self) -> &'static str {
        "redshift"
    }
    fn title(&self) -> &'static str {
        "on PostgreSQL (no Redshift here)"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-redshift"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = PgServer::provide(provider).await?;
        let pg = server.info().await;
        let info = ServerInfo {
            name: "PostgreSQL".into(),
            version: format!("{} standing in for Redshift (no primary key)", pg.version),
        };
        Ok(Box::new(pg_destination(server, info, |url, table| {
            let mut config = RedshiftSinkConfig::new(url, table);
            config.dialect = Dialect::PostgresStandIn;
            RedshiftSink::new(config)
                .map(|s| std::sync::Arc::new(s) as std::sync::Arc<dyn pico_sink::Sink>)
                .map_err(|e| e.to_string())
        })))
    }
}
