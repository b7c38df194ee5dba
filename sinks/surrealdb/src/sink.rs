//! [`SurrealSink`].

use std::collections::HashMap;

use async_trait::async_trait;
use pico_sink::config::namespace;
use pico_sink::identity::{Scope, columns};
use pico_sink::kit::{CHANGED_REASON, ConflictAction, EnvelopeHeader, Payload, Secret};
use pico_sink::{Batch, Claim, Description, Outcome, RejectedRecord, Sink, SinkError, WriteReport};
use serde::{Deserialize, Serialize};
use surrealdb::Surreal;
use surrealdb::engine::any::Any;
use tokio::sync::OnceCell;
use tracing::{debug, warn};

/// Configuration of [`SurrealSink`]. `Debug` never prints the password. Read from a file with
/// serde: `url` and `table` are required, the rest defaults as [`SurrealSinkConfig::new`] says;
/// an unknown key is refused with its name. In a file SurrealDB's namespace is
/// `surreal_namespace`, so that `namespace` names the identity's namespace as in every other
/// sink.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SurrealSinkConfig {
    /// `ws://host:8000`, `wss://…`, or `mem://` for the embedded engine (feature `embedded`).
    pub url: String,
    /// SurrealDB's namespace (in a file `surreal_namespace`; default `"pico"`).
    #[serde(rename = "surreal_namespace", default = "pico")]
    pub namespace: String,
    /// Database (default `"pico"`).
    #[serde(default = "pico")]
    pub database: String,
    /// Table.
    pub table: String,
    /// Root user and password for remote servers; in a file
    /// `credentials = { user = "…", password = "…" }` (default: none).
    #[serde(
        with = "pico_sink::config::user_password",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub credentials: Option<(String, Secret)>,
    /// Identity scope, qualifying `pico_topic` and the record ids (in a file
    /// `namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// What happens to a record whose id the table holds with another payload (told by the
    /// stored `pico_digest`); also read as `on_changed`. Default: overwrite.
    #[serde(default, alias = "on_changed")]
    pub conflict: ConflictAction,
}

/// The default of [`SurrealSinkConfig::namespace`] and [`SurrealSinkConfig::database`].
fn pico() -> String {
    "pico".into()
}

impl SurrealSinkConfig {
    /// Settings for a table.
    pub fn new(url: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            namespace: pico(),
            database: pico(),
            table: table.into(),
            credentials: None,
            scope: Scope::default(),
            conflict: ConflictAction::default(),
        }
    }

    /// The same settings without a URL, for [`SurrealSink::with_client`]: the client is
    /// connected (and signed in) already.
    pub fn for_table(table: impl Into<String>) -> Self {
        Self::new("", table)
    }
}

/// Upserts batches on `[topic, partition, offset]`; see the crate docs. One instance (one
/// client) serves every partition of a process; the namespace and database are selected once,
/// at `open`, on that client.
pub struct SurrealSink {
    config: SurrealSinkConfig,
    given: Option<Surreal<Any>>,
    db: OnceCell<Surreal<Any>>,
}

/// One transaction per batch: what the table held of the batch's ids (statement
/// [`HELD_STATEMENT`]: `[pico_offset, pico_digest]` of each), then the write — every record when
/// `$overwrite`, else only those not held.
const UPSERT: &str = "BEGIN TRANSACTION;
LET $ids = array::map($rows, |$r| type::record($tb, [$r.pico_topic, $r.pico_partition, $r.pico_offset]));
SELECT VALUE [pico_offset, pico_digest] FROM $ids;
FOR $r IN $rows {
    LET $id = type::record($tb, [$r.pico_topic, $r.pico_partition, $r.pico_offset]);
    IF $overwrite OR !record::exists($id) { UPSERT $id CONTENT $r; };
};
COMMIT TRANSACTION;";

/// The index of the `SELECT` in [`UPSERT`]'s answer (`BEGIN` and `LET` answer too).
const HELD_STATEMENT: usize = 2;

fn error(e: surrealdb::Error, what: &str) -> SinkError {
    let text = e.to_string();
    if let Some(advice) =
        pico_sink::kit::unhealable_connect_failure(&pico_sink::kit::error_chain(&e))
    {
        return SinkError::fatal(format!("{what}: {text} — {advice}")).with_source(e);
    }
    // Connection problems and aborted optimistic transactions (a concurrent writer) pass;
    // query and permission errors do not.
    let transient = e.is_connection()
        || [
            "connect",
            "connection",
            "timed out",
            "timeout",
            "closed",
            "reset",
            "conflict",
            "retry",
            "failed transaction",
        ]
        .iter()
        .any(|w| text.to_ascii_lowercase().contains(w));
    if transient {
        SinkError::retryable(format!("{what}: {text}")).with_source(e)
    } else {
        SinkError::fatal(format!("{what}: {text}")).with_source(e)
    }
}

/// A failed sign-in: credentials the server refused are `Fatal`; any other failure is
/// classified as every other error is (a connection cut during the sign-in is `Retryable`).
fn signin_error(e: surrealdb::Error) -> SinkError {
    if e.is_not_allowed() {
        return SinkError::fatal(format!("signing in: {e} — check the credentials")).with_source(e);
    }
    error(e, "signing in")
}

impl SurrealSink {
    /// A sink that connects at `open`.
    pub fn new(config: SurrealSinkConfig) -> Self {
        Self {
            config,
            given: None,
            db: OnceCell::new(),
        }
    }

    /// A sink on a client the caller already has, connected and signed in, built with the
    /// [`surrealdb`](crate::surrealdb) crate this one re-exports (its namespace and database are
    /// selected at `open`). The configuration comes from [`SurrealSinkConfig::for_table`]: a
    /// URL or credentials in it would not be used, and are refused.
    pub fn with_client(db: Surreal<Any>, config: SurrealSinkConfig) -> Result<Self, SinkError> {
        let instead = "SurrealSinkConfig::for_table(table)";
        pico_sink::kit::refuse_unused_setting(
            "url",
            &config.url,
            "SurrealSink::with_client",
            instead,
        )?;
        if let Some((user, _)) = &config.credentials {
            pico_sink::kit::refuse_unused_setting(
                "credentials, for the user",
                user,
                "SurrealSink::with_client",
                instead,
            )?;
        }
        Ok(Self {
            config,
            given: Some(db),
            db: OnceCell::new(),
        })
    }

    async fn db(&self) -> Result<&Surreal<Any>, SinkError> {
        self.db.get_or_try_init(|| self.connect()).await
    }

    async fn connect(&self) -> Result<Surreal<Any>, SinkError> {
        let db = match &self.given {
            Some(db) => db.clone(),
            None => {
                if self.config.url.trim().is_empty() {
                    return Err(SinkError::fatal(
                        "url is empty: name the server (ws://host:8000, wss://…, or mem:// with \
                         the feature `embedded`), or pass a client of your own with \
                         SurrealSink::with_client",
                    ));
                }
                if !cfg!(feature = "embedded") && self.config.url.starts_with("mem://") {
                    return Err(SinkError::fatal(
                        "mem:// needs the embedded engine: enable the feature `embedded` of \
                         pico-sink-surrealdb, or connect to a server (ws:// or wss://)",
                    ));
                }
                let db = surrealdb::engine::any::connect(self.config.url.as_str())
                    .await
                    .map_err(|e| error(e, "connecting"))?;
                if let Some((user, pass)) = &self.config.credentials {
                    db.signin(surrealdb::opt::auth::Root {
                        username: user.clone(),
                        password: pass.expose().to_owned(),
                    })
                    .await
                    .map_err(signin_error)?;
                }
                db
            }
        };
        db.use_ns(self.config.namespace.clone())
            .use_db(self.config.database.clone())
            .await
            .map_err(|e| error(e, "selecting namespace and database"))?;
        Ok(db)
    }

    /// The batch's records as table content, and those the table cannot take (an offset above
    /// `i64::MAX`).
    fn rows(&self, batch: &Batch) -> (Vec<Row>, Vec<RejectedRecord>) {
        let mut rows = Vec::with_capacity(batch.len());
        let mut rejected = Vec::new();
        for (index, r) in batch.records().iter().enumerate() {
            let Ok(offset) = i64::try_from(r.id.offset) else {
                rejected.push(RejectedRecord::new(
                    r.id.clone(),
                    format!(
                        "offset {} is above i64::MAX: SurrealDB integers are signed",
                        r.id.offset
                    ),
                ));
                continue;
            };
            let key = self.config.scope.surreal_key(&r.id);
            let digest = r.content_digest() as i64;
            let content = serde_json::json!({
                columns::TOPIC: key.0,
                columns::PARTITION: key.1,
                columns::OFFSET: offset,
                columns::DIGEST: digest,
                columns::RECORD_KEY: r.key.as_deref().map(Payload::from_bytes),
                columns::VALUE: Payload::from_bytes(&r.value),
                columns::HEADERS: EnvelopeHeader::all_of(&r.headers),
                columns::TIMESTAMP: r.timestamp_ms,
            });
            rows.push(Row {
                index,
                offset,
                digest,
                content,
            });
        }
        (rows, rejected)
    }

    /// Writes `rows` in one transaction and returns what the table held of them before: the
    /// stored digest per offset (`None` for a record written before the sink stored digests).
    async fn write(&self, rows: &[Row]) -> Result<HashMap<i64, Option<i64>>, SinkError> {
        let contents: Vec<&serde_json::Value> = rows.iter().map(|r| &r.content).collect();
        let vars = serde_json::json!({
            "tb": self.config.table,
            "rows": contents,
            "overwrite": self.config.conflict == ConflictAction::Update,
        });
        let db = self.db().await?;
        // Optimistic transactions abort when a concurrent one touched the same keys (or
        // created the table first): such a conflict is retried here a few times.
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let result = db
                .query(UPSERT)
                .bind(vars.clone())
                .await
                .and_then(|r| r.check());
            let err = match result {
                Ok(mut answer) => {
                    let held: Vec<Vec<Option<i64>>> = answer
                        .take(HELD_STATEMENT)
                        .map_err(|e| error(e, "reading the records held before the batch"))?;
                    return Ok(held
                        .into_iter()
                        .filter_map(|pair| match pair.as_slice() {
                            [Some(offset), digest] => Some((*offset, *digest)),
                            _ => None,
                        })
                        .collect());
                }
                Err(e) => error(e, "UPSERT transaction"),
            };
            if !err.is_retryable() || attempt >= 8 {
                return Err(err);
            }
            debug!(attempt, error = %err, "transaction conflict, retrying");
            tokio::time::sleep(std::time::Duration::from_millis(5 << attempt.min(6))).await;
        }
    }
}

/// A record of the batch as table content.
struct Row {
    /// Position in the batch.
    index: usize,
    offset: i64,
    /// [`pico_sink::Record::content_digest`], as stored in `pico_digest`.
    digest: i64,
    content: serde_json::Value,
}

/// What a written batch counts as.
#[derive(Debug, Default)]
struct Tally {
    report: WriteReport,
    changed: u64,
    rejected: Vec<RejectedRecord>,
}

/// Counts each row against what the table held before the write: not held is written; held
/// with the same digest (or with none, written before digests were stored) is already present;
/// held with another digest is changed, and then written, kept or rejected as `action` says.
fn tally(
    rows: &[Row],
    held: &HashMap<i64, Option<i64>>,
    action: ConflictAction,
    batch: &Batch,
) -> Tally {
    let mut tally = Tally::default();
    for row in rows {
        let stored = match held.get(&row.offset) {
            None => {
                tally.report.written += 1;
                continue;
            }
            Some(stored) => *stored,
        };
        if stored.is_none_or(|d| d == row.digest) {
            tally.report.already_present += 1;
            continue;
        }
        tally.changed += 1;
        match action {
            ConflictAction::Update => tally.report.written += 1,
            ConflictAction::Nothing => tally.report.already_present += 1,
            ConflictAction::Reject => tally.rejected.push(RejectedRecord::new(
                batch.records()[row.index].id.clone(),
                CHANGED_REASON,
            )),
        }
    }
    if tally.changed > 0 {
        warn!(
            batch = %batch.id(),
            changed = tally.changed,
            action = ?action,
            "records held with another payload: {CHANGED_REASON}"
        );
    }
    tally
}

#[async_trait]
impl Sink for SurrealSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.db().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let (rows, mut rejected) = self.rows(batch);
        let held = if rows.is_empty() {
            HashMap::new()
        } else {
            self.write(&rows).await?
        };
        let tally = tally(&rows, &held, self.config.conflict, batch);
        rejected.extend(tally.rejected);
        debug!(
            batch = %batch.id(),
            written = tally.report.written,
            present = tally.report.already_present,
            changed = tally.changed,
            rejected = rejected.len(),
            "upserted"
        );
        Ok(Outcome::new(tally.report, rejected).with_changed(tally.changed))
    }

    fn describe(&self) -> Description {
        let write = match self.config.conflict {
            ConflictAction::Update => {
                "UPSERT type::record(table, [topic, partition, offset]) CONTENT …"
            }
            ConflictAction::Nothing => "UPSERT … of the ids not held",
            ConflictAction::Reject => {
                "UPSERT … of the ids not held, rejecting a record held with another payload"
            }
        };
        Description::new(
            "surrealdb",
            format!("one transaction per batch: the held ids' pico_digest read, then {write}"),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_in_cut_by_the_network_is_retryable_and_refused_credentials_are_fatal() {
        let cut = surrealdb::Error::connection(
            "connection reset by peer".into(),
            None::<surrealdb::types::ConnectionError>,
        );
        let e = signin_error(cut);
        assert!(e.is_retryable(), "{e}");
        let refused = surrealdb::Error::not_allowed(
            "there was a problem with authentication".into(),
            None::<surrealdb::types::NotAllowedError>,
        );
        let e = signin_error(refused);
        assert!(
            e.is_fatal() && e.message().contains("check the credentials"),
            "{e}"
        );
    }

    #[test]
    fn the_config_reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "url = \"ws://db:8000\"\ntable = \"t\"\n";
        let full = format!(
            "{text}surreal_namespace = \"ns\"\ndatabase = \"d\"\nnamespace = \"east\"\n\
             on_changed = \"reject\"\ncredentials = {{ user = \"root\", password = \"r00t\" }}\n"
        );
        let new = SurrealSinkConfig::new("ws://db:8000", "t");
        let typo = format!("{text}databse = \"d\"\n");
        let read = pico_sink::config::checks::file_form(text, &new, &full, &[(&typo, "databse")]);
        assert_eq!(
            (read.namespace.as_str(), read.database.as_str()),
            ("ns", "d")
        );
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.conflict, ConflictAction::Reject);
        assert_eq!(read.credentials.as_ref().unwrap().1.expose(), "r00t");
        assert!(!format!("{read:?}").contains("r00t"), "Debug must redact");
    }

    /// An unconnected client is enough: the refusals come before any request.
    #[tokio::test]
    async fn a_url_or_credentials_beside_the_callers_client_are_refused() {
        let db = Surreal::<Any>::init();
        let refused = |config: SurrealSinkConfig| {
            SurrealSink::with_client(db.clone(), config)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let msg = refused(SurrealSinkConfig::new("wss://db.internal:8000", "t"));
        println!("{msg}");
        assert!(msg.contains("SurrealSinkConfig::for_table(table)"), "{msg}");
        let mut config = SurrealSinkConfig::for_table("t");
        config.credentials = Some(("root".into(), Secret::new("hunter2")));
        let msg = refused(config);
        assert!(
            msg.contains("credentials") && !msg.contains("hunter2"),
            "{msg}"
        );
        assert!(SurrealSink::with_client(db.clone(), SurrealSinkConfig::for_table("t")).is_ok());
        let e = SurrealSink::new(SurrealSinkConfig::for_table("t"))
            .open()
            .await
            .err()
            .unwrap();
        assert!(
            e.is_fatal() && e.to_string().contains("url is empty"),
            "{e}"
        );
    }
}
