//! [`HttpSink`].

use async_trait::async_trait;
use pico_http_common::{HttpClient, HttpSettings, base_url, exchange};
use pico_sink::kit::{Attempt, Isolator};
use pico_sink::{Batch, Claim, Description, Outcome, Scenario, Sink, SinkError, WriteReport};
use reqwest::header::CONTENT_TYPE;
use tracing::{debug, warn};

use crate::config::HttpSinkConfig;
use crate::request::{body, idempotency_key};
use crate::response::{Answer, classify};

/// POSTs batches with an `Idempotency-Key`; see the crate docs.
pub struct HttpSink {
    config: HttpSinkConfig,
    client: HttpClient,
    url: reqwest::Url,
}

impl HttpSink {
    /// Builds its own HTTP client from the configuration; a bad URL or header is `Fatal`.
    pub fn new(config: HttpSinkConfig) -> Result<Self, SinkError> {
        let client = HttpSettings {
            headers: Vec::new(),
            request_timeout: config.request_timeout,
            connect_timeout: config.connect_timeout,
        }
        .client(true)?;
        Self::with_client(client, config)
    }

    /// Uses a client the caller already has (its pool, TLS and proxy settings); the
    /// configuration's headers are still sent on every request, its timeouts are the client's
    /// business. A bad URL or header is `Fatal`.
    pub fn with_client(client: reqwest::Client, config: HttpSinkConfig) -> Result<Self, SinkError> {
        base_url(&config.url, "url")?;
        let url = reqwest::Url::parse(&config.url)
            .map_err(|e| SinkError::fatal(format!("url {:?}: {e}", config.url)))?;
        let settings = HttpSettings {
            headers: config.headers.clone(),
            request_timeout: config.request_timeout,
            connect_timeout: config.connect_timeout,
        };
        let client = HttpClient::with_client(client, &settings)?;
        Ok(Self {
            config,
            client,
            url,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpSinkConfig {
        &self.config
    }

    async fn post(&self, batch: &Batch) -> Result<Answer, SinkError> {
        let key = idempotency_key(&self.config, batch);
        let body = body(&self.config, batch.records())
            .map_err(|e| SinkError::fatal(format!("cannot serialize batch {}: {e}", batch.id())))?;
        let request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, self.config.format.content_type())
            .header("idempotency-key", &key)
            .body(body);
        // An answer cut off may follow a commit on the endpoint: retryable, and the same key
        // makes the retry harmless at a key-honouring endpoint.
        let what = format!("POST of batch {} (Idempotency-Key {key})", batch.id());
        let reply = exchange(request, &what).await?;
        debug!(status = %reply.status, key, "endpoint answered");
        Ok(classify(&reply, &what, &key))
    }
}

#[async_trait]
impl Sink for HttpSink {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let records = batch.records();
        // A refused range is split in halves, each sent with its own (deterministic) key.
        let mut plan = Isolator::new(records.len());
        while let Some((start, end)) = plan.next_range() {
            let part = if (start, end) == (0, records.len()) {
                batch.clone()
            } else {
                Batch::new(records[start..end].to_vec())
                    .map_err(|e| SinkError::fatal(format!("splitting {}: {e}", batch.id())))?
            };
            let attempt = match self.post(&part).await? {
                Answer::Stored => Attempt::Written(WriteReport::written(part.len())),
                Answer::Refused { reason } => {
                    warn!(batch = %part.id(), reason, "endpoint refused the batch");
                    Attempt::Refused(reason)
                }
                Answer::Failed(e) => return Err(e),
            };
            plan.record(start, end, attempt);
        }
        let (report, rejected) = plan.finish_rejecting(|i| records[i].id.clone());
        Ok(Outcome::new(report, rejected))
    }

    fn describe(&self) -> Description {
        let replay = if self.config.endpoint_honours_key {
            Claim::NoVisibleDuplicate
        } else {
            Claim::Repeats
        };
        Description::new(
            "http",
            "POST per batch with Idempotency-Key from [ns/]topic:partition:first..=last; 413/400 \
             split the batch into halves with their own keys; pico_id in every element",
            Claim::Repeats,
        )
        .with_claim(Scenario::ReplaySameBatch, replay.clone())
        .with_claim(Scenario::LostAck, replay.clone())
        // A cancelled POST is redelivered with the same batch: the same key.
        .with_claim(Scenario::CancelledConsume, replay)
        .with_claim(Scenario::Outage, Claim::NoVisibleDuplicate)
        .with_claim(Scenario::ConcurrentPartitions, Claim::NoVisibleDuplicate)
        // Another batch boundary gives another key: the overlap is stored again.
        .with_claim(Scenario::ReplayRebatched, Claim::Repeats)
        .with_claim(Scenario::ZombieWriter, Claim::Repeats)
        .with_claim(Scenario::BadInput, Claim::NoVisibleDuplicate)
        // A redelivered record arrives in a one-record batch: another key.
        .with_claim(Scenario::MeterReadings, Claim::Repeats)
        // An endpoint keeps keys for its retention only (24 h is common): an older replay is
        // stored again.
        .with_claim(Scenario::ReplayAfterHorizon, Claim::Repeats)
    }
}
