//! [`QuickwitSink`].

use std::collections::BTreeSet;

use async_trait::async_trait;
use pico_http_common::{Advice, HttpClient, Reply, base_url, chunks, exchange};
use pico_sink::kit::{Attempt, Isolator, convert_records, document_json};
use pico_sink::{
    Batch, Claim, Description, Outcome, RejectedRecord, Scenario, Sink, SinkError, WriteReport,
};
use reqwest::header::CONTENT_TYPE;
use tracing::{debug, warn};

use crate::config::QuickwitSinkConfig;
use crate::requests::{
    IngestAnswer, MAX_BUCKETS, PARTITION_KEY, SearchAnswer, check_index_id, index_config,
    offsets_query, watermark_query,
};

/// What to change when the server answers with a fatal status of the shared table.
const ADVICE: Advice = Advice {
    denied: "check the credentials in the sink's headers",
    not_found: "the index does not exist: create it with the pico_* fields (or set create_index)",
};

/// Ingests only offsets above the partition's watermark; see the crate docs.
pub struct QuickwitSink {
    config: QuickwitSinkConfig,
    client: HttpClient,
    base: reqwest::Url,
}

impl QuickwitSink {
    /// Checks the configuration and builds the client; a bad URL or index id is `Fatal`.
    pub fn new(config: QuickwitSinkConfig) -> Result<Self, SinkError> {
        let client = HttpClient::new(&config.http, true)?;
        Self::build(client, config)
    }

    /// Uses an HTTP client the caller already has; the configuration's headers are sent on
    /// every request.
    pub fn with_client(
        client: reqwest::Client,
        config: QuickwitSinkConfig,
    ) -> Result<Self, SinkError> {
        let client = HttpClient::with_client(client, &config.http)?;
        Self::build(client, config)
    }

    fn build(client: HttpClient, config: QuickwitSinkConfig) -> Result<Self, SinkError> {
        check_index_id(&config.index).map_err(SinkError::fatal)?;
        let base = base_url(&config.url, "url")?;
        Ok(Self {
            config,
            client,
            base,
        })
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, SinkError> {
        self.base
            .join(path)
            .map_err(|e| SinkError::fatal(format!("url: {e}")))
    }

    fn failure(&self, reply: &Reply, what: &str) -> SinkError {
        reply.failure(what, &ADVICE)
    }

    async fn search(&self, body: serde_json::Value) -> Result<SearchAnswer, SinkError> {
        let what = format!("search in {}", self.config.index);
        let url = self.url(&format!("api/v1/_elastic/{}/_search", self.config.index))?;
        let reply = exchange(self.client.post(url).json(&body), &what).await?;
        if !reply.status.is_success() {
            return Err(self.failure(&reply, &what));
        }
        reply.json(&what)
    }

    /// The highest offset of the partition in the index.
    async fn watermark(&self, partition_key: &str) -> Result<Option<u64>, SinkError> {
        let answer = self.search(watermark_query(partition_key)).await?;
        Ok(answer
            .offsets()
            .map_err(|e| SinkError::fatal(format!("{}: {e}", self.config.index)))?
            .into_iter()
            .max())
    }

    /// Which of `sent` (ascending) are in the index: distinct offsets by a terms aggregation,
    /// window by window.
    async fn present(&self, partition_key: &str, sent: &[u64]) -> Result<BTreeSet<u64>, SinkError> {
        let mut present = BTreeSet::new();
        for window in sent.chunks(MAX_BUCKETS) {
            let (first, last) = (window[0], window[window.len() - 1]);
            let answer = self
                .search(offsets_query(partition_key, first, last, window.len()))
                .await?;
            present.extend(
                answer
                    .distinct_offsets()
                    .map_err(|e| SinkError::retryable(format!("{}: {e}", self.config.index)))?,
            );
        }
        Ok(present)
    }

    /// Ingests every record of `batch` as one plain request of the same documents, with no
    /// watermark search and no count-back: the raw ingest that benchmarks compare the sink with.
    /// A replay through it duplicates; do not use it to deliver.
    pub async fn ingest_unguarded(&self, batch: &Batch) -> Result<(), SinkError> {
        let key_field = key_field(&self.partition_key(batch));
        let docs = batch
            .records()
            .iter()
            .map(|r| {
                document_json(&self.config.scope, r, self.config.shape, &key_field)
                    .map_err(|reason| SinkError::fatal(format!("{}: {reason}", r.id)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
        match self.ingest_docs(&docs).await? {
            Attempt::Refused(why) => Err(SinkError::fatal(why)),
            _ => Ok(()),
        }
    }

    /// The term that holds every document of `batch`'s topic and partition.
    fn partition_key(&self, batch: &Batch) -> String {
        let id = batch.id();
        self.config
            .scope
            .term_partition_key(&id.topic, id.partition)
    }

    /// Ingests `docs` as newline-delimited bodies of at most [`MAX_INGEST_BYTES`] (a larger
    /// document goes alone, and Quickwit's refusal isolates it). Stops at the first refused body.
    /// A range refused after an earlier body of it was written is bisected by the caller and
    /// those documents sent again: only batches above the cap can repeat that way.
    async fn ingest_docs(&self, docs: &[&str]) -> Result<Attempt, SinkError> {
        let sizes: Vec<usize> = docs.iter().map(|d| d.len() + 1).collect();
        let mut last = Attempt::Written(WriteReport::default());
        for range in chunks(&sizes, MAX_INGEST_BYTES, usize::MAX) {
            let mut body = String::with_capacity(sizes[range.clone()].iter().sum());
            for doc in &docs[range] {
                body.push_str(doc);
                body.push('\n');
            }
            last = self.ingest(body).await?;
            if let Attempt::Refused(_) = last {
                break;
            }
        }
        Ok(last)
    }

    async fn ingest(&self, body: String) -> Result<Attempt, SinkError> {
        let what = format!("ingest into {}", self.config.index);
        let mut url = self.url(&format!("api/v1/{}/ingest", self.config.index))?;
        url.query_pairs_mut()
            .append_pair("commit", self.config.commit.param());
        let request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/x-ndjson")
            .body(body);
        let reply = exchange(request, &what).await?;
        match reply.status.as_u16() {
            200..=299 => {
                let answer: IngestAnswer = serde_json::from_str(&reply.body).unwrap_or_default();
                debug!(rejected = ?answer.num_rejected_docs, "ingested");
                Ok(Attempt::Written(WriteReport::default()))
            }
            400 | 413 => Ok(Attempt::Refused(format!(
                "{}: {}",
                reply.status,
                reply.snippet()
            ))),
            _ => Err(self.failure(&reply, &what)),
        }
    }
}

#[async_trait]
impl Sink for QuickwitSink {
    async fn open(&self) -> Result<(), SinkError> {
        if !self.config.create_index {
            return Ok(());
        }
        let what = format!("GET index {}", self.config.index);
        let url = self.url(&format!("api/v1/indexes/{}", self.config.index))?;
        let reply = exchange(self.client.get(url), &what).await?;
        match reply.status.as_u16() {
            200 => return Ok(()),
            404 => {}
            _ => return Err(self.failure(&reply, &what)),
        }
        let what = format!("create index {}", self.config.index);
        let body = index_config(&self.config.index, self.config.commit_timeout_secs);
        let reply = exchange(
            self.client.post(self.url("api/v1/indexes")?).json(&body),
            &what,
        )
        .await?;
        if reply.status.is_success() || reply.body.contains("already exists") {
            Ok(())
        } else {
            Err(self.failure(&reply, &what))
        }
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let partition_key = self.partition_key(batch);
        let watermark = self.watermark(&partition_key).await?;
        let fresh = match watermark {
            Some(w) => batch.after(w),
            None => Some(batch.clone()),
        };
        let skipped = (batch.len() - fresh.as_ref().map_or(0, Batch::len)) as u64;
        let Some(fresh) = fresh else {
            return Ok(WriteReport::already_present(batch.len()).into());
        };
        let records = fresh.records();
        let key_field = key_field(&partition_key);
        let (docs, mut rejected) = convert_records(&fresh, |i, r| {
            document_json(&self.config.scope, r, self.config.shape, &key_field).map(|d| (i, d))
        });
        let mut plan = Isolator::new(docs.len());
        while let Some((start, end)) = plan.next_range() {
            let attempt = self
                .ingest_docs(
                    &docs[start..end]
                        .iter()
                        .map(|(_, doc)| doc.as_str())
                        .collect::<Vec<_>>(),
                )
                .await?;
            plan.record(start, end, attempt);
        }
        let (_, refused) = plan.finish_rejecting(|i| records[docs[i].0].id.clone());
        let refused_offsets: BTreeSet<u64> = refused.iter().map(|r| r.id.offset).collect();
        rejected.extend(refused);
        let sent: Vec<u64> = docs
            .iter()
            .map(|(i, _)| records[*i].id.offset)
            .filter(|o| !refused_offsets.contains(o))
            .collect();
        let mut dropped = 0;
        if !sent.is_empty() {
            // Quickwit drops documents its mapping cannot parse; the ingest answer is already
            // committed (commit=wait_for), so what the index lacks now was dropped.
            let present = self.present(&partition_key, &sent).await?;
            if present.len() != sent.len() {
                let sent_set: BTreeSet<u64> = sent.iter().copied().collect();
                for (i, _) in &docs {
                    let record = &records[*i];
                    let offset = record.id.offset;
                    if sent_set.contains(&offset) && !present.contains(&offset) {
                        warn!(record = %record.id, "Quickwit dropped a document");
                        dropped += 1;
                        rejected.push(RejectedRecord::new(
                            record.id.clone(),
                            "Quickwit did not index the document: its doc mapping could not \
                             parse it (see the indexer's logs)",
                        ));
                    }
                }
            }
        }
        Ok(Outcome::new(
            WriteReport {
                written: sent.len() as u64 - dropped,
                already_present: skipped,
            },
            rejected,
        ))
    }

    fn describe(&self) -> Description {
        Description::new(
            "quickwit",
            format!(
                "search the partition's highest pico_offset (term on a length-safe partition key), \
                 ingest only above it with commit={}, then read the batch's distinct offsets back",
                self.config.commit.param()
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        .with_claim(
            Scenario::LostAck,
            Description::measured(
                "an answer lost before the commit published leaves documents the retry's \
                 watermark search cannot see yet",
            ),
        )
        .with_claim(
            Scenario::ZombieWriter,
            Description::measured("two writers of one partition read the same watermark"),
        )
        .with_claim(
            Scenario::CancelledConsume,
            Description::measured(
                "an ingest cut off while Quickwit waits for its commit is not searchable yet \
                 when the batch is redelivered: its documents are ingested again",
            ),
        )
    }
}

/// Bytes per ingest request: Quickwit refuses bodies above 10 MiB by default
/// (`max_content_length`), closing the connection mid-body (measured with 10 000 records of
/// 1 KiB: "error writing a body").
const MAX_INGEST_BYTES: usize = 8 * 1024 * 1024;

/// The extra field every document carries: its partition's term.
fn key_field(partition_key: &str) -> [(&'static str, serde_json::Value); 1] {
    [(PARTITION_KEY, serde_json::Value::from(partition_key))]
}
