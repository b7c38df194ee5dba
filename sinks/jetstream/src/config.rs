//! [`JetStreamSinkConfig`].

use std::path::PathBuf;
use std::time::Duration;

use pico_sink::SinkError;
use pico_sink::config::{millis, namespace};
use pico_sink::identity::Scope;
use pico_sink::kit::Secret;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::JetStreamSink`]. Read from a file with serde: `url`, `stream` and
/// `subject` are required, the rest defaults as [`JetStreamSinkConfig::new`] says; an unknown key
/// is refused with its name.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct JetStreamSinkConfig {
    /// Server URL, or several separated by commas (`nats://127.0.0.1:4222`).
    pub url: String,
    /// The stream that must capture `subject`: the sink checks it before the first write.
    pub stream: String,
    /// The subject every record is published to (no wildcards).
    pub subject: String,
    /// Create the stream when it does not exist, capturing `subject` with
    /// `duplicate_window` (default `false`: a missing stream is `Fatal`).
    #[serde(default)]
    pub create_stream: bool,
    /// The duplicate window of a stream the sink creates (`duplicate_window_ms`, default
    /// 120 000, JetStream's own default). An existing stream keeps its own: the sink reads it.
    #[serde(
        rename = "duplicate_window_ms",
        with = "millis",
        default = "duplicate_window"
    )]
    pub duplicate_window: Duration,
    /// A token to authenticate with (default: none).
    #[serde(default)]
    pub token: Option<Secret>,
    /// A `.creds` file (user JWT and NKey seed) to authenticate with (default: none).
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// How long to wait for one acknowledgement before the batch is `Retryable`
    /// (`ack_timeout_ms`, default 10 000).
    #[serde(rename = "ack_timeout_ms", with = "millis", default = "ack_timeout")]
    pub ack_timeout: Duration,
    /// Namespace for every identity (`namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
}

/// The default of [`JetStreamSinkConfig::duplicate_window`].
fn duplicate_window() -> Duration {
    Duration::from_secs(120)
}

/// The default of [`JetStreamSinkConfig::ack_timeout`].
fn ack_timeout() -> Duration {
    Duration::from_secs(10)
}

impl JetStreamSinkConfig {
    /// Defaults: the stream must exist, no credentials, 10 s acknowledgement timeout, a
    /// created stream's duplicate window 120 s.
    pub fn new(
        url: impl Into<String>,
        stream: impl Into<String>,
        subject: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            stream: stream.into(),
            subject: subject.into(),
            create_stream: false,
            duplicate_window: duplicate_window(),
            token: None,
            credentials_file: None,
            ack_timeout: ack_timeout(),
            scope: Scope::default(),
        }
    }

    /// Refuses what no server would take, saying what to change.
    pub(crate) fn check(&self) -> Result<(), SinkError> {
        check_stream_name(&self.stream)?;
        check_subject(&self.subject)?;
        if self.create_stream && self.duplicate_window.is_zero() {
            return Err(SinkError::fatal(
                "duplicate_window_ms = 0 turns JetStream's de-duplication off: set it above the \
                 longest time a batch can take to be handed over again (default 120 000)",
            ));
        }
        if self.ack_timeout.is_zero() {
            return Err(SinkError::fatal(
                "ack_timeout_ms = 0 leaves no time for an acknowledgement: set it to a few \
                 seconds (default 10 000)",
            ));
        }
        Ok(())
    }
}

/// A stream name: non-empty, without whitespace, `.`, `*`, `>`, `/` or `\`.
fn check_stream_name(name: &str) -> Result<(), SinkError> {
    let bad = name
        .chars()
        .find(|c| c.is_whitespace() || ['.', '*', '>', '/', '\\'].contains(c));
    if name.is_empty() || bad.is_some() {
        return Err(SinkError::fatal(format!(
            "stream {name:?} is not a JetStream stream name: give a non-empty name without \
             whitespace, '.', '*', '>', '/' or '\\'"
        )));
    }
    Ok(())
}

/// A subject to publish to: dot-separated non-empty tokens, no whitespace, no wildcard.
fn check_subject(subject: &str) -> Result<(), SinkError> {
    let tokens_ok = subject
        .split('.')
        .all(|t| !t.is_empty() && t != "*" && t != ">");
    if !tokens_ok || subject.chars().any(char::is_whitespace) {
        return Err(SinkError::fatal(format!(
            "subject {subject:?} cannot be published to: give dot-separated non-empty tokens \
             without whitespace or the wildcards '*' and '>' (records.orders, not records.>)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "url = \"nats://n:4222\"\nstream = \"EVENTS\"\nsubject = \"events.in\"\n";
        let full = format!(
            "{text}create_stream = true\nduplicate_window_ms = 30000\ntoken = \"t0k3n\"\n\
             credentials_file = \"/etc/app.creds\"\nack_timeout_ms = 2500\nnamespace = \"east\"\n"
        );
        let new = JetStreamSinkConfig::new("nats://n:4222", "EVENTS", "events.in");
        let typo = format!("{text}duplicate_window = 5\n");
        let read = file_form(text, &new, &full, &[(&typo, "duplicate_window")]);
        assert!(read.create_stream);
        assert_eq!(read.duplicate_window, Duration::from_secs(30));
        assert_eq!(read.token.as_ref().map(Secret::expose), Some("t0k3n"));
        assert!(!format!("{read:?}").contains("t0k3n"), "Debug must redact");
        assert_eq!(read.ack_timeout, Duration::from_millis(2500));
        assert_eq!(read.scope.namespace().map(|n| n.as_str()), Some("east"));
    }

    #[test]
    fn names_no_server_takes_are_refused_with_what_to_change() {
        let ok = JetStreamSinkConfig::new("nats://n:4222", "EVENTS", "events.in");
        assert!(ok.check().is_ok());
        for stream in ["", "A.B", "A B", "A*", "a>b", "a/b"] {
            let mut c = ok.clone();
            c.stream = stream.into();
            let e = c.check().expect_err(stream);
            assert!(e.is_fatal() && e.message().contains("stream"), "{e}");
        }
        for subject in ["", "a..b", "a.*", "a.>", ">", "a b", ".a", "a."] {
            let mut c = ok.clone();
            c.subject = subject.into();
            let e = c.check().expect_err(subject);
            assert!(e.is_fatal() && e.message().contains("subject"), "{e}");
        }
        let mut c = ok.clone();
        c.create_stream = true;
        c.duplicate_window = Duration::ZERO;
        assert!(
            c.check()
                .expect_err("window")
                .message()
                .contains("de-duplication")
        );
        let mut c = ok;
        c.ack_timeout = Duration::ZERO;
        assert!(c.check().is_err());
    }
}
