//! Mapping HTTP answers onto the sink contract.

use pico_http_common::{Advice, Reply};
use pico_sink::SinkError;

/// What to change when the endpoint answers with a fatal status of the shared table.
const ADVICE: Advice = Advice {
    denied: "check the credentials in the sink's headers",
    not_found: "check the sink's url (it must accept POST)",
};

/// What one POST came to.
#[derive(Debug)]
pub(crate) enum Answer {
    /// 2xx.
    Stored,
    /// The endpoint refuses this payload; split it or reject its records.
    Refused { reason: String },
    /// Retry later, or a configuration problem.
    Failed(SinkError),
}

/// Classifies an answer: the statuses an idempotency-key endpoint gives a meaning of its own
/// first (409 in flight, 422 key reused, 400/413/415 refused payload), then the shared table
/// (`Retry-After` honoured). `what` names the request, `key` its Idempotency-Key.
pub(crate) fn classify(reply: &Reply, what: &str, key: &str) -> Answer {
    let status = reply.status;
    match status.as_u16() {
        200..=299 => Answer::Stored,
        409 => Answer::Failed(
            SinkError::retryable(format!(
                "{what}: 409: a request with Idempotency-Key {key} is still in flight"
            ))
            .with_retry_after(reply.retry_after()),
        ),
        400 | 413 | 415 => Answer::Refused {
            reason: format!("{status}: {}", reply.snippet()),
        },
        422 => Answer::Failed(SinkError::fatal(format!(
            "{what}: 422: the endpoint has already seen Idempotency-Key {key} with another \
             payload; the batch content for this offset range changed (another namespace or \
             body format on the same endpoint?) — give this sink its own namespace: {}",
            reply.snippet()
        ))),
        _ => Answer::Failed(reply.failure(what, &ADVICE)),
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
        headers.insert(RETRY_AFTER, HeaderValue::from_static("4"));
        Reply {
            status: StatusCode::from_u16(code).unwrap(),
            headers,
            body: "b".into(),
        }
    }

    #[test]
    fn statuses_map_to_the_contract() {
        let kind = |code: u16| match classify(&reply(code), "POST", "\"k\"") {
            Answer::Stored => "stored",
            Answer::Refused { .. } => "refused",
            Answer::Failed(e) if e.is_retryable() => {
                assert_eq!(e.retry_after(), Some(Duration::from_secs(4)), "{code}");
                "retry"
            }
            Answer::Failed(_) => "fatal",
        };
        for (code, want) in [
            (200, "stored"),
            (201, "stored"),
            (204, "stored"),
            (408, "retry"),
            (409, "retry"),
            (425, "retry"),
            (429, "retry"),
            (503, "retry"),
            (500, "retry"),
            (400, "refused"),
            (413, "refused"),
            (415, "refused"),
            (422, "fatal"),
            (401, "fatal"),
            (404, "fatal"),
            (405, "fatal"),
            (418, "fatal"),
        ] {
            assert_eq!(kind(code), want, "status {code}");
        }
        match classify(&reply(422), "POST", "\"orders:0:0..=9\"") {
            Answer::Failed(e) => {
                assert!(e.is_fatal() && e.message().contains("\"orders:0:0..=9\""))
            }
            other => panic!("422 must be fatal, got {other:?}"),
        }
    }
}
