//! The Postgres sink against a real PostgreSQL (external, docker or native), with a fault proxy
//! between sink and server; a lost acknowledgement cuts the answer to `COMMIT`.

use std::sync::Arc;

use async_trait::async_trait;
use pico_sink::identity::RecordId;
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig};

use super::server::{PgServer, connect};
use crate::destinations::runtime::sink_section;
use crate::provide::ANY_SERVER;
use crate::serve::{Served, ServedDestination, Server, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, Page, PayloadForm, ReadRow, Readback, ServerInfo, SinkUnderTest, Target,
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
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = PgServer::provide(provider).await?;
        let info = server.info().await;
        let store = PgStore {
            factory: |url, table| {
                PostgresSink::new(PostgresSinkConfig::new(url, table))
                    .map(|s| Arc::new(s) as Arc<dyn pico_sink::Sink>)
                    .map_err(|e| e.to_string())
            },
            section: |url, table| sink_section("postgres", &PostgresSinkConfig::new(url, table)),
        };
        Ok(Box::new(pg_destination(server, info, store)))
    }
}

/// Builds a sink for a URL and a table name.
pub(crate) type SinkFactory = fn(String, String) -> Result<Arc<dyn pico_sink::Sink>, String>;

/// Writes the pico-kafka `[sink]` section of the same sink for a URL and a table name.
pub(crate) type SectionFactory = fn(String, String) -> Result<String, String>;

/// A PostgreSQL-protocol destination on `server`, shared by the Postgres and Redshift targets:
/// sinks built by `store`, payloads compared as JSON.
pub(crate) fn pg_destination(
    server: PgServer,
    info: ServerInfo,
    store: PgStore,
) -> ServedDestination<PgStore> {
    ServedDestination {
        served: Served::new(server),
        info,
        form: PayloadForm::Json,
        store,
    }
}

/// How the Postgres and Redshift targets build their sink, in the suite and under pico-kafka.
pub(crate) struct PgStore {
    /// The sink the conformance suite drives.
    pub(crate) factory: SinkFactory,
    /// Its `[sink]` section for pico-kafka.
    pub(crate) section: SectionFactory,
}

/// Table name for an isolation (`pico-lost-ack-1f2e` → `pico_lost_ack_1f2e`).
pub(crate) fn table_name(isolation: &str) -> String {
    isolation.replace('-', "_")
}

#[async_trait]
impl Store for PgStore {
    type Server = PgServer;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"COMMIT")
    }

    async fn sink(
        &self,
        served: &Served<PgServer>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let server = served.server();
        let proxy = served.proxy_to_addr(server.socket_addr()?).await?;
        let url = server.url_via(proxy.addr())?;
        let sink = (self.factory)(url, table_name(isolation))?;
        Ok(SinkUnderTest {
            sink,
            faults: Some(proxy),
        })
    }

    async fn sink_section(
        &self,
        served: &Served<PgServer>,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        (self.section)(served.server().url_via(via)?, table_name(isolation))
    }

    async fn read_back(
        &self,
        served: &Served<PgServer>,
        isolation: &str,
    ) -> Result<Readback, String> {
        read_table(served.server().url(), &table_name(isolation)).await
    }

    /// The table's own upkeep: `VACUUM FULL ANALYZE` rewrites the table and its indexes.
    /// Both sinks recognise a replay by the identity columns of the rows held (a key, or the
    /// sink's own merge on them), which no upkeep removes.
    async fn pass_horizon(
        &self,
        served: &Served<PgServer>,
        isolation: &str,
    ) -> Result<Upkeep, String> {
        let client = connect(served.server().url()).await?;
        let sql = format!(
            "VACUUM FULL ANALYZE public.{}",
            pico_pg_quote(&table_name(isolation))
        );
        client
            .batch_execute(&sql)
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        Ok(Upkeep::of(Horizon::unbounded(
            "the identity columns of the rows held: as long as the row is",
        ))
        .did("VACUUM FULL ANALYZE runs (table and indexes rewritten)", 1))
    }

    async fn read_page(
        &self,
        served: &Served<PgServer>,
        isolation: &str,
        cursor: Option<&str>,
    ) -> Result<Page, String> {
        read_table_page(served.server().url(), &table_name(isolation), cursor).await
    }
}

/// Every row of `table` at `url`, a page at a time, each physical row once (a repeated key
/// shows twice). The conformance targets and the benchmarks read their tables through it.
pub(crate) async fn read_table(url: &str, table: &str) -> Result<Readback, String> {
    let mut rows = Vec::new();
    let mut cursor = None;
    loop {
        let page = read_table_page(url, table, cursor.as_deref()).await?;
        rows.extend(page.back.rows);
        match page.next {
            Some(next) => cursor = Some(next),
            None => return Ok(Readback::of_rows(rows)),
        }
    }
}

/// One page of `table` after `cursor`, in key order.
async fn read_table_page(url: &str, table: &str, cursor: Option<&str>) -> Result<Page, String> {
    let client = connect(url).await?;
    let table = pico_pg_quote(table);
    let after = cursor.map(PageKey::parse).transpose()?;
    let rows = match &after {
        None => {
            let sql = page_sql(&table, "");
            client
                .query(&sql, &[])
                .await
                .map_err(|e| format!("{sql}: {e}"))?
        }
        Some(key) => {
            let sql = page_sql(
                &table,
                "WHERE (pico_topic, pico_partition, pico_offset, ctid) \
                 > ($1, $2, $3, $4::text::tid)",
            );
            client
                .query(&sql, &[&key.topic, &key.partition, &key.offset, &key.ctid])
                .await
                .map_err(|e| format!("{sql}: {e}"))?
        }
    };
    let next = match rows.last() {
        Some(last) if rows.len() == PAGE_ROWS => Some(PageKey::of_row(last).render()?),
        _ => None,
    };
    let rows = rows.iter().map(read_row).collect();
    Ok(Page {
        back: Readback::of_rows(rows),
        next,
    })
}

/// Rows per page of the judge's read-back.
const PAGE_ROWS: usize = 5_000;

/// One page in key order. `ctid` breaks ties, so a table that lost its primary key still shows
/// every physical row once.
fn page_sql(table: &str, filter: &str) -> String {
    format!(
        "SELECT pico_topic, pico_partition, pico_offset, value::text, ctid::text FROM public.{table} \
         {filter} ORDER BY pico_topic, pico_partition, pico_offset, ctid LIMIT {PAGE_ROWS}"
    )
}

fn read_row(r: &tokio_postgres::Row) -> ReadRow {
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
}

/// Where a page ends: the last row's key and physical position.
#[derive(serde::Serialize, serde::Deserialize)]
struct PageKey {
    topic: String,
    partition: i32,
    offset: i64,
    ctid: String,
}

impl PageKey {
    fn of_row(r: &tokio_postgres::Row) -> Self {
        Self {
            topic: r.get(0),
            partition: r.get(1),
            offset: r.get(2),
            ctid: r.get(4),
        }
    }

    fn render(&self) -> Result<String, String> {
        serde_json::to_string(self).map_err(|e| format!("page cursor: {e}"))
    }

    fn parse(cursor: &str) -> Result<Self, String> {
        serde_json::from_str(cursor).map_err(|e| format!("page cursor {cursor:?}: {e}"))
    }
}

fn pico_pg_quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
