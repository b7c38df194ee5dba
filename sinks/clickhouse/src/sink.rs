//! [`ClickHouseSink`].

use async_trait::async_trait;
use clickhouse::Row;
use pico_sink::kit::{Attempt, EnvelopeHeader, Isolator};
use pico_sink::{
    Batch, Claim, Description, Outcome, Record, RejectedRecord, Sink, SinkError, WriteReport,
};
use serde::{Deserialize, Serialize, Serializer};
use tokio::sync::OnceCell;
use tracing::debug;

use crate::config::{ClickHouseSinkConfig, ident};
use crate::shape::{COLUMNS, SORTING_KEY, check_engine, missing_columns};
use crate::tsv::escape;

/// Inserts batches above the partition's watermark; see the crate docs. One instance (one
/// client, one connection pool) serves every partition of a process.
pub struct ClickHouseSink {
    config: ClickHouseSinkConfig,
    client: clickhouse::Client,
    /// The server, as errors name it (scheme, host and port of the url).
    at: String,
    server: OnceCell<Server>,
}

/// What `open` learned about the server.
#[derive(Debug, Clone)]
struct Server {
    version: String,
    tokens: bool,
}

/// Bytes written as a ClickHouse `String` (RowBinary: length, then the bytes as they are).
struct Raw<'a>(&'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// One record in the fixed columns, serialized as RowBinary (field order = column order).
#[derive(Row, Serialize)]
struct Stored<'a> {
    pico_topic: &'a str,
    pico_partition: u32,
    pico_offset: u64,
    key: Raw<'a>,
    value: Raw<'a>,
    headers: &'a str,
    ts: Option<i64>,
}

/// The watermark query's answer.
#[derive(Row, Deserialize)]
struct Mark {
    rows: u64,
    max: u64,
}

/// `major.minor` of a version string.
fn major_minor(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The exception code of a server error. The client reports server exceptions as text
/// (`BadResponse`), so the code is read from `Code: N`.
fn exception_code(text: &str) -> Option<u32> {
    let at = text.find("Code: ")? + "Code: ".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
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

/// A client error onto the contract.
fn classify(e: clickhouse::error::Error, what: &str) -> Failed {
    use clickhouse::error::Error as E;
    let text: String = e.to_string().chars().take(500).collect();
    let detail = format!("{what}: {}", text.trim());
    let (data, error) = match &e {
        E::BadResponse(body) => {
            let code = exception_code(body);
            let error = match code {
                Some(60 | 81) => SinkError::fatal(format!(
                    "{detail} — the database or table does not exist: create it or set create_if_missing"
                )),
                Some(192 | 193 | 194 | 516) => {
                    SinkError::fatal(format!("{detail} — check the user and password"))
                }
                Some(16 | 47 | 62) => SinkError::fatal(format!(
                    "{detail} — the table does not have the columns the sink writes"
                )),
                _ => SinkError::retryable(detail),
            };
            (code.is_some_and(|c| DATA_ERRORS.contains(&c)), error)
        }
        E::InvalidParams(_) | E::Unsupported(_) => (
            false,
            SinkError::fatal(format!("{detail} — check the url and settings")),
        ),
        // No answer: the client's own text hides the reason in its sources.
        _ => {
            let reason = format!("{what}: {}", pico_sink::kit::error_chain(&e));
            match pico_sink::kit::unhealable_connect_failure(&reason) {
                Some(advice) => (false, SinkError::fatal(format!("{reason} — {advice}"))),
                None => (false, SinkError::retryable(reason)),
            }
        }
    };
    Failed {
        data,
        error: error.with_source(e),
    }
}

impl ClickHouseSink {
    /// A client for the configuration: RowBinary over HTTP with LZ4, schema validation off
    /// (it needs `RowBinaryWithNamesAndTypes`, which servers before 22.x lack; the sink checks
    /// the table's columns itself at `open`).
    pub fn new(config: ClickHouseSinkConfig) -> Result<Self, SinkError> {
        if config.url.trim().is_empty() {
            return Err(SinkError::fatal(
                "url is empty: name the HTTP interface (http(s)://host:8123), or pass a \
                 clickhouse::Client of your own with ClickHouseSink::with_client",
            ));
        }
        if !config.url.starts_with("http://") && !config.url.starts_with("https://") {
            return Err(SinkError::fatal(format!(
                "url {:?} must be the HTTP interface: http(s)://host:8123",
                config.url
            )));
        }
        let mut client = clickhouse::Client::default()
            .with_url(&config.url)
            .with_compression(clickhouse::Compression::Lz4);
        if let Some((user, password)) = &config.credentials {
            client = client.with_user(user).with_password(password.expose());
        }
        let at = pico_sink::kit::url_origin(&config.url);
        Self::build(client, at, config)
    }

    /// Uses a client the caller already has (its URL, credentials, compression and settings),
    /// built with the [`clickhouse`](crate::clickhouse) crate this one re-exports. The
    /// configuration comes from [`ClickHouseSinkConfig::for_table`]: a URL or credentials in it
    /// would not be used, and are refused. Validation is turned off on the sink's copy, for
    /// the same reason as in [`ClickHouseSink::new`].
    pub fn with_client(
        client: clickhouse::Client,
        config: ClickHouseSinkConfig,
    ) -> Result<Self, SinkError> {
        let instead = "ClickHouseSinkConfig::for_table(database, table)";
        pico_sink::kit::refuse_unused_setting(
            "url",
            &config.url,
            "ClickHouseSink::with_client",
            instead,
        )?;
        if let Some((user, _)) = &config.credentials {
            pico_sink::kit::refuse_unused_setting(
                "credentials, for the user",
                user,
                "ClickHouseSink::with_client",
                instead,
            )?;
        }
        let at = "the server of the client given to with_client".to_owned();
        Self::build(client, at, config)
    }

    fn build(
        client: clickhouse::Client,
        at: String,
        config: ClickHouseSinkConfig,
    ) -> Result<Self, SinkError> {
        pico_sink::kit::check_mapped_columns(&config.mapped_columns)?;
        Ok(Self {
            config,
            client: client.with_validation(false),
            at,
            server: OnceCell::new(),
        })
    }

    /// A client error onto the contract, naming the request and the server.
    fn classify(&self, e: clickhouse::error::Error, what: &str) -> Failed {
        classify(e, &format!("{what} at {}", self.at))
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

    /// Runs a statement that returns nothing.
    async fn execute(&self, sql: &str) -> Result<(), SinkError> {
        let what: String = sql.chars().take(60).collect();
        self.client
            .query(sql)
            .execute()
            .await
            .map_err(|e| self.classify(e, &what).error)
    }

    async fn prepare(&self) -> Result<&Server, SinkError> {
        self.server
            .get_or_try_init(|| self.inspect_and_create())
            .await
    }

    /// Learns the server version, creates what is missing, checks the table's columns.
    async fn inspect_and_create(&self) -> Result<Server, SinkError> {
        let version: String = self
            .client
            .query("SELECT version()")
            .fetch_one()
            .await
            .map_err(|e| self.classify(e, "SELECT version()").error)?;
        let tokens = major_minor(&version) >= (22, 2);
        let table = self.config.qualified();
        if self.config.create_if_missing {
            self.execute(&format!(
                "CREATE DATABASE IF NOT EXISTS {}",
                ident(&self.config.database)
            ))
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
            let columns: Vec<String> = COLUMNS.iter().map(|(c, t)| format!("{c} {t}")).collect();
            self.execute(&format!(
                "CREATE TABLE IF NOT EXISTS {table} ({}{mapped}) \
                 ENGINE = ReplacingMergeTree ORDER BY ({SORTING_KEY}){settings}",
                columns.join(", ")
            ))
            .await?;
        }
        let described: Vec<String> = self
            .client
            .query("SELECT name FROM system.columns WHERE database = ? AND table = ?")
            .bind(self.config.database.as_str())
            .bind(self.config.table.as_str())
            .fetch_all()
            .await
            .map_err(|e| self.classify(e, "reading the table's columns").error)?;
        if let Some(e) = missing_columns(&table, &described, &self.config.mapped_columns) {
            return Err(e);
        }
        let (engine, sorting_key) = self.engine().await?;
        check_engine(&table, &engine, sorting_key.as_deref())?;
        Ok(Server { version, tokens })
    }

    /// The table's engine, and its sorting key where the server reports one (on a server whose
    /// `system.tables` has no `sorting_key`, the key is not checked).
    async fn engine(&self) -> Result<(String, Option<String>), SinkError> {
        let (database, name) = (self.config.database.as_str(), self.config.table.as_str());
        let engine: String = self
            .client
            .query("SELECT engine FROM system.tables WHERE database = ? AND name = ?")
            .bind(database)
            .bind(name)
            .fetch_one()
            .await
            .map_err(|e| self.classify(e, "reading the table's engine").error)?;
        let reported: u64 = self
            .client
            .query(
                "SELECT count() FROM system.columns \
                 WHERE database = 'system' AND table = 'tables' AND name = 'sorting_key'",
            )
            .fetch_one()
            .await
            .map_err(|e| self.classify(e, "reading system.tables' columns").error)?;
        if reported == 0 {
            return Ok((engine, None));
        }
        let key: String = self
            .client
            .query("SELECT sorting_key FROM system.tables WHERE database = ? AND name = ?")
            .bind(database)
            .bind(name)
            .fetch_one()
            .await
            .map_err(|e| self.classify(e, "reading the table's sorting key").error)?;
        Ok((engine, Some(key)))
    }

    /// Highest offset stored for a topic-partition, if any.
    async fn watermark(&self, topic: &str, partition: u32) -> Result<Option<u64>, SinkError> {
        let sql = format!(
            "SELECT count() AS rows, max(pico_offset) AS max FROM {} \
             WHERE pico_topic = ? AND pico_partition = ?",
            self.config.qualified()
        );
        let mark: Mark = self
            .client
            .query(&sql)
            .bind(topic)
            .bind(partition)
            .fetch_one()
            .await
            .map_err(|e| self.classify(e, "reading the watermark").error)?;
        Ok((mark.rows > 0).then_some(mark.max))
    }

    /// The deduplication token of a part, where the server has tokens.
    fn token(&self, records: &[&Record]) -> Option<String> {
        let (first, last) = (records.first()?, records.last()?);
        self.tokens().then(|| {
            let id = pico_sink::identity::BatchId {
                topic: first.id.topic.clone(),
                partition: first.id.partition,
                first: first.id.offset,
                last: last.id.offset,
            };
            self.config
                .scope
                .idempotency_key(&id, &pico_sink::identity::IdempotencyKeyStyle::Readable)
        })
    }

    /// Inserts every record of `batch` as one plain RowBinary block of the fixed columns, with
    /// no watermark read and no deduplication token: the raw insert through the same client
    /// that benchmarks compare the sink with. A replay through it duplicates (until a merge);
    /// do not use it to deliver.
    pub async fn insert_unguarded(&self, batch: &Batch) -> Result<(), SinkError> {
        let topic = self.config.scope.qualified_topic(batch.topic());
        let records: Vec<&Record> = batch.records().iter().collect();
        self.insert_fixed(&topic, &records, None)
            .await
            .map_err(|f| f.error)
    }

    /// One block of the fixed columns in RowBinary.
    async fn insert_fixed(
        &self,
        topic: &str,
        part: &[&Record],
        token: Option<String>,
    ) -> Result<(), Failed> {
        let table = self.config.qualified();
        let mut insert = self
            .client
            .insert_unescaped::<Stored<'_>>(&table)
            .await
            .map_err(|e| self.classify(e, "INSERT"))?;
        if let Some(token) = token {
            insert = insert.with_setting("insert_deduplication_token", token);
        }
        for r in part {
            let headers = EnvelopeHeader::json_text(&r.headers).unwrap_or_default();
            insert
                .write(&Stored {
                    pico_topic: topic,
                    pico_partition: r.id.partition,
                    pico_offset: r.id.offset,
                    key: Raw(r.key.as_deref().unwrap_or_default()),
                    value: Raw(&r.value),
                    headers: &headers,
                    ts: r.timestamp_ms,
                })
                .await
                .map_err(|e| self.classify(e, "INSERT"))?;
        }
        insert.end().await.map_err(|e| self.classify(e, "INSERT"))
    }

    /// One block with mapped columns, as TabSeparated (their types are the table's, known only
    /// as text here: the server parses them).
    async fn insert_mapped(
        &self,
        topic: &str,
        part: &[(&Record, Vec<Option<String>>)],
    ) -> Result<(), Failed> {
        let mut cols: Vec<String> = COLUMNS.iter().map(|(c, _)| (*c).to_owned()).collect();
        cols.extend(self.config.mapped_columns.iter().map(|m| ident(&m.column)));
        let sql = format!(
            "INSERT INTO {} ({}) FORMAT TabSeparated",
            self.config.qualified(),
            cols.join(", ")
        );
        let mut insert = self.client.insert_formatted_with(sql);
        let records: Vec<&Record> = part.iter().map(|(r, _)| *r).collect();
        if let Some(token) = self.token(&records) {
            insert = insert.with_setting("insert_deduplication_token", token);
        }
        let mut out = Vec::with_capacity(part.len() * 128);
        for (r, mapped) in part {
            escape(topic.as_bytes(), &mut out);
            out.push(b'\t');
            out.extend_from_slice(r.id.partition.to_string().as_bytes());
            out.push(b'\t');
            out.extend_from_slice(r.id.offset.to_string().as_bytes());
            out.push(b'\t');
            escape(r.key.as_deref().unwrap_or_default(), &mut out);
            out.push(b'\t');
            escape(&r.value, &mut out);
            out.push(b'\t');
            escape(
                EnvelopeHeader::json_text(&r.headers)
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
        insert
            .send(out.into())
            .await
            .map_err(|e| self.classify(e, "INSERT"))?;
        insert.end().await.map_err(|e| self.classify(e, "INSERT"))
    }
}

#[async_trait]
impl Sink for ClickHouseSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.prepare().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        self.prepare().await?;
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
                .and_then(|v| pico_sink::kit::extract_mapped(&v, &self.config.mapped_columns));
            match fields {
                Ok(f) => ready.push((r, f)),
                Err(reason) => rejected.push(RejectedRecord::new(r.id.clone(), reason)),
            }
        }
        // A block the server cannot parse is split until the offending records are isolated;
        // each part gets its own deduplication token.
        let mut plan = Isolator::new(ready.len());
        while let Some((start, end)) = plan.next_range() {
            let part = &ready[start..end];
            let sent = if self.config.mapped_columns.is_empty() {
                let records: Vec<&Record> = part.iter().map(|(r, _)| *r).collect();
                self.insert_fixed(&topic, &records, self.token(&records))
                    .await
            } else {
                self.insert_mapped(&topic, part).await
            };
            let attempt = match sent {
                Ok(()) => Attempt::Written(WriteReport::written(part.len())),
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

    fn describe(&self) -> Description {
        let version = self
            .server_version()
            .map(|v| format!(" (server {v})"))
            .unwrap_or_default();
        Description::new(
            "clickhouse",
            format!(
                "ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset); insert only \
                 offsets above the partition's max(pico_offset), one atomic RowBinary block per \
                 batch (LZ4); active{version}: {}",
                self.active_mechanisms().join(", ")
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_column_on_a_column_of_the_sinks_is_refused_with_what_to_rename() {
        let mut config = ClickHouseSinkConfig::new("http://localhost:8123", "d", "t");
        config.mapped_columns.push(pico_sink::kit::MappedColumn {
            column: "ts".into(),
            field: "/when".into(),
            sql_type: "Int64".into(),
        });
        let err = ClickHouseSink::new(config.clone())
            .err()
            .expect("a mapped column called ts is refused");
        assert!(
            err.is_fatal() && err.to_string().contains("\"ts\" collides"),
            "{err}"
        );
        let client = clickhouse::Client::default();
        let given = ClickHouseSinkConfig {
            mapped_columns: config.mapped_columns,
            ..ClickHouseSinkConfig::for_table("d", "t")
        };
        assert!(ClickHouseSink::with_client(client, given).is_err());
    }

    #[test]
    fn exception_codes_are_read_from_the_text() {
        assert_eq!(
            exception_code("bad response: Code: 60. DB::Exception: Table x doesn't exist"),
            Some(60)
        );
        assert_eq!(exception_code("Code: 27, e.displayText() = …"), Some(27));
        assert_eq!(exception_code("connection reset"), None);
    }
}
