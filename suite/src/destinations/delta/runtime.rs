//! Delta Lake on S3 under pico-kafka: the `delta` sink section and the rows of an isolation's
//! table.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::target::ServerInfo;

use super::{delta_s3_options, read_delta};
use crate::destinations::runtime::{Runtime, RuntimeDestination, Stored, boxed, toml_string};
use crate::destinations::s3::runtime::{BUCKET, provide_store};
use crate::serve::Server;
use crate::serve::s3::S3Server;

/// Its entry in the crash suite (Delta Lake on S3): keyed by a watermark per partition in the
/// table's log.
pub const RUNTIME: Runtime = Runtime {
    id: "delta-s3",
    serde_name: "delta-s3",
    keyed: true,
    replays_told_per_record: false,
    smoke: false,
    provide: || boxed(DeltaS3Runtime::provide),
};

/// An object store pico-kafka writes Delta tables into.
pub struct DeltaS3Runtime(S3Server);

impl DeltaS3Runtime {
    /// Starts (or connects to) an object store through the first kind that works.
    pub async fn provide() -> Result<Self, String> {
        Ok(Self(provide_store().await?))
    }
}

#[async_trait]
impl RuntimeDestination for DeltaS3Runtime {
    async fn info(&self) -> ServerInfo {
        self.0.info()
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(self.0.url().to_owned())
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        Ok(format!(
            "[sink]\nkind = \"delta\"\nlocation = \"s3://{BUCKET}/{isolation}\"\n[sink.storage_options]\n\
             AWS_ENDPOINT_URL = \"http://{via}\"\nAWS_ACCESS_KEY_ID = {}\nAWS_SECRET_ACCESS_KEY = {}\n\
             AWS_REGION = \"us-east-1\"\nAWS_ALLOW_HTTP = \"true\"\n",
            toml_string(&self.0.access_key),
            toml_string(&self.0.secret_key)
        ))
    }

    async fn read(&self, isolation: &str, _topic: &str) -> Result<Stored, String> {
        let options = delta_s3_options(&self.0, &self.0.endpoint);
        let back = read_delta(&format!("s3://{BUCKET}/{isolation}"), options).await?;
        Ok(Stored {
            rows: back.rows,
            physical: None,
            note: back.notes.first().cloned(),
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        self.0.stop().await
    }
}
