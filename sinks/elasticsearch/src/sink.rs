//! [`ElasticsearchSink`].

use async_trait::async_trait;
use pico_http_common::{Advice, HttpClient, Reply, base_url, chunks, exchange};
use pico_sink::kit::{Attempt, Isolator, convert_records};
use pico_sink::{
    Batch, Claim, Description, Outcome, RejectedRecord, Scenario, Sink, SinkError, WriteReport,
};
use reqwest::header::CONTENT_TYPE;
use tracing::warn;

use crate::bulk::{Item, check_index_name, items, operation};
use crate::config::{ElasticsearchSinkConfig, IndexMode};

/// What to change when the server answers with a fatal status of the shared table.
const ADVICE: Advice = Advice {
    denied: "check the credentials (headers) and privileges",
    not_found: "check the url",
};

/// Bulk-indexes batches with `_id` from the record identity; see the crate docs.
pub struct ElasticsearchSink {
    config: ElasticsearchSinkConfig,
    client: HttpClient,
    bulk_url: reqwest::Url,
}

/// What one bulk request came to.
enum Sent {
    Items(Vec<Item>),
    /// 413: the request is too large.
    TooLarge(String),
}

impl ElasticsearchSink {
    /// Checks the configuration and builds the client; a bad URL or index name is `Fatal`.
    pub fn new(config: ElasticsearchSinkConfig) -> Result<Self, SinkError> {
        let client = HttpClient::new(&config.http, true)?;
        Self::build(client, config)
    }

    /// Uses an HTTP client the caller already has (its pool, TLS and timeouts); the
    /// configuration's headers are sent on every request.
    pub fn with_client(
        client: reqwest::Client,
        config: ElasticsearchSinkConfig,
    ) -> Result<Self, SinkError> {
        let client = HttpClient::with_client(client, &config.http)?;
        Self::build(client, config)
    }

    fn build(client: HttpClient, config: ElasticsearchSinkConfig) -> Result<Self, SinkError> {
        check_index_name(&config.index).map_err(SinkError::fatal)?;
        let mut bulk_url = base_url(&config.url, "url")?
            .join("_bulk")
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        bulk_url
            .query_pairs_mut()
            .append_pair("refresh", config.refresh.param());
        Ok(Self {
            config,
            client,
            bulk_url,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ElasticsearchSinkConfig {
        &self.config
    }

    async fn send(&self, body: String, count: usize) -> Result<Sent, SinkError> {
        let what = format!("POST _bulk into {}", self.config.index);
        let request = self
            .client
            .post(self.bulk_url.clone())
            .header(CONTENT_TYPE, "application/x-ndjson")
            .body(body);
        let reply: Reply = exchange(request, &what).await?;
        match reply.status.as_u16() {
            200 => items(&reply.body, count, self.config.mode)
                .map(Sent::Items)
                .map_err(|e| SinkError::retryable(format!("{what}: {e}"))),
            413 => Ok(Sent::TooLarge(format!(
                "413: larger than the cluster's http.max_content_length: {}",
                reply.snippet()
            ))),
            _ => Err(reply.failure(&what, &ADVICE)),
        }
    }
}

#[async_trait]
impl Sink for ElasticsearchSink {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let records = batch.records();
        let mut rejected: Vec<RejectedRecord> = Vec::new();
        let (ops, refused) =
            convert_records(batch, |i, r| operation(&self.config, r).map(|op| (i, op)));
        rejected.extend(refused);
        let mut total = WriteReport::default();
        let mut retry: Option<String> = None;
        let sizes: Vec<usize> = ops.iter().map(|(_, op)| op.len()).collect();
        for range in chunks(&sizes, self.config.max_bulk_bytes, usize::MAX) {
            let chunk = &ops[range];
            // A 413 splits the chunk in halves down to single records.
            let mut plan = Isolator::new(chunk.len());
            while let Some((start, end)) = plan.next_range() {
                let part = &chunk[start..end];
                let body: String = part.iter().map(|(_, op)| op.as_str()).collect();
                let attempt = match self.send(body, part.len()).await? {
                    Sent::TooLarge(reason) => Attempt::Refused(reason),
                    Sent::Items(answers) => {
                        let mut report = WriteReport::default();
                        for ((index, _), item) in part.iter().zip(answers) {
                            match item {
                                Item::Created => report.written += 1,
                                Item::AlreadyPresent => report.already_present += 1,
                                Item::Retry(reason) => {
                                    retry
                                        .get_or_insert(format!("{}: {reason}", records[*index].id));
                                }
                                Item::Reject(reason) => {
                                    warn!(record = %records[*index].id, reason, "Elasticsearch refused a document");
                                    rejected.push(RejectedRecord::new(
                                        records[*index].id.clone(),
                                        reason,
                                    ));
                                }
                                Item::Fatal(reason) => return Err(SinkError::fatal(reason)),
                            }
                        }
                        Attempt::Written(report)
                    }
                };
                plan.record(start, end, attempt);
            }
            let (report, too_large) = plan.finish_rejecting(|i| records[chunk[i].0].id.clone());
            total.written += report.written;
            total.already_present += report.already_present;
            rejected.extend(too_large);
        }
        if let Some(message) = retry {
            // Every operation is idempotent by _id: the whole batch is simply sent again.
            return Err(SinkError::retryable(format!(
                "Elasticsearch asked to retry items (first: {message})"
            )));
        }
        Ok(Outcome::new(total, rejected))
    }

    fn describe(&self) -> Description {
        let mechanism = match self.config.mode {
            IndexMode::Index => {
                "_bulk index with _id = [ns/]topic:partition:offset (sha256 form above 512 bytes); \
                 a replay replaces each document with identical content"
            }
            IndexMode::DataStream => {
                "_bulk create in a data stream with _id = the record identity; 409 = already \
                 written (checked within the current backing index only: a replay after a \
                 rollover is indexed again)"
            }
        };
        Description::new("elasticsearch", mechanism, Claim::NoVisibleDuplicate)
            .with_claim(Scenario::ReplaySameBatch, Claim::NoVisibleDuplicate)
            .with_claim(Scenario::ReplayRebatched, Claim::NoVisibleDuplicate)
    }
}
