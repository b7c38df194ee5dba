//! [`ClickHouseSink`].

use async_trait::async_trait;
use pico_sink::{
    Attempt, Batch, Claim, Description, EnvelopeHeader, Isolator, Outcome, Record, RejectedRecord,
    Sink, SinkError, WriteReport,
};
use tokio::sync::OnceCell;
use tracing::debug;

use crate::config::{ClickHouseSinkConfig, ident, literal};
use crate::tsv::escape;

/// Inserts batches above the partition's watermark; see the crate docs.
pub struct ClickHouseSink {
    config: ClickHouseSinkConfig,
    client: reqwest::Client,
    server: OnceCell<Server>,
}

/// What `open` learned about the server.
#[derive(Debug, Clone)]
struct Server {
    version: String,
    tokens: bool,
}

const COLUMNS: &str = "pico_topic, pico_partition, pico_offset, key, value, headers, ts";

/// `major.minor` of a version string.
fn major_minor(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The `Code: N` of a server exception.
fn exception_code(body: &str) -> Option<u32> {
    body.split("Code: ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|c| c.parse::<u32>().ok())
}

/// Exception codes meaning "this input cannot be parsed into the column types" (bad data, not
/// a broken server): cannot parse text, assertion, date, datetime, number, argument out of bound,
/// cannot convert, incorrect data.
const DATA_ERRORS: [u32; 9] = [6, 26, 27, 38, 41, 69, 70, 72, 117];

/// How a statement failed.
struct Failed {
    /// The input could not be parsed (an INSERT with bad data).
    data: bool,
    error: SinkError,
}

/// A server exception onto the contract, by its `Code: N`.
fn classify(status: u16, body: &str, what: &str) -> SinkError {
    let code = exception_code(body);
    let text: String = body.chars().take(400).collect();
    let detail = format!("{what}: HTTP {status}: {}", text.trim());
    match (status, code) {
        (_, Some(60 | 81)) => SinkError::fatal(format!(
            "{detail} — the database or table does not exist: create it or set create_if_missing"
        )),
        (401 | 403, _) | (_, Some(192 | 193 | 194 | 516)) => {
            SinkError::fatal(format!("{detail} — check the user and password"))
        }
        (_, Some(16 | 47 | 62)) => SinkError::fatal(format!(
            "{detail} — the table does not have the columns the sink writes"
        )),
        (404, _) => SinkError::fatal(format!("{detail} — check the url")),
        _ => SinkError::retryable(detail),
    }
}

impl ClickHouseSink {
    /// Builds its own HTTP client.
    pub fn new(config: ClickHouseSinkConfig) -> Result<Self, SinkError> {
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| SinkError::fatal("cannot build the HTTP client").with_source(e))?;
        Self::with_client(client, config)
    }

    /// Uses an HTTP client the caller already has.
    pub fn with_client(
        client: reqwest::Client,
        config: ClickHouseSinkConfig,
    ) -> Result<Self, SinkError> {
        reqwest::Url::parse(&config.url)
            .map_err(|e| SinkError::fatal(format!("url {:?} is not a URL: {e}", config.url)))?;
        Ok(Self {
            config,
            client,
            server: OnceCell::new(),
        })
    }

    /// The server version, once opened.
    pub fn server_version(&self) -> Option<&str> {
        self.server.get().map(|s| s.version.as_str())
    }

    fn tokens(&self) -> bool {
        self.server.get().is_some_and(|s| s.tokens)
    }

    /// The idempotency mechanisms in force on this server.
    pub fn active_mechanisms(&self) -> Vec<&'static str> {
        let mut m = vec![
            "partition watermark",
            "ReplacingMergeTree (read with FINAL)",
        ];
        if self.tokens() {
            m.push("insert_deduplication_token");
        }
        m
    }

    /// Runs `sql` (with `body` as INSERT data) and returns the answer.
    async fn run(
        &self,
        sql: &str,
        body: Vec<u8>,
        settings: &[(&str, String)],
    ) -> Result<Vec<u8>, SinkError> {
        self.run_data(sql, body, settings)
            .await
            .map_err(|f| f.error)
    }

    /// Like `run`, telling data errors apart.
    async fn run_data(
        &self,
        sql: &str,
        body: Vec<u8>,
        settings: &[(&str, String)],
    ) -> Result<Vec<u8>, Failed> {
        let fail = |error| Failed { data: false, error };
        let mut url = reqwest::Url::parse(&self.config.url)
            .map_err(|e| fail(SinkError::fatal(format!("url: {e}"))))?;
        // INSERT data travels as the body with the statement in the URL; any other statement is
        // the body itself (older servers refuse a POST without a Content-Length).
        let body = {
            let mut q = url.query_pairs_mut();
            for (k, v) in settings {
                q.append_pair(k, v);
            }
            if body.is_empty() {
                sql.as_bytes().to_vec()
            } else {
                q.append_pair("query", sql);
                body
            }
        };
        let mut req = self.client.post(url).body(body);
        if let Some((user, password)) = &self.config.credentials {
            req = req
                .header("X-ClickHouse-User", user)
                .header("X-ClickHouse-Key", password.expose());
        }
        let what: String = sql.chars().take(60).collect();
        let response = req
            .send()
            .await
            .map_err(|e| fail(SinkError::retryable(format!("{what}: {e}")).with_source(e)))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| {
            fail(SinkError::retryable(format!("{what}: reading the answer: {e}")).with_source(e))
        })?;
        if status == 200 {
            Ok(bytes.to_vec())
        } else {
            let text = String::from_utf8_lossy(&bytes);
            Err(Failed {
                data: exception_code(&text).is_some_and(|c| DATA_ERRORS.contains(&c)),
                error: classify(status, &text, &what),
            })
        }
    }

    async fn prepare(&self) -> Result<&Server, SinkError> {
        self.server
            .get_or_try_init(|| self.inspect_and_create())
            .await
    }

    /// Learns the server version, creates what is missing, checks the table's columns.
    async fn inspect_and_create(&self) -> Result<Server, SinkError> {
        let version =
            String::from_utf8_lossy(&self.run("SELECT version()", Vec::new(), &[]).await?)
                .trim()
                .to_owned();
        let tokens = major_minor(&version) >= (22, 2);
        let table = self.config.qualified();
        if self.config.create_if_missing {
            self.run(
                &format!(
                    "CREATE DATABASE IF NOT EXISTS {}",
                    ident(&self.config.database)
                ),
                Vec::new(),
                &[],
            )
            .await?;
            let settings = if tokens {
                format!(
                    " SETTINGS non_replicated_deduplication_window = {}",
                    self.config.deduplication_window
                )
            } else {
                String::new()
            };
            let mapped: String = self
                .config
                .mapped_columns
                .iter()
                .map(|m| format!(", {} Nullable({})", ident(&m.column), m.sql_type))
                .collect();
            self.run(
                &format!(
                    "CREATE TABLE IF NOT EXISTS {table} (pico_topic String, pico_partition UInt32, \
                     pico_offset UInt64, key String, value String, headers String, ts Nullable(Int64){mapped}) \
                     ENGINE = ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset){settings}"
                ),
                Vec::new(),
                &[],
            )
            .await?;
        }
        let described = self
            .run(
                &format!("DESCRIBE TABLE {table} FORMAT TabSeparated"),
                Vec::new(),
                &[],
            )
            .await?;
        let described = String::from_utf8_lossy(&described);
        let missing: Vec<&str> = COLUMNS
            .split(", ")
            .chain(self.config.mapped_columns.iter().map(|m| m.column.as_str()))
            .filter(|c| !described.lines().any(|l| l.split('\t').next() == Some(c)))
            .collect();
        if !missing.is_empty() {
            return Err(SinkError::fatal(format!(
                "table {table} lacks the columns {}: alter it or point the sink at a table of the documented shape",
                missing.join(", ")
            )));
        }
        Ok(Server { version, tokens })
    }

    /// Highest offset stored for a topic-partition, if any.
    async fn watermark(&self, topic: &str, partition: u32) -> Result<Option<u64>, SinkError> {
        let answer = self
            .run(
                &format!(
                    "SELECT count(), max(pico_offset) FROM {} WHERE pico_topic = {} AND pico_partition = {partition} FORMAT TabSeparated",
                    self.config.qualified(),
                    literal(topic).replace('\0', "\\0")
                ),
                Vec::new(),
                &[],
            )
            .await?;
        let text = String::from_utf8_lossy(&answer);
        let mut fields = text.trim().split('\t');
        let count: u64 = fields.next().and_then(|c| c.parse().ok()).unwrap_or(0);
        let max: Option<u64> = fields.next().and_then(|m| m.parse().ok());
        Ok(if count == 0 { None } else { max })
    }

    /// The columns of an INSERT.
    fn insert_columns(&self) -> String {
        let mut cols = COLUMNS.to_owned();
        for m in &self.config.mapped_columns {
            cols.push_str(", ");
            cols.push_str(&ident(&m.column));
        }
        cols
    }

    /// TabSeparated rows of `records` with their mapped fields.
    fn rows(&self, records: &[(&Record, Vec<Option<String>>)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(records.len() * 128);
        for (r, mapped) in records {
            escape(
                self.config.scope.qualified_topic(&r.id.topic).as_bytes(),
                &mut out,
            );
            out.extend_from_slice(format!("\t{}\t{}\t", r.id.partition, r.id.offset).as_bytes());
            escape(r.key.as_deref().unwrap_or_default(), &mut out);
            out.push(b'\t');
            escape(&r.value, &mut out);
            out.push(b'\t');
            escape(
                serde_json::to_string(&EnvelopeHeader::all_of(&r.headers))
                    .unwrap_or_default()
                    .as_bytes(),
                &mut out,
            );
            out.push(b'\t');
            match r.timestamp_ms {
                Some(ms) => out.extend_from_slice(ms.to_string().as_bytes()),
                None => out.extend_from_slice(b"\\N"),
            }
            for field in mapped {
                out.push(b'\t');
                match field {
                    Some(text) => escape(text.as_bytes(), &mut out),
                    None => out.extend_from_slice(b"\\N"),
                }
            }
            out.push(b'\n');
        }
        out
    }
}

#[async_trait]
impl Sink for ClickHouseSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.prepare().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let tokens = self.prepare().await?.tokens;
        let topic = self
            .config
            .scope
            .qualified_topic(batch.topic())
            .into_owned();
        let watermark = self.watermark(&topic, batch.partition()).await?;
        let tail = match watermark {
            Some(w) => batch.after(w),
            None => Some(batch.clone()),
        };
        let Some(tail) = tail else {
            return Ok(WriteReport::already_present(batch.len()).into());
        };
        // Mapped fields first: a payload that is not a JSON object is rejected here.
        let mut rejected = Vec::new();
        let mut ready: Vec<(&Record, Vec<Option<String>>)> = Vec::with_capacity(tail.len());
        for r in tail.records() {
            if self.config.mapped_columns.is_empty() {
                ready.push((r, Vec::new()));
                continue;
            }
            let fields = serde_json::from_slice::<serde_json::Value>(&r.value)
                .map_err(|e| format!("value is not JSON: {e}"))
                .and_then(|v| pico_sink::extract_mapped(&v, &self.config.mapped_columns));
            match fields {
                Ok(f) => ready.push((r, f)),
                Err(reason) => rejected.push(RejectedRecord::new(r.id.clone(), reason)),
            }
        }
        let sql = format!(
            "INSERT INTO {} ({}) FORMAT TabSeparated",
            self.config.qualified(),
            self.insert_columns()
        );
        // A block the server cannot parse is split until the offending records are isolated;
        // each part gets its own deduplication token.
        let mut plan = Isolator::new(ready.len());
        while let Some((start, end)) = plan.next_range() {
            let part = &ready[start..end];
            let mut settings = Vec::new();
            if tokens && let (Some(first), Some(last)) = (part.first(), part.last()) {
                let id = pico_sink::identity::BatchId {
                    topic: first.0.id.topic.clone(),
                    partition: first.0.id.partition,
                    first: first.0.id.offset,
                    last: last.0.id.offset,
                };
                settings.push((
                    "insert_deduplication_token",
                    self.config
                        .scope
                        .idempotency_key(&id, &pico_sink::identity::IdempotencyKeyStyle::Readable),
                ));
            }
            let attempt = match self.run_data(&sql, self.rows(part), &settings).await {
                Ok(_) => Attempt::Written(WriteReport::written(part.len())),
                Err(Failed { data: true, error }) => Attempt::Refused(error.to_string()),
                Err(Failed { error, .. }) => return Err(error),
            };
            plan.record(start, end, attempt);
        }
        let (mut report, refused) = plan.finish_rejecting(|i| ready[i].0.id.clone());
        rejected.extend(refused);
        report.already_present = (batch.len() - tail.len()) as u64;
        debug!(batch = %batch.id(), ?watermark, inserted = report.written, rejected = rejected.len(), "block inserted");
        Ok(Outcome::new(report, rejected))
    }

    async fn close(&self) -> Result<(), SinkError> {
        Ok(())
    }

    fn describe(&self) -> Description {
        let version = self
            .server_version()
            .map(|v| format!(" (server {v})"))
            .unwrap_or_default();
        Description::new(
            "clickhouse",
            format!(
                "ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset); insert only \
                 offsets above the partition's max(pico_offset), one atomic block per batch; active{version}: {}",
                self.active_mechanisms().join(", ")
            ),
            Claim::NoVisibleDuplicate,
        )
    }
}
