//! The MongoDB sink against a real MongoDB: the pinned image through the docker provider, or a
//! server named by `PICO_MONGODB_URL` (a `mongodb://` connection string). The fault proxy cuts
//! the answer to an `update` command.

use std::sync::Arc;

use std::time::Duration;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use pico_sink_mongodb::{MongoSink, MongoSinkConfig};

use crate::destinations::read::row_from_document;
use crate::serve::docker::ContainerSpec;
use crate::serve::hosted::{Hosted, provide};
use crate::serve::{Served, ServedDestination, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, Readback, ServerInfo, SinkUnderTest, Target,
};

const DATABASE: &str = "pico";

/// The MongoDB sink.
pub struct MongoTarget;

#[async_trait]
impl Target for MongoTarget {
    fn name(&self) -> &'static str {
        "mongodb"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-mongodb"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::External, ProviderKind::Docker]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let spec = ContainerSpec {
            service: "mongodb",
            port: 27017,
            ..ContainerSpec::default()
        };
        let hosted = provide("mongodb", provider, spec, "mongodb", None).await?;
        let url = &hosted.url;
        let client = Client::with_uri_str(url)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let admin = client.database("admin");
        let mut last = String::new();
        let mut info = None;
        for _ in 0..120 {
            match admin.run_command(doc! { "buildInfo": 1 }).await {
                Ok(answer) => {
                    info = Some(answer.get_str("version").unwrap_or("unknown").to_owned());
                    break;
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let version = info.ok_or_else(|| format!("MongoDB at {url} never answered: {last}"))?;
        Ok(Box::new(ServedDestination {
            served: Served::new(hosted),
            info: ServerInfo {
                name: "MongoDB".into(),
                version,
            },
            form: PayloadForm::Json,
            store: Mongo { client },
        }))
    }
}

struct Mongo {
    client: Client,
}

#[async_trait]
impl Store for Mongo {
    type Server = Hosted;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"update\0")
    }

    async fn sink(
        &self,
        served: &Served<Hosted>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("mongodb").await?;
        let uri = format!("{url}/?directConnection=true&serverSelectionTimeoutMS=3000");
        let config = MongoSinkConfig::new(uri, DATABASE, isolation);
        Ok(SinkUnderTest {
            sink: Arc::new(MongoSink::new(config)),
            faults: Some(proxy),
        })
    }

    /// No upkeep to run on demand.
    async fn pass_horizon(&self, _: &Served<Hosted>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "_id from the identity: as long as the document is held",
        )))
    }

    async fn read_back(&self, _: &Served<Hosted>, isolation: &str) -> Result<Readback, String> {
        let documents: Vec<Document> = self
            .client
            .database(DATABASE)
            .collection::<Document>(isolation)
            .find(doc! {})
            .await
            .map_err(|e| e.to_string())?
            .try_collect()
            .await
            .map_err(|e| e.to_string())?;
        let rows = documents
            .into_iter()
            .map(|d| row_from_document(Bson::Document(d).into_relaxed_extjson()))
            .collect::<Result<_, _>>()?;
        Ok(Readback::of_rows(rows))
    }
}
