//! The Redshift sink against PostgreSQL standing in for Redshift: the same statements, a table
//! with no primary key (as Redshift enforces none), the fault proxy cutting the COMMIT answer.

use async_trait::async_trait;
use pico_sink_redshift::{Dialect, RedshiftSink, RedshiftSinkConfig};

use super::server::PgServer;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{Destination, ServerInfo, Target};

use super::target::{PgStore, pg_destination};
use crate::destinations::runtime::sink_section;
use crate::provide::ANY_SERVER;
use crate::serve::ServedDestination;

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
        Ok(Box::new(serve(provider).await?))
    }
}

/// PostgreSQL through `provider`, standing in for Redshift, as the sink and the suite see it.
pub(super) async fn serve(provider: ProviderKind) -> Result<ServedDestination<PgStore>, String> {
    let server = PgServer::provide(provider).await?;
    let pg = server.info().await;
    let info = ServerInfo {
        name: "PostgreSQL".into(),
        version: format!("{} standing in for Redshift (no primary key)", pg.version),
    };
    let store = PgStore {
        factory: |url, table| {
            RedshiftSink::new(config(url, table))
                .map(|s| std::sync::Arc::new(s) as std::sync::Arc<dyn pico_sink::Sink>)
                .map_err(|e| e.to_string())
        },
        section: |url, table| sink_section("redshift", &config(url, table)),
    };
    Ok(pg_destination(server, info, store))
}

/// The sink's configuration for `table` at `url`, in the dialect of the stand-in.
fn config(url: String, table: String) -> RedshiftSinkConfig {
    let mut config = RedshiftSinkConfig::new(url, table);
    config.dialect = Dialect::PostgresStandIn;
    config
}
