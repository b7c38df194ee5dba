//! PostgreSQL under pico-kafka: the `postgres` sink section and the rows of one topic.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::target::{PayloadForm, ReadRow, ServerInfo, payload_checksum};
use pico_sink::identity::RecordId;

use super::server::{PgServer, connect};
use crate::destinations::runtime::{
    Runtime, RuntimeDestination, Stored, boxed, table_of, toml_string,
};
use crate::provide::first_available;
use crate::serve::Server;

/// Its entry in the crash suite: keyed on the record identity.
pub const RUNTIME: Runtime = Runtime {
    id: "postgres",
    serde_name: "postgres",
    keyed: true,
    replays_told_per_record: true,
    smoke: false,
    provide: || boxed(PgRuntime::provide),
};

/// A PostgreSQL pico-kafka writes into.
pub struct PgRuntime(PgServer);

impl PgRuntime {
    /// Starts (or connects to) a server through the first kind that works.
    pub async fn provide() -> Result<Self, String> {
        Ok(Self(first_available(PgServer::provide).await?))
    }
}

#[async_trait]
impl RuntimeDestination for PgRuntime {
    async fn info(&self) -> ServerInfo {
        self.0.info().await
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(format!("tcp://{}", self.0.socket_addr()?))
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        Ok(format!(
            "[sink]\nkind = \"postgres\"\ntable = {}\n[sink.connection]\nurl = {}\npool_size = 4\n",
            toml_string(&table_of(isolation)),
            toml_string(&self.0.url_via(via)?)
        ))
    }

    /// One topic's rows, unpaged: the kill case reads at every kill, where the judge's paged
    /// read is slower.
    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String> {
        let table = table_of(isolation);
        let c = connect(self.0.url()).await?;
        let sql = format!(
            "SELECT pico_partition, pico_offset, value::text FROM public.\"{table}\" \
             WHERE pico_topic = $1"
        );
        let rows = c
            .query(&sql, &[&topic])
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        Ok(Stored {
            rows: rows
                .iter()
                .map(|r| {
                    let value: Option<String> = r.get(2);
                    let value = bytes::Bytes::from(value.unwrap_or_default());
                    ReadRow {
                        id: RecordId::new(
                            topic,
                            r.get::<_, i32>(0) as u32,
                            r.get::<_, i64>(1) as u64,
                        ),
                        checksum: payload_checksum(PayloadForm::Json, &value),
                        value,
                    }
                })
                .collect(),
            physical: None,
            note: None,
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        self.0.stop().await
    }
}
