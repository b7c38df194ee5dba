//! S3 SDK errors onto the sink contract.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use pico_sink::SinkError;

/// What a failed request means.
pub(crate) enum S3Failure {
    /// `412`: the object exists (a conditional create lost to an earlier write).
    AlreadyExists,
    /// The bucket is missing.
    NoSuchBucket,
    /// Anything else, as a sink error.
    Other(SinkError),
}

/// Classifies a failed request (`what` names it in messages).
pub(crate) fn classify<
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
>(
    e: &SdkError<E, R>,
    status: Option<u16>,
    what: &str,
) -> S3Failure {
    let code = e.code().unwrap_or_default().to_owned();
    let message = e.message().unwrap_or_default().to_owned();
    let detail = format!(
        "{what}: {} {code} {message}",
        status.map(|s| s.to_string()).unwrap_or_default()
    );
    if let Some(failure) = answered(status, &code, detail) {
        return failure;
    }
    // No HTTP answer: connection, timeout, dispatch; an unknown host or a TLS mismatch never
    // heals.
    let reason = pico_sink::kit::error_chain(e);
    S3Failure::Other(match pico_sink::kit::unhealable_connect_failure(&reason) {
        Some(advice) => SinkError::fatal(format!("{what}: {reason} — {advice}")),
        None => SinkError::retryable(format!("{what}: {reason}")),
    })
}

/// What an answer of the store means, by its status and error code; `None` when there was no
/// answer. A request the store gave up waiting for (`RequestTimeout`, a 400 on a slow or cut
/// upload; `408`) is `Retryable`, like throttling and server errors; other 4xx are `Fatal`.
fn answered(status: Option<u16>, code: &str, detail: String) -> Option<S3Failure> {
    Some(match (status, code) {
        (Some(412), _) | (_, "PreconditionFailed") => S3Failure::AlreadyExists,
        (_, "NoSuchBucket") => S3Failure::NoSuchBucket,
        (Some(401 | 403), _)
        | (_, "AccessDenied" | "InvalidAccessKeyId" | "SignatureDoesNotMatch") => {
            S3Failure::Other(SinkError::fatal(format!(
                "{detail}: check the credentials and the bucket policy"
            )))
        }
        (_, "InvalidBucketName") => S3Failure::Other(SinkError::fatal(format!(
            "{detail}: the bucket name is not valid"
        ))),
        (Some(408 | 409 | 429), _)
        | (_, "SlowDown" | "ConditionalRequestConflict" | "RequestTimeout") => {
            S3Failure::Other(SinkError::retryable(detail))
        }
        (Some(s), _) if s >= 500 => S3Failure::Other(SinkError::retryable(detail)),
        (Some(s), _) if (400..500).contains(&s) => S3Failure::Other(SinkError::fatal(format!(
            "{detail}: the store refused the request"
        ))),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(status: u16, code: &str) -> SinkError {
        match answered(Some(status), code, format!("{status} {code}")) {
            Some(S3Failure::Other(e)) => e,
            _ => panic!("{status} {code}: not an error"),
        }
    }

    #[test]
    fn a_request_the_store_gave_up_waiting_for_is_retryable_and_a_refusal_fatal() {
        assert!(error(400, "RequestTimeout").is_retryable());
        assert!(error(408, "").is_retryable());
        assert!(error(503, "SlowDown").is_retryable());
        assert!(error(400, "InvalidArgument").is_fatal());
        assert!(error(403, "AccessDenied").is_fatal());
        assert!(answered(None, "", String::new()).is_none());
    }
}
