//! [`InfluxSink`].

use async_trait::async_trait;
use pico_http_common::{Advice, Reply, exchange};
use pico_sink::kit::{Attempt, Isolator, convert_records};
use pico_sink::{
    Batch, Claim, Description, Outcome, Record, Scenario, Sink, SinkError, WriteReport,
};
use tracing::{debug, warn};

use crate::config::{Api, InfluxSinkConfig, Payload};
use crate::line::{JsonPoint, digest31, json_point, line_point};
use crate::probe;
use crate::seal::{self, Found, Seal};

/// Writes points whose identity is the record's; see the crate docs.
pub struct InfluxSink {
    config: InfluxSinkConfig,
    client: reqwest::Client,
    write_url: reqwest::Url,
}

enum Answer {
    Written,
    Refused(String),
}

impl InfluxSink {
    /// Checks the configuration and builds its own HTTP client.
    pub fn new(config: InfluxSinkConfig) -> Result<Self, SinkError> {
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .build()
            .map_err(|e| SinkError::fatal("cannot build the HTTP client").with_source(e))?;
        Self::with_client(client, config)
    }

    /// Uses an HTTP client the caller already has (its pool, TLS, proxy and timeouts).
    pub fn with_client(
        client: reqwest::Client,
        config: InfluxSinkConfig,
    ) -> Result<Self, SinkError> {
        let base = reqwest::Url::parse(&config.url)
            .map_err(|e| SinkError::fatal(format!("url {:?} is not a URL: {e}", config.url)))?;
        let mut write_url = base
            .join(match config.api {
                Api::V1 { .. } => "write",
                Api::V2 { .. } => "api/v2/write",
            })
            .map_err(|e| SinkError::fatal(format!("url {:?}: {e}", config.url)))?;
        {
            let mut q = write_url.query_pairs_mut();
            q.append_pair("precision", "ns");
            match &config.api {
                Api::V1 {
                    database,
                    retention_policy,
                    ..
                } => {
                    q.append_pair("db", database);
                    if let Some(rp) = retention_policy {
                        q.append_pair("rp", rp);
                    }
                }
                Api::V2 { org, bucket, .. } => {
                    q.append_pair("org", org);
                    q.append_pair("bucket", bucket);
                }
            }
        }
        Ok(Self {
            config,
            client,
            write_url,
        })
    }

    /// The database (v1) or bucket (v2) the points go to, for `/query`.
    fn database(&self) -> (&str, Option<&str>) {
        match &self.config.api {
            Api::V1 {
                database,
                retention_policy,
                ..
            } => (database, retention_policy.as_deref()),
            Api::V2 { bucket, .. } => (bucket, None),
        }
    }

    /// Whether every point of `records` (converted to `lines`) is stored with the same
    /// content; see [`crate::probe`]. `false` when inconclusive.
    async fn all_present(&self, batch: &Batch, lines: &[(&Record, String)]) -> bool {
        let Payload::Json(mapping) = &self.config.payload else {
            return false;
        };
        let times: Vec<i64> = lines
            .iter()
            .filter_map(|(_, l)| probe::line_time(l))
            .collect();
        let (Some(from), Some(to)) = (times.iter().min(), times.iter().max()) else {
            return false;
        };
        let topic = self.config.scope.qualified_topic(batch.topic());
        let q = probe::query(&mapping.measurement, &topic, batch.partition(), *from, *to);
        let answer = self.query(&q).await;
        let expected: i64 = lines.iter().map(|(r, _)| digest31(r)).sum();
        matches!(
            answer.as_deref().and_then(probe::read),
            Some((count, sum)) if count == lines.len() as i64 && sum == expected
        )
    }

    /// The seal this batch would carry, and its last record's point (JSON payloads only).
    fn expected_seal(&self, batch: &Batch) -> Option<(Seal, JsonPoint)> {
        let Payload::Json(mapping) = &self.config.payload else {
            return None;
        };
        let last = batch.records().last()?;
        let point = json_point(
            mapping,
            &self.config.scope,
            last,
            self.config.timestamp_policy,
        )
        .ok()?;
        let seal = Seal {
            first: i64::try_from(batch.id().first).ok()?,
            count: batch.len() as i64,
            digest: batch.records().iter().map(digest31).sum(),
        };
        Some((seal, point))
    }

    /// What the batch's last point holds (see [`crate::seal`]), for the `expected` seal and
    /// last point of [`InfluxSink::expected_seal`]; `None` when the query fails.
    async fn find_seal(&self, batch: &Batch, expected: &(Seal, JsonPoint)) -> Option<Found> {
        let (seal, point) = expected;
        let Payload::Json(mapping) = &self.config.payload else {
            return None;
        };
        let last = batch.records().last()?;
        let body = self
            .query(&seal::query(&mapping.measurement, &point.tags, point.time))
            .await?;
        seal::read(&body, *seal, digest31(last))
    }

    /// Seals a batch whose every point was written. A seal that cannot be written costs the
    /// next replay a count probe, nothing else: the batch is stored, so this never fails it.
    async fn seal(
        &self,
        batch: &Batch,
        expected: Option<&(Seal, JsonPoint)>,
        lines: &[(&Record, String)],
    ) {
        let (Some((seal, point)), Some((_, last_line))) = (expected, lines.last()) else {
            return;
        };
        match self.post(seal::line(last_line, point.time, *seal)).await {
            Ok(Answer::Written) => {}
            Ok(Answer::Refused(reason)) => {
                warn!(batch = %batch.id(), %reason, "the batch's seal was refused; a replay will count its points")
            }
            Err(e) => {
                debug!(batch = %batch.id(), error = %e, "the batch's seal was not written; a replay will count its points")
            }
        }
    }

    /// The body of a successful `/query` for `q`; `None` on any failure.
    async fn query(&self, q: &str) -> Option<String> {
        let (db, rp) = self.database();
        let mut url = reqwest::Url::parse(&self.config.url)
            .and_then(|u| u.join("query"))
            .ok()?;
        url.query_pairs_mut()
            .append_pair("db", db)
            .append_pair("q", q);
        if let Some(rp) = rp {
            url.query_pairs_mut().append_pair("rp", rp);
        }
        match self.authorize(self.client.get(url)).send().await {
            Ok(r) if r.status().is_success() => r.text().await.ok(),
            _ => None,
        }
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.config.api {
            Api::V1 {
                credentials: Some((user, password)),
                ..
            } => request.basic_auth(user, Some(password.expose())),
            Api::V2 { token, .. } => {
                request.header("Authorization", format!("Token {}", token.expose()))
            }
            Api::V1 { .. } => request,
        }
    }

    async fn post(&self, body: String) -> Result<Answer, SinkError> {
        let what = format!("POST {}", self.write_url.path());
        let request = self
            .authorize(self.client.post(self.write_url.clone()))
            .header("Content-Type", "text/plain; charset=utf-8")
            .body(body);
        let reply = exchange(request, &what).await?;
        answer(&reply, &what)
    }

    async fn create_database(&self) -> Result<(), SinkError> {
        let Api::V1 {
            database,
            create_database: true,
            ..
        } = &self.config.api
        else {
            return Ok(());
        };
        let mut url = reqwest::Url::parse(&self.config.url)
            .and_then(|u| u.join("query"))
            .map_err(|e| SinkError::fatal(format!("url: {e}")))?;
        let q = format!("CREATE DATABASE \"{}\"", database.replace('"', "\\\""));
        url.query_pairs_mut().append_pair("q", &q);
        let what = format!("CREATE DATABASE {database}");
        let reply = exchange(self.authorize(self.client.post(url)), &what).await?;
        if reply.status.is_success() {
            Ok(())
        } else if reply.is_transient() {
            Err(reply.retryable(&what))
        } else {
            Err(reply.fatal(&what, "create it yourself or grant the right"))
        }
    }
}

/// What to change when InfluxDB answers a write with a fatal status of the shared table.
const ADVICE: Advice = Advice {
    denied: "check the credentials or token",
    not_found: "the database or bucket does not exist — create it (or set create_database)",
};

/// A write's answer: InfluxDB refuses points it cannot take with 400, 413 or 422 (the batch is
/// split to isolate them); every other status follows the shared table.
fn answer(reply: &Reply, what: &str) -> Result<Answer, SinkError> {
    match reply.status.as_u16() {
        200..=299 => Ok(Answer::Written),
        400 | 413 | 422 => Ok(Answer::Refused(format!(
            "{}: {}",
            reply.status,
            reply.snippet()
        ))),
        _ => Err(reply.failure(what, &ADVICE)),
    }
}

#[async_trait]
impl Sink for InfluxSink {
    async fn open(&self) -> Result<(), SinkError> {
        self.create_database().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        // The seal is derived once: the probe before writing and the seal after use it.
        let expected = self.expected_seal(batch);
        let found = match &expected {
            Some(e) => self.find_seal(batch, e).await,
            None => None,
        };
        if found == Some(Found::Sealed) {
            debug!(batch = %batch.id(), "the batch's seal is on its last point: nothing written");
            return Ok(WriteReport::already_present(batch.len()).into());
        }
        let (lines, mut rejected) = convert_records(batch, |_, record| {
            let point = match &self.config.payload {
                Payload::Json(m) => {
                    json_point(m, &self.config.scope, record, self.config.timestamp_policy)
                        .map(|p| p.line)
                }
                Payload::LineProtocol => {
                    line_point(&self.config.scope, record, self.config.timestamp_policy)
                }
            };
            point.map(|line| (record, line))
        });
        // No point of the batch stored with this content: counting its points cannot help.
        let may_be_stored = found != Some(Found::Absent);
        if rejected.is_empty() && may_be_stored && self.all_present(batch, &lines).await {
            debug!(batch = %batch.id(), "every point is stored with this content: nothing written");
            self.seal(batch, expected.as_ref(), &lines).await;
            return Ok(WriteReport::already_present(batch.len()).into());
        }
        let mut plan = Isolator::new(lines.len());
        while let Some((start, end)) = plan.next_range() {
            let body = lines[start..end]
                .iter()
                .map(|(_, l)| l.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let attempt = match self.post(body).await? {
                Answer::Written => Attempt::Written(WriteReport::written(end - start)),
                Answer::Refused(reason) => Attempt::Refused(reason),
            };
            plan.record(start, end, attempt);
        }
        let (report, refused) = plan.finish_rejecting(|i| lines[i].0.id.clone());
        rejected.extend(refused);
        if rejected.is_empty() && report.written == batch.len() as u64 {
            self.seal(batch, expected.as_ref(), &lines).await;
        }
        debug!(batch = %batch.id(), written = report.written, rejected = rejected.len(), "points written");
        Ok(Outcome::new(report, rejected))
    }

    fn describe(&self) -> Description {
        Description::new(
            "influxdb",
            "point = measurement + your tags + pico_topic/pico_partition tags + time (ms in ns \
             plus offset mod 1e6); pico_offset and pico_digest fields; a seal on the batch's \
             last point (first offset, count, digest sum), else a probe of its points, skips an \
             exact replay; otherwise a replay rewrites the same points",
            Claim::OverwrittenInPlace,
        )
        .telling_already_present()
        .with_claim(Scenario::ConcurrentPartitions, Claim::NoVisibleDuplicate)
        .with_claim(Scenario::BadInput, Claim::NoVisibleDuplicate)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::StatusCode;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    use super::*;

    fn reply(code: u16) -> Reply {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        Reply {
            status: StatusCode::from_u16(code).unwrap(),
            headers,
            body: "{\"error\":\"why\"}".into(),
        }
    }

    #[test]
    fn write_answers_follow_the_shared_table_and_honour_retry_after() {
        // 408 and 425 were fatal ("unexpected answer") and Retry-After was ignored before the
        // sink answered through the shared table.
        for code in [408, 425, 429, 500, 503] {
            let e = answer(&reply(code), "POST /write").err().unwrap();
            assert!(e.is_retryable(), "{code}");
            assert_eq!(e.retry_after(), Some(Duration::from_secs(2)), "{code}");
        }
        for code in [400, 413, 422] {
            assert!(
                matches!(answer(&reply(code), "POST /write"), Ok(Answer::Refused(r)) if r.contains("why")),
                "{code}"
            );
        }
        assert!(matches!(answer(&reply(204), "w"), Ok(Answer::Written)));
        for (code, says) in [
            (401, "credentials or token"),
            (404, "set create_database"),
            (409, "unexpected answer"),
        ] {
            let e = answer(&reply(code), "POST /write").err().unwrap();
            assert!(e.is_fatal() && e.message().contains(says), "{code}: {e}");
        }
    }
}
