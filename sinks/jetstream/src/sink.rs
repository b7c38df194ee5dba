//! [`JetStreamSink`].

use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::{
    CreateStreamErrorKind, GetStreamByNameErrorKind, GetStreamErrorKind, PublishError,
    PublishErrorKind,
};
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::{self, stream};
use async_nats::{Client, ConnectErrorKind, ConnectOptions};
use async_trait::async_trait;
use pico_sink::kit::{convert_records, error_chain, refuse_unused_setting};
use pico_sink::{
    Batch, Claim, Description, Outcome, RejectedRecord, Scenario, Sink, SinkError, WriteReport,
};
use tokio::sync::OnceCell;
use tracing::{debug, info};

use crate::config::JetStreamSinkConfig;
use crate::message;

/// How many messages are published before their acknowledgements are awaited.
const IN_FLIGHT: usize = 256;

/// Publishes each record with `Nats-Msg-Id` = its identity; see the crate docs.
pub struct JetStreamSink {
    config: JetStreamSinkConfig,
    client: Client,
    context: jetstream::Context,
    /// The stream's duplicate window, read (or the stream created) before the first write.
    window: OnceCell<Duration>,
}

impl JetStreamSink {
    /// A client for `config.url` with the configured credentials. It returns without waiting
    /// for the server: the client connects in the background and keeps reconnecting, so a
    /// server that is down at start is a `Retryable` first write, not a failed start. A URL
    /// that does not parse or an unreadable credentials file is `Fatal`. The stream is checked
    /// before the first write ([`Sink::open`] or the first `consume`).
    pub async fn connect(config: JetStreamSinkConfig) -> Result<Self, SinkError> {
        config.check()?;
        let mut options = ConnectOptions::new()
            .name("pico-sink-jetstream")
            .retry_on_initial_connect();
        if let Some(token) = &config.token {
            options = options.token(token.expose().to_owned());
        }
        if let Some(path) = &config.credentials_file {
            options = options.credentials_file(path).await.map_err(|e| {
                SinkError::fatal(format!(
                    "credentials_file {}: {e}: give a readable .creds file (user JWT and seed)",
                    path.display()
                ))
            })?;
        }
        let client = options
            .connect(config.url.as_str())
            .await
            .map_err(|e| connect_error(&config.url, &e))?;
        Self::build(client, config)
    }

    /// Publishes through a client the caller already has (its own credentials, TLS, reconnect
    /// policy). `token` and `credentials_file` must then be left out: they would not be used.
    pub fn with_client(client: Client, config: JetStreamSinkConfig) -> Result<Self, SinkError> {
        let built_with = "JetStreamSink::with_client";
        let instead = "JetStreamSinkConfig::new(url, stream, subject)";
        let token = config.token.as_ref().map_or("", |_| "set");
        refuse_unused_setting("token", token, built_with, instead)?;
        let creds = config
            .credentials_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        refuse_unused_setting("credentials_file", &creds, built_with, instead)?;
        config.check()?;
        Self::build(client, config)
    }

    fn build(client: Client, config: JetStreamSinkConfig) -> Result<Self, SinkError> {
        let mut context = jetstream::new(client.clone());
        context.set_timeout(config.ack_timeout);
        Ok(Self {
            config,
            client,
            context,
            window: OnceCell::new(),
        })
    }

    /// The configuration the sink was built with.
    pub fn config(&self) -> &JetStreamSinkConfig {
        &self.config
    }

    /// The NATS client the sink publishes through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The stream's duplicate window: how long a replay is recognised. `None` before the
    /// first write (or [`Sink::open`]) read it.
    pub fn duplicate_window(&self) -> Option<Duration> {
        self.window.get().copied()
    }

    /// Reads the stream once (creating it when configured to), and checks that it captures the
    /// subject: a record published elsewhere would not be de-duplicated by it.
    async fn prepared(&self) -> Result<Duration, SinkError> {
        self.window
            .get_or_try_init(|| async {
                let window = self.stream_window().await?;
                self.check_capture().await?;
                info!(
                    stream = self.config.stream,
                    subject = self.config.subject,
                    ?window,
                    "stream ready"
                );
                Ok(window)
            })
            .await
            .copied()
    }

    async fn stream_window(&self) -> Result<Duration, SinkError> {
        let c = &self.config;
        let missing = match self.context.get_stream(&c.stream).await {
            Ok(s) => return Ok(s.cached_info().config.duplicate_window),
            Err(e) => match e.kind() {
                GetStreamErrorKind::JetStream(j)
                    if j.error_code() == ErrorCode::STREAM_NOT_FOUND =>
                {
                    error_chain(&e)
                }
                GetStreamErrorKind::Request => return Err(self.unreachable(&e)),
                GetStreamErrorKind::JetStream(j) if temporarily_unavailable(&j) => {
                    return Err(self.unreachable(&e));
                }
                _ => {
                    return Err(SinkError::fatal(format!(
                        "stream {}: {}",
                        c.stream,
                        error_chain(&e)
                    )));
                }
            },
        };
        if !c.create_stream {
            return Err(SinkError::fatal(format!(
                "stream {} does not exist ({missing}): create it capturing subject {}, or set \
                 create_stream = true",
                c.stream, c.subject
            )));
        }
        let created = self
            .context
            .create_stream(stream::Config {
                name: c.stream.clone(),
                subjects: vec![c.subject.clone()],
                duplicate_window: c.duplicate_window,
                ..stream::Config::default()
            })
            .await;
        match created {
            Ok(s) => Ok(s.cached_info().config.duplicate_window),
            Err(e) => match e.kind() {
                // `Response` is a request that failed on its way (a cut connection).
                CreateStreamErrorKind::TimedOut
                | CreateStreamErrorKind::JetStreamUnavailable
                | CreateStreamErrorKind::Response => Err(self.unreachable(&e)),
                CreateStreamErrorKind::JetStream(j) if temporarily_unavailable(&j) => {
                    Err(self.unreachable(&e))
                }
                _ => Err(SinkError::fatal(format!(
                    "creating stream {} for subject {}: {}: create it yourself, or give a \
                     subject no other stream captures",
                    c.stream,
                    c.subject,
                    error_chain(&e)
                ))),
            },
        }
    }

    /// JetStream did not answer: the client is not connected yet (the server is down, or the
    /// url or credentials are wrong), or it is and JetStream is off.
    fn unreachable(&self, e: &dyn std::error::Error) -> SinkError {
        let url = pico_sink::kit::redact_url(&self.config.url);
        let hint = match self.client.connection_state() {
            async_nats::connection::State::Connected => {
                "the server answers but JetStream does not: check that it runs with JetStream \
                 enabled (nats-server -js) and that this account may use it"
            }
            _ => "not connected: if this lasts, check url, token and credentials_file",
        };
        SinkError::retryable(format!(
            "JetStream at {url} did not answer ({}); {hint}",
            error_chain(e)
        ))
    }

    /// Checks that the configured stream is the one capturing the subject. Only an answer
    /// naming no stream, or another one, is `Fatal`: a request that failed (a timeout, a cut
    /// or refused connection) or a JetStream that is not ready yet is `Retryable`.
    async fn check_capture(&self) -> Result<(), SinkError> {
        let c = &self.config;
        let owner = match self.context.stream_by_subject(c.subject.as_str()).await {
            Ok(owner) => owner,
            Err(e) => {
                return Err(match e.kind() {
                    GetStreamByNameErrorKind::Request => self.unreachable(&e),
                    GetStreamByNameErrorKind::JetStream(j) if temporarily_unavailable(&j) => {
                        self.unreachable(&e)
                    }
                    GetStreamByNameErrorKind::NotFound => SinkError::fatal(format!(
                        "no stream captures subject {}: add it to stream {}'s subjects",
                        c.subject, c.stream
                    )),
                    _ => SinkError::fatal(format!(
                        "looking up the stream that captures subject {}: {}: check the \
                         subject's syntax and that this account may list streams",
                        c.subject,
                        error_chain(&e)
                    )),
                });
            }
        };
        if owner != c.stream {
            return Err(SinkError::fatal(format!(
                "subject {} is captured by stream {owner}, not {}: set stream = \"{owner}\" or \
                 publish to a subject of {}",
                c.subject, c.stream, c.stream
            )));
        }
        Ok(())
    }
}

/// A JetStream API error that says "not now" rather than "no": the HTTP-like 503 the server
/// answers while JetStream starts, elects a leader or recovers.
fn temporarily_unavailable(e: &jetstream::Error) -> bool {
    e.code() == 503
}

impl JetStreamSink {
    /// The rejection of a record whose message exceeds the server's `max_payload`.
    fn too_large(&self, record: &pico_sink::Record, e: &PublishError) -> RejectedRecord {
        RejectedRecord::new(
            record.id.clone(),
            format!(
                "{}: the message ({} bytes of value with its headers) exceeds the server's \
                 max_payload ({} bytes); raise max_payload or keep such records out upstream",
                error_chain(e),
                record.value.len(),
                self.client.server_info().max_payload
            ),
        )
    }

    /// Counts an acknowledgement: written, or already present (a duplicate id inside the
    /// window). An acknowledgement from another stream is `Fatal`.
    fn count(&self, ack: &PublishAck, report: &mut WriteReport) -> Result<(), SinkError> {
        let stream = &self.config.stream;
        if &ack.stream != stream {
            return Err(SinkError::fatal(format!(
                "stream {} stored a record meant for {stream}: set stream = \"{}\"",
                ack.stream, ack.stream
            )));
        }
        if ack.duplicate {
            report.already_present += 1;
        } else {
            report.written += 1;
        }
        Ok(())
    }
}

/// A failed connect: `Retryable` when the server may come back, `Fatal` when only a change of
/// configuration helps.
fn connect_error(url: &str, e: &async_nats::ConnectError) -> SinkError {
    let url = pico_sink::kit::redact_url(url);
    let text = error_chain(e);
    match e.kind() {
        ConnectErrorKind::TimedOut | ConnectErrorKind::Io | ConnectErrorKind::MaxReconnects => {
            SinkError::retryable(format!("connecting to {url}: {text}"))
        }
        ConnectErrorKind::Authentication | ConnectErrorKind::AuthorizationViolation => {
            SinkError::fatal(format!(
                "connecting to {url}: {text}: the server refused the credentials; check token \
                 or credentials_file"
            ))
        }
        ConnectErrorKind::ServerParse | ConnectErrorKind::Dns | ConnectErrorKind::Tls => {
            SinkError::fatal(format!("connecting to {url}: {text}: check url"))
        }
    }
}

/// A failed publish or acknowledgement: `Fatal` when the stream went away, else `Retryable`
/// (the batch is handed over again; what was stored is dropped as a duplicate).
fn publish_error(stream: &str, e: &PublishError) -> SinkError {
    match e.kind() {
        PublishErrorKind::StreamNotFound => SinkError::fatal(format!(
            "no stream captures the subject any more (stream {stream} was deleted or changed): \
             {}",
            error_chain(e)
        )),
        _ => SinkError::retryable(format!("publishing to stream {stream}: {}", error_chain(e))),
    }
}

#[async_trait]
impl Sink for JetStreamSink {
    /// Reads the stream (creating it when configured to) before the first batch.
    async fn open(&self) -> Result<(), SinkError> {
        self.prepared().await.map(|_| ())
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        self.prepared().await?;
        let c = &self.config;
        let (messages, mut rejected) =
            convert_records(batch, |_, r| message::publish(&c.scope, r).map(|m| (r, m)));
        let mut report = WriteReport::default();
        let mut pending = messages.into_iter().peekable();
        while pending.peek().is_some() {
            let mut acks = Vec::with_capacity(IN_FLIGHT);
            for (record, m) in pending.by_ref().take(IN_FLIGHT) {
                match self.context.send_publish(c.subject.clone(), m).await {
                    Ok(ack) => acks.push(ack),
                    Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => {
                        rejected.push(self.too_large(record, &e));
                    }
                    Err(e) => return Err(publish_error(&c.stream, &e)),
                }
            }
            for ack in acks {
                let ack = ack.await.map_err(|e| publish_error(&c.stream, &e))?;
                self.count(&ack, &mut report)?;
            }
        }
        debug!(batch = %batch.id(), written = report.written, already_present = report.already_present, rejected = rejected.len(), "published");
        Ok(Outcome::new(report, rejected))
    }

    fn describe(&self) -> Description {
        let window = self.duplicate_window().map_or_else(
            || "the stream's duplicate window".to_owned(),
            |w| format!("the stream's {} s duplicate window", w.as_secs()),
        );
        Description::new(
            "jetstream",
            format!(
                "publish to {} with Nats-Msg-Id = the identity; stream {} drops a message whose \
                 id it saw within {window}; consume returns after every acknowledgement",
                self.config.subject, self.config.stream
            ),
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        // Past the window the id is forgotten: the replay is stored again.
        .with_claim(Scenario::ReplayAfterHorizon, Claim::Repeats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn settings_a_given_client_would_not_use_are_refused() {
        // A client that never connected: `with_client` checks before any I/O.
        let Ok(client) = ConnectOptions::new()
            .retry_on_initial_connect()
            .connect("nats://127.0.0.1:1")
            .await
        else {
            panic!("a lazily connecting client is built without a server");
        };
        let mut config = JetStreamSinkConfig::new("", "EVENTS", "events.in");
        config.token = Some("t0k3n".to_owned().into());
        let e = JetStreamSink::with_client(client.clone(), config)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("token") && !e.contains("t0k3n"), "{e}");
        let config = JetStreamSinkConfig::new("", "EVENTS", "events.in");
        assert!(JetStreamSink::with_client(client, config).is_ok());
    }
}
