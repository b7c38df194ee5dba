//! Iceberg under pico-kafka, SQLite catalog and S3 warehouse: the smoke test's `iceberg` sink
//! section (with its `[sink.catalog]`) and read-back, through the conformance destination. The
//! runtime's processes and the suite open the same catalog file, as processes of one machine.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{Destination, ServerInfo};

use super::target::{IcebergDestination, serve_s3};
use crate::destinations::runtime::{Runtime, RuntimeDestination, Stored, boxed};
use crate::provide::first_available;
use crate::serve::Server;

/// Its entry in the crash suite: keyed on a per-partition watermark, smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "iceberg-s3",
    serde_name: "iceberg-s3",
    keyed: true,
    replays_told_per_record: false,
    smoke: true,
    provide: || boxed(provide),
};

/// The Iceberg destination pico-kafka writes into.
struct IcebergRuntime(IcebergDestination);

/// An S3 warehouse through the first kind of S3 server that works.
async fn provide() -> Result<IcebergRuntime, String> {
    first_available(|kind: ProviderKind| serve_s3(kind))
        .await
        .map(IcebergRuntime)
}

#[async_trait]
impl RuntimeDestination for IcebergRuntime {
    async fn info(&self) -> ServerInfo {
        self.0.server()
    }

    fn upstream(&self) -> Result<String, String> {
        let s3 = self.0.s3().ok_or("no S3 server")?;
        Ok(s3.server().url().to_owned())
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        self.0.sink_section(isolation, via)
    }

    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String> {
        let back = self.0.read_back(isolation).await?;
        Ok(Stored {
            rows: back
                .rows
                .into_iter()
                .filter(|r| &*r.id.topic == topic)
                .collect(),
            physical: None,
            note: back.notes.into_iter().next(),
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        Box::new(self.0).shutdown().await
    }
}
