//! The S3 sink against a real S3-compatible server (SeaweedFS natively, MinIO in docker), with
//! the fault proxy cutting the answer to the PUT; one bucket per scenario.

use std::sync::Arc;

use std::io::Read;

use crate::serve::s3::S3Server;
use crate::serve::{Served, ServedDestination, Store};
use async_trait::async_trait;
use aws_sdk_s3::Client;
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, SinkUnderTest, Target,
};
use pico_sink::kit::Envelope;
use pico_sink_s3::{S3Sink, S3SinkConfig};

use crate::destinations::read::row_from_envelope;
use crate::provide::ANY_SERVER;

/// The S3 sink.
pub struct S3Target;

#[async_trait]
impl Target for S3Target {
    fn name(&self) -> &'static str {
        "s3"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-s3"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        ANY_SERVER.to_vec()
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let server = S3Server::provide(provider).await?;
        let client = server.client();
        Ok(Box::new(ServedDestination {
            info: server.info(),
            served: Served::new(server),
            form: PayloadForm::Exact,
            store: S3Store { client },
        }))
    }
}

struct S3Store {
    client: Client,
}

/// One bucket for every scenario (SeaweedFS gives each bucket its own volumes, so a bucket per
/// scenario would exhaust a small server); each scenario writes under its own prefix.
const BUCKET: &str = "pico-conformance";

#[async_trait]
impl Store for S3Store {
    type Server = S3Server;

    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        // The object PUT (the LIST before it is a GET).
        Some(b"PUT /")
    }

    async fn sink(
        &self,
        served: &Served<S3Server>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let server = served.server();
        let (endpoint, proxy) = served.proxied("http").await?;
        let mut config = S3SinkConfig::new(BUCKET, isolation);
        config.endpoint = Some(endpoint);
        config.credentials = Some((server.access_key.clone(), server.secret_key.clone().into()));
        config.create_bucket = true;
        config.gzip = isolation.contains("meter");
        let sink = S3Sink::new(config).map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    /// No upkeep to run on demand (lifecycle rules are the bucket owner's).
    async fn pass_horizon(&self, _: &Served<S3Server>, _: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::unbounded(
            "the partition's highest batch object, its LIST watermark: as long as it is kept",
        )))
    }

    async fn read_back(&self, _: &Served<S3Server>, isolation: &str) -> Result<Readback, String> {
        let (rows, objects) = read_objects(&self.client, BUCKET, &format!("{isolation}/")).await?;
        Ok(Readback {
            rows,
            physical_rows: None,
            notes: vec![format!("{objects} objects in the bucket")],
        })
    }
}

/// Every record stored in the objects of `bucket` under `prefix` (JSON lines of envelopes,
/// gzipped when the key ends in `.gz`), and how many objects held them; an absent bucket holds
/// none. The conformance target and the crash suite both read an S3 destination through it.
pub(crate) async fn read_objects(
    client: &Client,
    bucket: &str,
    prefix: &str,
) -> Result<(Vec<ReadRow>, usize), String> {
    let mut rows = Vec::new();
    let mut objects = 0;
    let mut token = None;
    loop {
        let mut req = client.list_objects_v2().bucket(bucket).prefix(prefix);
        if let Some(t) = token.take() {
            req = req.continuation_token(t);
        }
        let page = match req.send().await {
            Ok(p) => p,
            Err(e) if aws_sdk_s3::error::ProvideErrorMetadata::code(&e) == Some("NoSuchBucket") => {
                break;
            }
            Err(e) => return Err(format!("LIST {bucket}: {e:?}")),
        };
        for object in page.contents() {
            let Some(key) = object.key() else { continue };
            objects += 1;
            let body = client
                .get_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| format!("GET {key}: {e:?}"))?
                .body
                .collect()
                .await
                .map_err(|e| format!("GET {key}: {e}"))?
                .into_bytes();
            let text = if key.ends_with(".gz") {
                let mut out = String::new();
                flate2::read::GzDecoder::new(&body[..])
                    .read_to_string(&mut out)
                    .map_err(|e| format!("gunzip {key}: {e}"))?;
                out
            } else {
                String::from_utf8(body.to_vec()).map_err(|e| format!("{key}: {e}"))?
            };
            for line in text.lines() {
                let env: Envelope =
                    serde_json::from_str(line).map_err(|e| format!("{key}: {e}"))?;
                rows.push(row_from_envelope(&env)?);
            }
        }
        match page.next_continuation_token() {
            Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_owned()),
            _ => break,
        }
    }
    Ok((rows, objects))
}
