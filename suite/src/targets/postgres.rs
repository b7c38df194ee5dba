//! The Postgres sink against a real PostgreSQL (external, docker or native), with a fault proxy
//! between sink and server; a lost acknowledgement cuts the answer to `COMMIT`.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig};

use crate::servers::postgres::{PgServer, connect};
use pico_conformance::provider::ProviderKind;
use pico_conformance::proxy::FaultProxies;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, Target,
    payload_checksum,
};

/// The Postgres sink.
pub struct PostgresTarget;

#[async_trait]
impl Target for PostgresTarget {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-postgres"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![
            ProviderKind::External,
            ProviderKind::Docker,
            ProviderKind::Native,
        ]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = PgServer::provide(provider).await?;
        let info = server.info().await;
        Ok(Box::new(PgDestination::new(server, info, |url, table| {
            let config = PostgresSinkConfig::new(url, table);
            PostgresSink::new(config)
                .map(|s| Arc::new(s) as Arc<dyn pico_sink::Sink>)
                .map_err(|e| e.to_string())
        })))
    }
}

/// Builds a sink for a URL and a table name.
pub(crate) type SinkFactory = fn(String, String) -> Result<Arc<dyn pico_sink::Sink>, String>;

/// A PostgreSQL-protocol destination shared by the Postgres and Redshift targets.
pub(crate) struct PgDestination {
    server: Option<PgServer>,
    info: ServerInfo,
    factory: SinkFactory,
    proxies: FaultProxies,
}

impl PgDestination {
    pub(crate) fn new(server: PgServer, info: ServerInfo, factory: SinkFactory) -> Self {
        Self {
            server: Some(server),
            info,
            factory,
            proxies: FaultProxies::default(),
        }
    }

    fn server(&self) -> Result<&PgServer, String> {
        self.server.as_ref().ok_or_else(|| "server stopped".into())
    }
}

/// Table name for an isolation (`pico-lost-ack-1f2e` → `pico_lost_ack_1f2e`).
pub(crate) fn table_name(isolation: &str) -> String {
    isolation.replace('-', "_")
}

#[async_trait]
impl Destination for PgDestination {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        PayloadForm::Json
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        Some(b"COMMIT".to_vec())
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let server = self.server()?;
        let proxy = self.proxies.in_front_of(server.socket_addr()?).await?;
        let url = server.url_via(proxy.addr())?;
        let sink = (self.factory)(url, table_name(isolation))?;
        Ok(SinkUnderTest {
            sink,
            faults: Some(proxy),
        })
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let client = connect(self.server()?.url()).await?;
        let sql = format!(
            "SELECT pico_topic, pico_partition, pico_offset, value::text FROM public.{}",
            pico_pg_quote(&table_name(isolation))
        );
        let rows = client
            .query(&sql, &[])
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        let rows = rows
            .iter()
            .map(|r| {
                let topic: String = r.get(0);
                let partition: i32 = r.get(1);
                let offset: i64 = r.get(2);
                let value: Option<String> = r.get(3);
                let value = bytes::Bytes::from(value.unwrap_or_default());
                ReadRow {
                    id: RecordId::new(topic, partition as u32, offset as u64),
                    checksum: payload_checksum(PayloadForm::Json, &value),
                    value,
                }
            })
            .collect();
        Ok(Readback::of_rows(rows))
    }

    async fn shutdown(mut self: Box<Self>) -> Result<(), String> {
        self.proxies.clear().await;
        match self.server.take() {
            Some(s) => s.stop().await,
            None => Ok(()),
        }
    }
}

fn pico_pg_quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
