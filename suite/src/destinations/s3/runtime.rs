//! An S3 bucket under pico-kafka: the `s3` sink section and the records in the objects under
//! an isolation's prefix.

use std::net::SocketAddr;

use async_trait::async_trait;
use pico_conformance::target::ServerInfo;

use super::read_objects;
use crate::destinations::runtime::{Runtime, RuntimeDestination, Stored, boxed, toml_string};
use crate::provide::first_available;
use crate::serve::Server;
use crate::serve::s3::S3Server;

/// The bucket the runtime's objects (and Delta tables) are in.
pub(crate) const BUCKET: &str = "pico-crash";

/// Its entry in the crash suite: keyed, one object per batch named by the batch identity.
pub const RUNTIME: Runtime = Runtime {
    id: "s3",
    serde_name: "s3",
    keyed: true,
    replays_told_per_record: false,
    smoke: false,
    provide: || boxed(S3Runtime::provide),
};

/// An S3-compatible object store pico-kafka writes objects into.
pub struct S3Runtime(S3Server);

/// Starts (or connects to) an object store through the first kind that works, with
/// [`BUCKET`].
pub(crate) async fn provide_store() -> Result<S3Server, String> {
    let server = first_available(S3Server::provide).await?;
    server.ensure_bucket(BUCKET).await?;
    Ok(server)
}

impl S3Runtime {
    /// Starts (or connects to) an object store through the first kind that works.
    pub async fn provide() -> Result<Self, String> {
        Ok(Self(provide_store().await?))
    }
}

#[async_trait]
impl RuntimeDestination for S3Runtime {
    async fn info(&self) -> ServerInfo {
        self.0.info()
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(self.0.url().to_owned())
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        Ok(format!(
            "[sink]\nkind = \"s3\"\nbucket = \"{BUCKET}\"\nprefix = {}\nendpoint = \"http://{via}\"\ncredentials = {{ access_key = {}, secret_key = {} }}\n",
            toml_string(isolation),
            toml_string(&self.0.access_key),
            toml_string(&self.0.secret_key)
        ))
    }

    async fn read(&self, isolation: &str, _topic: &str) -> Result<Stored, String> {
        let (rows, objects) =
            read_objects(&self.0.client(), BUCKET, &format!("{isolation}/")).await?;
        Ok(Stored {
            rows,
            physical: None,
            note: Some(format!("{objects} objects")),
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        self.0.stop().await
    }
}
