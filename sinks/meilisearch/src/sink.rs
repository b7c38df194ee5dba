//! [`MeilisearchSink`].

use std::collections::HashSet;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_http_common::{HttpClient, Reply, base_url, exchange};
use pico_sink::kit::{Attempt, Isolator, convert_records, document_json};
use pico_sink::{Batch, Claim, Description, Outcome, Scenario, Sink, SinkError, WriteReport};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use tracing::{debug, warn};

use crate::config::MeilisearchSinkConfig;
use crate::task::{Enqueued, MeiliError, Task, Verdict};

/// Adds or replaces documents keyed by the record identity; see the crate docs.
pub struct MeilisearchSink {
    config: MeilisearchSinkConfig,
    client: HttpClient,
    documents_url: reqwest::Url,
    base: reqwest::Url,
}

/// `POST /documents/fetch` answer.
#[derive(serde::Deserialize)]
struct Fetched {
    #[serde(default)]
    results: Vec<serde_json::Map<String, serde_json::Value>>,
}

fn check_uid(uid: &str) -> Result<(), SinkError> {
    if uid.is_empty()
        || uid.len() > 400
        || !uid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(SinkError::fatal(format!(
            "index {uid:?} is not a valid Meilisearch index uid: [A-Za-z0-9_-], 1 to 400 bytes"
        )));
    }
    Ok(())
}

impl MeilisearchSink {
    /// Checks the configuration and builds the client; a bad URL or index uid is `Fatal`.
    pub fn new(config: MeilisearchSinkConfig) -> Result<Self, SinkError> {
        let client = HttpClient::new(&config.http, true)?;
        Self::build(client, config)
    }

    /// Uses an HTTP client the caller already has; the configuration's headers and API key
    /// are sent on every request.
    pub fn with_client(
        client: reqwest::Client,
        config: MeilisearchSinkConfig,
    ) -> Result<Self, SinkError> {
        let client = HttpClient::with_client(client, &config.http)?;
        Self::build(client, config)
    }

    fn build(client: HttpClient, config: MeilisearchSinkConfig) -> Result<Self, SinkError> {
        check_uid(&config.index)?;
        if !config
            .primary_key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            || config.primary_key.is_empty()
        {
            return Err(SinkError::fatal(format!(
                "primary_key {:?} must be [A-Za-z0-9_-]",
                config.primary_key
            )));
        }
        let base = base_url(&config.url, "url")?;
        let mut documents_url = base
            .join(&format!("indexes/{}/documents", config.index))
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        documents_url
            .query_pairs_mut()
            .append_pair("primaryKey", &config.primary_key);
        Ok(Self {
            config,
            client,
            documents_url,
            base,
        })
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            Some(key) => request.header(AUTHORIZATION, format!("Bearer {}", key.expose())),
            None => request,
        }
    }

    fn error_of(&self, reply: &Reply) -> Verdict {
        match serde_json::from_str::<MeiliError>(&reply.body) {
            Ok(e) if !e.code.is_empty() => e.verdict(&self.config.primary_key),
            _ if reply.status.as_u16() == 413 => {
                Verdict::Refused(format!("413: {}", reply.snippet()))
            }
            _ => Verdict::Retry(format!("{}: {}", reply.status, reply.snippet())),
        }
    }

    /// Enqueues `body` (a JSON array) and waits for its task; the attempt for the range.
    async fn write(&self, body: String, count: usize) -> Result<Attempt, SinkError> {
        let what = format!("POST /indexes/{}/documents", self.config.index);
        let request = self
            .authorize(self.client.post(self.documents_url.clone()))
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let reply = exchange(request, &what).await?;
        if reply.status.as_u16() != 202 && !reply.status.is_success() {
            if reply.is_transient() {
                return Err(reply.retryable(&what));
            }
            return match self.error_of(&reply) {
                Verdict::Refused(reason) => Ok(Attempt::Refused(reason)),
                Verdict::Retry(reason) => Err(SinkError::retryable(format!("{what}: {reason}"))),
                Verdict::Fatal(reason) => Err(SinkError::fatal(format!("{what}: {reason}"))),
            };
        }
        let enqueued: Enqueued = reply.json(&what)?;
        let task = self.wait(enqueued.task_uid).await?;
        match task.status.as_str() {
            // Every document sent was missing at the pre-read: indexed = written.
            "succeeded" => Ok(Attempt::Written(WriteReport {
                written: task
                    .details
                    .and_then(|d| d.indexed_documents)
                    .unwrap_or(count as u64),
                already_present: 0,
            })),
            "failed" => {
                let error = task.error.unwrap_or(MeiliError {
                    message: "failed without an error".into(),
                    code: String::new(),
                    kind: "internal".into(),
                });
                match error.verdict(&self.config.primary_key) {
                    Verdict::Refused(reason) => Ok(Attempt::Refused(reason)),
                    Verdict::Retry(reason) => Err(SinkError::retryable(format!(
                        "task {} failed: {reason}",
                        enqueued.task_uid
                    ))),
                    Verdict::Fatal(reason) => Err(SinkError::fatal(format!(
                        "task {} failed: {reason}",
                        enqueued.task_uid
                    ))),
                }
            }
            other => Err(SinkError::retryable(format!(
                "task {} ended {other}; the batch is sent again",
                enqueued.task_uid
            ))),
        }
    }

    /// Which of `keys` the index already holds: one `POST /documents/fetch` by ids, asking only
    /// for the key field. A missing index holds none. `None` when the server cannot tell (an
    /// older Meilisearch without `ids` in the fetch route): the caller then writes everything,
    /// which add-or-replace makes harmless.
    async fn present(&self, keys: &[&str]) -> Result<Option<HashSet<String>>, SinkError> {
        let what = format!("POST /indexes/{}/documents/fetch", self.config.index);
        let url = self
            .base
            .join(&format!("indexes/{}/documents/fetch", self.config.index))
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        let body = serde_json::json!({
            "ids": keys,
            "fields": [self.config.primary_key],
            "limit": keys.len(),
        });
        let reply = exchange(self.authorize(self.client.post(url)).json(&body), &what).await?;
        if reply.status.is_success() {
            let found: Fetched = reply.json(&what)?;
            return Ok(Some(
                found
                    .results
                    .into_iter()
                    .filter_map(|mut d| match d.remove(&self.config.primary_key) {
                        Some(serde_json::Value::String(k)) => Some(k),
                        _ => None,
                    })
                    .collect(),
            ));
        }
        if reply.is_transient() {
            return Err(reply.retryable(&what));
        }
        match self.error_of(&reply) {
            Verdict::Fatal(reason) if !reason.starts_with("index_not_found") => {
                Err(SinkError::fatal(format!("{what}: {reason}")))
            }
            _ if reply.status.as_u16() == 404 => Ok(Some(HashSet::new())),
            _ => {
                debug!(status = %reply.status, "the server cannot fetch by ids; writing every document");
                Ok(None)
            }
        }
    }

    /// Polls a task until it finished, backing off from 20 ms to 1 s.
    async fn wait(&self, uid: u64) -> Result<Task, SinkError> {
        let url = self
            .base
            .join(&format!("tasks/{uid}"))
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        let what = format!("GET /tasks/{uid}");
        let started = Instant::now();
        let mut pause = Duration::from_millis(20);
        loop {
            let reply = exchange(self.authorize(self.client.get(url.clone())), &what).await?;
            if !reply.status.is_success() {
                return match self.error_of(&reply) {
                    Verdict::Fatal(reason) => Err(SinkError::fatal(format!("{what}: {reason}"))),
                    _ => Err(reply.retryable(&what)),
                };
            }
            let task: Task = reply.json(&what)?;
            if matches!(task.status.as_str(), "succeeded" | "failed" | "canceled") {
                debug!(uid, status = task.status, "task finished");
                return Ok(task);
            }
            if started.elapsed() > self.config.task_timeout {
                return Err(SinkError::retryable(format!(
                    "task {uid} is still {} after {:?}; the batch is sent again (harmless: \
                     add-or-replace by primary key)",
                    task.status, self.config.task_timeout
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

#[async_trait]
impl Sink for MeilisearchSink {
    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let records = batch.records();
        let (all, mut rejected) = convert_records(batch, |i, r| {
            let key = self.config.scope.meilisearch_key(&r.id);
            document_json(
                &self.config.scope,
                r,
                self.config.shape,
                &[(self.config.primary_key.as_str(), key.clone().into())],
            )
            .map(|doc| (i, doc, key))
        });
        // A replay is answered by a read: documents the index holds are not sent again.
        let keys: Vec<&str> = all.iter().map(|(_, _, k)| k.as_str()).collect();
        let present = if keys.is_empty() {
            None
        } else {
            self.present(&keys).await?
        };
        let docs: Vec<(usize, String)> = all
            .iter()
            .filter(|(_, _, k)| !present.as_ref().is_some_and(|p| p.contains(k)))
            .map(|(i, d, _)| (*i, d.clone()))
            .collect();
        let already_present = (all.len() - docs.len()) as u64;
        let mut plan = Isolator::new(docs.len());
        while let Some((start, end)) = plan.next_range() {
            let parts: Vec<&str> = docs[start..end].iter().map(|(_, d)| d.as_str()).collect();
            let body = format!("[{}]", parts.join(","));
            let attempt = self.write(body, end - start).await?;
            if let Attempt::Refused(reason) = &attempt {
                warn!(batch = %batch.id(), start, end, reason, "Meilisearch refused documents");
            }
            plan.record(start, end, attempt);
        }
        let (mut report, refused) = plan.finish_rejecting(|i| records[docs[i].0].id.clone());
        report.already_present += already_present;
        rejected.extend(refused);
        debug!(batch = %batch.id(), written = report.written, already_present, rejected = rejected.len(), "indexed");
        Ok(Outcome::new(report, rejected))
    }

    fn describe(&self) -> Description {
        Description::new(
            "meilisearch",
            format!(
                "add-or-replace documents with primary key {} = the identity in Meilisearch's \
                 key alphabet, after a fetch by ids skips those already indexed; consume returns \
                 after the task succeeded",
                self.config.primary_key
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        .with_claim(Scenario::ReplayRebatched, Claim::NoVisibleDuplicate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_checked() {
        let ok = MeilisearchSinkConfig::new("http://127.0.0.1:7700", "pico_events-1");
        assert!(MeilisearchSink::new(ok.clone()).is_ok());
        for bad in ["", "a:b", "a b", "é"] {
            let mut c = ok.clone();
            c.index = bad.into();
            assert!(
                matches!(MeilisearchSink::new(c), Err(SinkError::Fatal { .. })),
                "{bad:?}"
            );
        }
        let mut c = ok;
        c.primary_key = "pico.key".into();
        assert!(matches!(
            MeilisearchSink::new(c),
            Err(SinkError::Fatal { .. })
        ));
    }
}
