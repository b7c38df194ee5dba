//! [`HttpSink`].

use async_trait::async_trait;
use pico_http_common::{HttpSettings, base_url};
use pico_sink::{
    Attempt, Batch, Claim, Description, Isolator, Scenario, Sink, SinkError, WriteReport,
    error_chain,
};
use reqwest::header::CONTENT_TYPE;
use tracing::{debug, warn};

use crate::config::HttpSinkConfig;
use crate::request::{body, idempotency_key};
use crate::response::{Outcome, classify};

/// POSTs batches with an `Idempotency-Key`; see the crate docs.
pub struct HttpSink {
    config: HttpSinkConfig,
    client: reqwest::Client,
}

impl HttpSink {
    /// Builds the HTTP client; a bad URL or header is `Fatal`.
    pub fn new(config: HttpSinkConfig) -> Result<Self, SinkError> {
        base_url(&config.url, "url")?;
        let client = HttpSettings {
            headers: config.headers.clone(),
            request_timeout: config.request_timeout,
            connect_timeout: config.connect_timeout,
        }
        .client(true)?;
        Ok(Self { config, client })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpSinkConfig {
        &self.config
    }

    async fn post(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let key = idempotency_key(&self.config, batch);
        let body = body(&self.config, batch.records())
            .map_err(|e| SinkError::fatal(format!("cannot serialize batch {}: {e}", batch.id())))?;
        let response = self
            .client
            .post(&self.config.url)
            .header(CONTENT_TYPE, self.config.format.content_type())
            .header("idempotency-key", &key)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                SinkError::retryable(format!(
                    "POST {} failed: {}",
                    self.config.url,
                    error_chain(&e)
                ))
            })?;
        let status = response.status();
        let headers = response.headers().clone();
        // A response cut off here may follow a commit on the endpoint: retryable, and the
        // same key makes the retry harmless at a key-honouring endpoint.
        let text = response.text().await.map_err(|e| {
            SinkError::retryable(format!(
                "reading the answer to {key} failed: {}",
                error_chain(&e)
            ))
        })?;
        debug!(%status, key, "endpoint answered");
        Ok(classify(status, &headers, &text, &key))
    }
}

#[async_trait]
impl Sink for HttpSink {
    async fn open(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
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
                Outcome::Stored => Attempt::Written(WriteReport {
                    written: part.len() as u64,
                    already_present: 0,
                }),
                Outcome::Refused { reason } => {
                    warn!(batch = %part.id(), reason, "endpoint refused the batch");
                    Attempt::Refused(reason)
                }
                Outcome::Retry { message, after } => {
                    return Err(SinkError::Retryable {
                        message,
                        retry_after: after,
                    });
                }
                Outcome::Fatal { message } => return Err(SinkError::fatal(message)),
            };
            plan.record(start, end, attempt);
        }
        let (report, rejected) = plan.finish_rejecting(|i| records[i].id.clone());
        SinkError::outcome(report, rejected)
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    fn describe(&self) -> Description {
        let replay = if self.config.endpoint_honours_key {
            Claim::NoVisibleDuplicate
        } else {
            Claim::Repeats
        };
        Description {
            sink: "http".into(),
            mechanism:
                "POST per batch with Idempotency-Key from [ns/]topic:partition:first..=last; \
                        413/400 split the batch into halves with their own keys; pico_id in every \
                        element"
                    .into(),
            claims: vec![
                (Scenario::ReplaySameBatch, replay.clone()),
                (Scenario::LostAck, replay),
                (Scenario::Outage, Claim::NoVisibleDuplicate),
                (Scenario::ConcurrentPartitions, Claim::NoVisibleDuplicate),
                // Another batch boundary gives another key: the overlap is stored again.
                (Scenario::ReplayRebatched, Claim::Repeats),
                (Scenario::ZombieWriter, Claim::Repeats),
                (Scenario::BadInput, Claim::NoVisibleDuplicate),
                // A redelivered record arrives in a one-record batch: another key.
                (Scenario::MeterReadings, Claim::Repeats),
            ],
            default_claim: Claim::Repeats,
        }
    }
}
