//! ClickHouse under pico-kafka: the `clickhouse` sink section and the rows of one topic, the
//! `FINAL` view beside the physical count.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::target::ServerInfo;

use super::read_rows;
use super::server::ClickHouseServer;
use crate::destinations::runtime::{
    Runtime, RuntimeDestination, Stored, boxed, table_of, toml_string,
};
use crate::provide::first_available;
use crate::serve::Server;

/// The database the runtime's tables are in.
const DATABASE: &str = "pico_crash";

/// Its entry in the crash suite: keyed on the record identity (what the table physically
/// holds is counted, merges stopped).
pub const RUNTIME: Runtime = Runtime {
    id: "clickhouse",
    serde_name: "clickhouse",
    keyed: true,
    replays_told_per_record: false,
    smoke: false,
    provide: || boxed(ChRuntime::provide),
};

/// A ClickHouse pico-kafka writes into.
pub struct ChRuntime(ClickHouseServer);

impl ChRuntime {
    /// Starts (or connects to) a server through the first kind that works. On a server started
    /// here, merges are stopped, so that no merge collapses a duplicate row before the physical
    /// rows are counted.
    pub async fn provide() -> Result<Self, String> {
        let server = first_available(ClickHouseServer::provide).await?;
        if !server.is_external() {
            server.query("SYSTEM STOP MERGES").await?;
        }
        Ok(Self(server))
    }
}

#[async_trait]
impl RuntimeDestination for ChRuntime {
    async fn info(&self) -> ServerInfo {
        self.0.info().await
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(self.0.url().to_owned())
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        Ok(format!(
            "[sink]\nkind = \"clickhouse\"\nurl = \"http://{via}\"\ndatabase = \"{DATABASE}\"\ntable = {}\n",
            toml_string(&table_of(isolation))
        ))
    }

    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String> {
        let table = format!("{DATABASE}.`{}`", table_of(isolation));
        let filter = format!("WHERE pico_topic = '{topic}'");
        let (rows, physical) = read_rows(&self.0, &table, &filter).await?;
        Ok(Stored {
            rows,
            physical: Some((physical, !self.0.is_external())),
            note: None,
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        self.0.stop().await
    }
}
