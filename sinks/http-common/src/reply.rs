//! [`Reply`]: a whole HTTP answer, and what it means for the sink contract.

use std::time::{Duration, SystemTime};

use pico_sink::SinkError;
use pico_sink::kit::{error_chain, unhealable_connect_failure};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::status::{Advice, StatusClass};

/// A status, headers and the whole body of one answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as text (lossy UTF-8).
    pub body: String,
}

/// Sends `request` and reads the whole answer. Failing to send or to read the answer is
/// `Retryable`: the destination may or may not have acted, and every pico sink makes the same
/// request safe to repeat. `what` names the request in messages (`POST /idx/_bulk`).
pub async fn exchange(request: reqwest::RequestBuilder, what: &str) -> Result<Reply, SinkError> {
    let response = request.send().await.map_err(|e| send_failure(e, what))?;
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.map_err(|e| {
        SinkError::retryable(format!(
            "{what}: reading the answer failed: {}",
            error_chain(&e)
        ))
        .with_source(e)
    })?;
    tracing::debug!(%status, what, "answer");
    Ok(Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// A request (`what` names it) that got no answer, in the sink contract: the server it went to
/// (scheme, host and port: never a password or a query) and the client's reason. A host name
/// that does not resolve and a TLS mismatch are `Fatal` with what to change, as no retry heals
/// them; anything else is `Retryable` (the server may be starting, or the network may heal).
pub fn send_failure(e: reqwest::Error, what: &str) -> SinkError {
    let server = e
        .url()
        .map(|u| format!(" at {}", u.origin().ascii_serialization()))
        .unwrap_or_default();
    let e = e.without_url();
    let reason = error_chain(&e);
    match unhealable_connect_failure(&reason) {
        Some(advice) => {
            SinkError::fatal(format!("{what} failed{server}: {reason} — {advice}")).with_source(e)
        }
        None => SinkError::retryable(format!("{what} failed{server}: {reason}")).with_source(e),
    }
}

impl Reply {
    /// The status's class in the shared table.
    pub fn class(&self) -> StatusClass {
        StatusClass::of(self.status)
    }

    /// Whether trying again later may succeed: 408, 425, 429 and 5xx.
    pub fn is_transient(&self) -> bool {
        self.class() == StatusClass::Transient
    }

    /// This (unsuccessful) answer in the sink contract by the shared table: `Retryable`
    /// honouring `Retry-After` for the transient statuses, `Fatal` with `advice` for the
    /// others. A sink gives its API's own statuses their meaning before calling this.
    pub fn failure(&self, what: &str, advice: &Advice) -> SinkError {
        match self.class() {
            StatusClass::Transient => self.retryable(what),
            StatusClass::Denied => self.fatal(what, advice.denied),
            StatusClass::NotFound => self.fatal(what, advice.not_found),
            StatusClass::Success | StatusClass::Other => self.fatal(what, "unexpected answer"),
        }
    }

    /// The server's `Retry-After`, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after(&self.headers)
    }

    /// The first 300 characters of the body.
    pub fn snippet(&self) -> String {
        snippet(&self.body)
    }

    /// A `Retryable` error for this answer, honouring `Retry-After`.
    pub fn retryable(&self, what: &str) -> SinkError {
        SinkError::retryable(format!("{what}: {}: {}", self.status, self.snippet()))
            .with_retry_after(self.retry_after())
    }

    /// A `Fatal` error for this answer, with advice on what to change.
    pub fn fatal(&self, what: &str, advice: &str) -> SinkError {
        SinkError::fatal(format!(
            "{what}: {}: {advice}: {}",
            self.status,
            self.snippet()
        ))
    }

    /// The body parsed as JSON; a body that does not parse is `Retryable` (a proxy's error
    /// page, a cut answer).
    pub fn json<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T, SinkError> {
        serde_json::from_str(&self.body).map_err(|e| {
            SinkError::retryable(format!(
                "{what}: unexpected answer ({}): {e}: {}",
                self.status,
                self.snippet()
            ))
            .with_source(e)
        })
    }
}

/// `Retry-After` as delay-seconds or an HTTP-date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The first 300 characters of `body`, with `…` when cut.
pub fn snippet(body: &str) -> String {
    let mut s: String = body.trim().chars().take(300).collect();
    if s.len() < body.trim().len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn transient_statuses_and_errors() {
        let reply = |code: u16| Reply {
            status: StatusCode::from_u16(code).unwrap(),
            headers: HeaderMap::new(),
            body: "x".repeat(400),
        };
        for code in [408, 425, 429, 500, 502, 503] {
            assert!(reply(code).is_transient(), "{code}");
        }
        for code in [200, 400, 401, 404, 409, 413] {
            assert!(!reply(code).is_transient(), "{code}");
        }
        let e = reply(503).retryable("POST /x");
        assert!(e.is_retryable());
        let message = e.message();
        assert!(message.starts_with("POST /x: 503"), "{message}");
        assert!(message.ends_with('…'), "body is cut: {message}");
        assert!(matches!(
            reply(200).json::<serde_json::Value>("GET"),
            Err(SinkError::Retryable { .. })
        ));
    }

    #[test]
    fn failures_follow_the_table_with_the_sinks_advice() {
        let advice = Advice {
            denied: "check the token",
            not_found: "create the index",
        };
        let reply = |code: u16, after: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            if let Some(after) = after {
                headers.insert(RETRY_AFTER, HeaderValue::from_static(after));
            }
            Reply {
                status: StatusCode::from_u16(code).unwrap(),
                headers,
                body: "why".into(),
            }
        };
        for code in [408, 425, 429, 503] {
            let e = reply(code, Some("3")).failure("POST /w", &advice);
            assert!(e.is_retryable(), "{code}");
            assert_eq!(e.retry_after(), Some(Duration::from_secs(3)), "{code}");
        }
        for (code, says) in [
            (401, "check the token"),
            (403, "check the token"),
            (404, "create the index"),
            (405, "create the index"),
            (400, "unexpected answer"),
            (302, "unexpected answer"),
        ] {
            let e = reply(code, None).failure("POST /w", &advice);
            assert!(e.is_fatal(), "{code}");
            assert!(e.message().contains(says), "{code}: {}", e.message());
        }
    }
}
