//! [`DorisSink`].

use std::time::{Duration, Instant};

use async_trait::async_trait;
use pico_http_common::{Advice, HttpClient, Reply, base_url, exchange};
use pico_sink::identity::BatchId;
use pico_sink::kit::{Attempt, Isolator, convert_records};
use pico_sink::{Batch, Claim, Description, Outcome, Scenario, Sink, SinkError, WriteReport};
use reqwest::header::{CONTENT_TYPE, EXPECT, LOCATION};
use tracing::{debug, warn};

use crate::config::DorisSinkConfig;
use crate::load::{LoadAnswer, LoadOutcome, row};
use crate::sql;

/// What to change when the server answers with a fatal status of the shared table.
const ADVICE: Advice = Advice {
    denied: "check user and password",
    not_found: "check fe_url / load_url (Doris FE HTTP port, 8030 by default)",
};

/// Stream Loads batches with a label from the batch identity; see the crate docs.
pub struct DorisSink {
    config: DorisSinkConfig,
    client: HttpClient,
    fe: reqwest::Url,
    load_url: reqwest::Url,
}

/// The FE's answer to a SQL statement.
#[derive(serde::Deserialize)]
struct SqlAnswer {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    msg: String,
    #[serde(default)]
    data: serde_json::Value,
}

impl DorisSink {
    /// Checks the configuration and builds the client; bad URLs or names are `Fatal`.
    pub fn new(config: DorisSinkConfig) -> Result<Self, SinkError> {
        // Redirects are followed by hand so that credentials reach the BE.
        let client = HttpClient::new(&config.http, false)?;
        Self::build(client, config)
    }

    /// Uses an HTTP client the caller already has. It must not follow redirects
    /// (`reqwest::redirect::Policy::none()`): the FE redirects a Stream Load to a BE, and the
    /// sink follows by hand so the credentials reach the BE.
    pub fn with_client(
        client: reqwest::Client,
        config: DorisSinkConfig,
    ) -> Result<Self, SinkError> {
        let client = HttpClient::with_client(client, &config.http)?;
        Self::build(client, config)
    }

    fn build(client: HttpClient, config: DorisSinkConfig) -> Result<Self, SinkError> {
        sql::check_name(&config.database, "database").map_err(SinkError::fatal)?;
        sql::check_name(&config.table, "table").map_err(SinkError::fatal)?;
        let fe = base_url(&config.fe_url, "fe_url")?;
        let load_base = match &config.load_url {
            Some(url) => base_url(url, "load_url")?,
            None => fe.clone(),
        };
        let load_url = load_base
            .join(&format!(
                "api/{}/{}/_stream_load",
                config.database, config.table
            ))
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        Ok(Self {
            config,
            client,
            fe,
            load_url,
        })
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request.basic_auth(&self.config.user, Some(self.config.password.expose()))
    }

    /// Runs one statement through the FE's SQL endpoint; the rows of a result set.
    pub async fn sql(
        &self,
        database: &str,
        statement: &str,
    ) -> Result<serde_json::Value, SinkError> {
        let url = self
            .fe
            .join(&format!("api/query/default_cluster/{database}"))
            .map_err(|e| SinkError::fatal(format!("fe_url: {e}")))?;
        let what = format!("SQL {}", statement.chars().take(60).collect::<String>());
        let request = self
            .authorize(self.client.post(url))
            .json(&serde_json::json!({ "stmt": statement }));
        let reply = exchange(request, &what).await?;
        if !reply.status.is_success() {
            return Err(self.http_failure(&reply, &what));
        }
        let answer: SqlAnswer = reply.json(&what)?;
        if answer.code != 0 {
            return Err(SinkError::fatal(format!(
                "{what}: {} (code {})",
                answer.msg, answer.code
            )));
        }
        Ok(answer.data)
    }

    fn http_failure(&self, reply: &Reply, what: &str) -> SinkError {
        reply.failure(what, &ADVICE)
    }

    /// One Stream Load, following the FE's redirect to a BE by hand.
    async fn stream_load(
        &self,
        label: &str,
        body: &bytes::Bytes,
        rows: usize,
    ) -> Result<LoadOutcome, SinkError> {
        let what = format!("Stream Load {label}");
        let mut url = self.load_url.clone();
        for _ in 0..3 {
            let request = self
                .authorize(self.client.put(url.clone()))
                .header(EXPECT, "100-continue")
                .header(CONTENT_TYPE, "application/json")
                .header("label", label)
                .header("format", "json")
                .header("read_json_by_line", "true")
                .header("max_filter_ratio", "0")
                .body(body.clone());
            let reply = exchange(request, &what).await?;
            if reply.status.is_redirection() {
                let location = reply
                    .headers
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| {
                        reply.retryable(&format!("{what}: redirect without Location"))
                    })?;
                url = url.join(location).map_err(|e| {
                    SinkError::retryable(format!("{what}: bad redirect {location:?}: {e}"))
                })?;
                debug!(%url, "Stream Load redirected to a BE");
                continue;
            }
            if !reply.status.is_success() {
                return Err(self.http_failure(&reply, &what));
            }
            return match serde_json::from_str::<LoadAnswer>(&reply.body) {
                Ok(answer) => Ok(answer.outcome(rows)),
                // The FE's own errors are {"status": "FAILED", "msg": …}.
                Err(_) => {
                    let lower = reply.body.to_ascii_lowercase();
                    if lower.contains("access denied")
                        || lower.contains("unknown")
                        || lower.contains("not exist")
                    {
                        Err(reply.fatal(&what, "check database, table, user (or set create_table)"))
                    } else {
                        Err(reply.retryable(&what))
                    }
                }
            };
        }
        Err(SinkError::retryable(format!("{what}: too many redirects")))
    }

    /// Loads one range under its label, waiting for a running load of the same label.
    async fn load_range(
        &self,
        label: &str,
        body: bytes::Bytes,
        rows: usize,
    ) -> Result<Attempt, SinkError> {
        let started = Instant::now();
        loop {
            match self.stream_load(label, &body, rows).await? {
                LoadOutcome::Loaded(n) => {
                    return Ok(Attempt::Written(WriteReport {
                        written: n,
                        already_present: rows as u64 - n.min(rows as u64),
                    }));
                }
                LoadOutcome::AlreadyLoaded => {
                    return Ok(Attempt::Written(WriteReport::already_present(rows)));
                }
                LoadOutcome::Running if started.elapsed() < self.config.label_wait => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                LoadOutcome::Running => {
                    return Err(SinkError::retryable(format!(
                        "label {label} is held by a load still running after {:?}",
                        self.config.label_wait
                    )));
                }
                LoadOutcome::Refused(reason) => return Ok(Attempt::Refused(reason)),
                LoadOutcome::Retry(message) => {
                    return Err(SinkError::retryable(format!("label {label}: {message}")));
                }
                LoadOutcome::Fatal(message) => {
                    return Err(SinkError::fatal(format!("label {label}: {message}")));
                }
            }
        }
    }
}

#[async_trait]
impl Sink for DorisSink {
    async fn open(&self) -> Result<(), SinkError> {
        if self.config.create_table {
            self.sql(
                "information_schema",
                &sql::create_database(&self.config.database),
            )
            .await?;
            let ddl = sql::create_table(
                &self.config.database,
                &self.config.table,
                self.config.replication_num,
            );
            self.sql(&self.config.database, &ddl).await?;
        }
        Ok(())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let records = batch.records();
        let id = batch.id();
        let (rows, mut rejected) = convert_records(batch, |i, r| {
            row(&self.config.scope, r).map(|line| (i, line))
        });
        let mut plan = Isolator::new(rows.len());
        while let Some((start, end)) = plan.next_range() {
            let part = &rows[start..end];
            let (first, last) = (
                records[part[0].0].id.offset,
                records[part[end - start - 1].0].id.offset,
            );
            let range = BatchId::new(id.topic.clone(), id.partition, first, last)
                .map_err(|e| SinkError::fatal(format!("range of {id}: {e}")))?;
            let label = self.config.scope.doris_label(&range);
            let mut body = String::new();
            for (_, line) in part {
                body.push_str(line);
                body.push('\n');
            }
            let attempt = self.load_range(&label, body.into(), part.len()).await?;
            if let Attempt::Refused(reason) = &attempt {
                warn!(label, reason, "Doris filtered rows; splitting");
            }
            plan.record(start, end, attempt);
        }
        let (report, refused) = plan.finish_rejecting(|i| records[rows[i].0].id.clone());
        rejected.extend(refused);
        Ok(Outcome::new(report, rejected))
    }

    fn describe(&self) -> Description {
        Description::new(
            "doris",
            "Stream Load labelled [ns/]topic:partition:first..=last (Label Already Exists + \
             FINISHED = already written) into a Unique Key table on (pico_topic, pico_partition, \
             pico_offset)",
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        .with_claim(Scenario::ReplayRebatched, Claim::NoVisibleDuplicate)
    }
}
