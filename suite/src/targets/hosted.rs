//! [`HostedDestination`]: the part every destination served by [`Hosted`] (external or docker
//! provider) shares; a [`HostedStore`] adds how to build its sink and read it back.

use async_trait::async_trait;

use crate::servers::container::Hosted;
use pico_conformance::target::{Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest};

/// What differs between hosted destinations.
#[async_trait]
pub(crate) trait HostedStore: Send + Sync {
    /// Bytes of the committing request (lost-ack trigger).
    fn lost_ack_trigger(&self) -> &'static [u8];
    /// A new sink writing into `isolation`, through a fault proxy of `hosted`.
    async fn sink(&self, hosted: &Hosted, isolation: &str) -> Result<SinkUnderTest, String>;
    /// Waits until what the destination accepted for `isolation` is visible.
    async fn settle(&self, hosted: &Hosted, isolation: &str) -> Result<(), String> {
        let _ = (hosted, isolation);
        Ok(())
    }
    /// What `isolation` holds.
    async fn read_back(&self, hosted: &Hosted, isolation: &str) -> Result<Readback, String>;
}

/// A destination at `hosted.url`, described by `info`, payloads compared in `form`.
pub(crate) struct HostedDestination<S> {
    pub hosted: Hosted,
    pub info: ServerInfo,
    pub form: PayloadForm,
    pub store: S,
}

#[async_trait]
impl<S: HostedStore> Destination for HostedDestination<S> {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        self.form
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        Some(self.store.lost_ack_trigger().to_vec())
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        self.store.sink(&self.hosted, isolation).await
    }

    async fn settle(&self, isolation: &str) -> Result<(), String> {
        self.store.settle(&self.hosted, isolation).await
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        self.store.read_back(&self.hosted, isolation).await
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        self.hosted.stop().await
    }
}

/// The rows of an Elasticsearch-style search answer (`hits.hits[]._source`) holding envelope
/// documents.
pub(crate) fn rows_from_hits(answer: &serde_json::Value) -> Result<Readback, String> {
    let hits = answer["hits"]["hits"]
        .as_array()
        .ok_or_else(|| format!("unexpected search answer: {answer}"))?;
    let rows = hits
        .iter()
        .map(|h| super::row_from_document(h["_source"].clone()))
        .collect::<Result<_, _>>()?;
    Ok(Readback::of_rows(rows))
}
