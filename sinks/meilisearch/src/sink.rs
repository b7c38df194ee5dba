//! [`MeilisearchSink`].

use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_http_common::{Reply, base_url, exchange};
use pico_sink::{
    Attempt, Batch, Claim, Description, Isolator, Scenario, Sink, SinkError, WriteReport,
    convert_records, document_json,
};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use tracing::{debug, warn};

use crate::config::MeilisearchSinkConfig;
use crate::task::{Enqueued, MeiliError, Task, Verdict};

/// Adds or replaces documents keyed by the record identity; see the crate docs.
pub struct MeilisearchSink {
    config: MeilisearchSinkConfig,
    client: reqwest::Client,
    documents_url: reqwest::Url,
    base: reqwest::Url,
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
        let client = config.http.client(true)?;
        Ok(Self {
            config,
            client,
            documents_url,
            base,
        })
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api_key {
            Some(key) => request.header(AUTHORIZATION, format!("Bearer {key}")),
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
    async fn open(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    async fn consume(&mut self, batch: &Batch) -> Result<WriteReport, SinkError> {
        let records = batch.records();
        let (docs, mut rejected) = convert_records(batch, |i, r| {
            let key = self.config.scope.meilisearch_key(&r.id);
            document_json(
                &self.config.scope,
                r,
                self.config.shape,
                &[(self.config.primary_key.as_str(), key.into())],
            )
            .map(|doc| (i, doc))
        });
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
        let (report, refused) = plan.finish_rejecting(|i| records[docs[i].0].id.clone());
        rejected.extend(refused);
        SinkError::outcome(report, rejected)
    }

    async fn close(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    fn describe(&self) -> Description {
        Description {
            sink: "meilisearch".into(),
            mechanism: format!(
                "add-or-replace documents with primary key {} = the identity in Meilisearch's \
                 key alphabet; consume returns after the task succeeded",
                self.config.primary_key
            ),
            claims: vec![(Scenario::ReplayRebatched, Claim::NoVisibleDuplicate)],
            default_claim: Claim::NoVisibleDuplicate,
        }
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
            let c = MeilisearchSinkConfig {
                index: bad.into(),
                ..ok.clone()
            };
            assert!(
                matches!(MeilisearchSink::new(c), Err(SinkError::Fatal { .. })),
                "{bad:?}"
            );
        }
        let c = MeilisearchSinkConfig {
            primary_key: "pico.key".into(),
            ..ok
        };
        assert!(matches!(
            MeilisearchSink::new(c),
            Err(SinkError::Fatal { .. })
        ));
    }
}
