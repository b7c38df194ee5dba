//! What a sink built on the caller's own client checks of its configuration.

use crate::SinkError;
use crate::kit::redact_url;

/// Refuses a connection setting that a sink built on the caller's own client (or pool) would
/// never use: the caller believes it is used, and it is not. `setting` names the field,
/// `value` is what it holds (named back without a password), `built_with` the constructor
/// that took the client, `instead` the configuration constructor that leaves the setting out.
/// An empty `value` passes.
pub fn refuse_unused_setting(
    setting: &str,
    value: &str,
    built_with: &str,
    instead: &str,
) -> Result<(), SinkError> {
    if value.trim().is_empty() {
        return Ok(());
    }
    Err(SinkError::fatal(format!(
        "{built_with} writes through the client it is given, so {setting} ({}) would not be \
         used: build the configuration with {instead}, or leave out the client",
        redact_url(value)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unused_url_is_named_without_its_password_with_what_to_write_instead() {
        assert!(refuse_unused_setting("url", " ", "S::with_client", "C::for_table(t)").is_ok());
        let e = refuse_unused_setting(
            "url",
            "postgres://app:hunter2@db:5432/app",
            "S::with_pool",
            "C::for_table(table)",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(e.is_fatal(), "{text}");
        assert!(
            text.contains("S::with_pool") && text.contains("C::for_table(table)"),
            "{text}"
        );
        assert!(
            text.contains("db:5432") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
