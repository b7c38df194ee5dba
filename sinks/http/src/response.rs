//! Mapping HTTP answers onto the sink contract.

use std::time::Duration;

use pico_http_common::{retry_after, snippet};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// What one POST came to.
#[derive(Debug)]
pub(crate) enum Answer {
    /// 2xx.
    Stored,
    /// Try the same request again later.
    Retry {
        message: String,
        after: Option<Duration>,
    },
    /// The endpoint refuses this payload; split it or reject its records.
    Refused { reason: String },
    /// Configuration problem.
    Fatal { message: String },
}

/// Classifies a status; `key` is named in messages where it matters.
pub(crate) fn classify(status: StatusCode, headers: &HeaderMap, body: &str, key: &str) -> Answer {
    let snippet = snippet(body);
    let after = retry_after(headers);
    match status.as_u16() {
        200..=299 => Answer::Stored,
        409 => Answer::Retry {
            message: format!("409: a request with Idempotency-Key {key} is still in flight"),
            after,
        },
        408 | 425 | 429 | 500 | 502 | 503 | 504 => Answer::Retry {
            message: format!("{status}: {snippet}"),
            after,
        },
        400 | 413 | 415 => Answer::Refused {
            reason: format!("{status}: {snippet}"),
        },
        422 => Answer::Fatal {
            message: format!(
                "422: the endpoint has already seen Idempotency-Key {key} with another payload; \
                 the batch content for this offset range changed (another namespace or body \
                 format on the same endpoint?) — give this sink its own namespace: {snippet}"
            ),
        },
        401 | 403 => Answer::Fatal {
            message: format!("{status}: check the credentials in the sink's headers: {snippet}"),
        },
        404 | 405 => Answer::Fatal {
            message: format!("{status}: check the sink's url (it must accept POST): {snippet}"),
        },
        _ if status.is_server_error() => Answer::Retry {
            message: format!("{status}: {snippet}"),
            after,
        },
        _ => Answer::Fatal {
            message: format!("{status}: unexpected answer from the endpoint: {snippet}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_contract() {
        let h = HeaderMap::new();
        let kind = |code: u16| match classify(StatusCode::from_u16(code).unwrap(), &h, "b", "\"k\"")
        {
            Answer::Stored => "stored",
            Answer::Retry { .. } => "retry",
            Answer::Refused { .. } => "refused",
            Answer::Fatal { .. } => "fatal",
        };
        for (code, want) in [
            (200, "stored"),
            (201, "stored"),
            (204, "stored"),
            (409, "retry"),
            (429, "retry"),
            (503, "retry"),
            (500, "retry"),
            (400, "refused"),
            (413, "refused"),
            (422, "fatal"),
            (401, "fatal"),
            (404, "fatal"),
            (418, "fatal"),
        ] {
            assert_eq!(kind(code), want, "status {code}");
        }
        match classify(
            StatusCode::UNPROCESSABLE_ENTITY,
            &h,
            "",
            "\"orders:0:0..=9\"",
        ) {
            Answer::Fatal { message } => assert!(message.contains("\"orders:0:0..=9\"")),
            other => panic!("422 must be fatal, got {other:?}"),
        }
    }
}
