//! Errors raised while building or parsing identities.

use thiserror::Error;

/// Why an identity could not be built or parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IdentityError {
    /// The text is not of the form `topic:partition:offset` (or `topic:partition:first..=last`).
    #[error("not a canonical identity ({reason}): {text:?}")]
    Malformed {
        /// The text that was given (cut to 200 bytes).
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A batch whose last offset is below its first.
    #[error("batch range is empty: first offset {first} is above last offset {last}")]
    EmptyRange {
        /// First offset of the range.
        first: u64,
        /// Last offset of the range.
        last: u64,
    },
    /// A namespace outside `[A-Za-z0-9._-]{1,64}`.
    #[error(
        "namespace {0:?} is not allowed: use 1 to 64 characters from A-Z a-z 0-9 . _ - (not starting with '.')"
    )]
    BadNamespace(String),
    /// A JetStream stream name or filter subject JetStream would refuse.
    #[error("not a JetStream source ({reason}): {text:?}")]
    BadJetStreamSource {
        /// The stream name or filter subject that was given (cut to 200 bytes).
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An Iggy stream or topic name Iggy would refuse, or a topic that is not an Iggy source's.
    #[error("not an Iggy source ({reason}): {text:?}")]
    BadIggySource {
        /// The name or topic that was given (cut to 200 bytes).
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The text does not carry the namespace of the scope it was parsed in.
    #[error("identity {text:?} does not belong to namespace {expected:?}")]
    WrongNamespace {
        /// The text that was given (cut to 200 bytes).
        text: String,
        /// The namespace the scope expected (empty for none).
        expected: String,
    },
}

/// Cuts `text` to at most 200 bytes on a char boundary, for error messages.
pub(crate) fn clip(text: &str) -> String {
    if text.len() <= 200 {
        return text.to_owned();
    }
    let mut end = 200;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
