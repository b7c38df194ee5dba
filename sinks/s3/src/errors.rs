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
    match (status, code.as_str()) {
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
        (Some(409), _) | (Some(429), _) | (_, "SlowDown" | "ConditionalRequestConflict") => {
            S3Failure::Other(SinkError::retryable(detail))
        }
        (Some(s), _) if s >= 500 => S3Failure::Other(SinkError::retryable(detail)),
        (Some(s), _) if (400..500).contains(&s) => S3Failure::Other(SinkError::fatal(format!(
            "{detail}: the store refused the request"
        ))),
        // No HTTP answer: connection, timeout, dispatch; an unknown host or a TLS mismatch
        // never heals.
        _ => {
            let reason = pico_sink::kit::error_chain(e);
            S3Failure::Other(match pico_sink::kit::unhealable_connect_failure(&reason) {
                Some(advice) => SinkError::fatal(format!("{what}: {reason} — {advice}")),
                None => SinkError::retryable(format!("{what}: {reason}")),
            })
        }
    }
}
