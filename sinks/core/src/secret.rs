//! Keeping credentials out of logs: [`Secret`] for fields that are secrets, [`redact_url`] for
//! connection strings that embed a password, [`redact_options`] for key-value settings.
//!
//! Every sink configuration's `Debug` goes through these, so `tracing::debug!(?config)` and
//! panic messages never print a password, token or key.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What a redacted value prints as.
pub const REDACTED: &str = "<redacted>";

/// A secret string (password, token, API key). `Debug` and `Display` print
/// [`REDACTED`]; serde reads and writes it as the plain string so configuration files keep
/// working; [`Secret::expose`] gives the value to the code that must send it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Query parameters and `key=value` words whose values are credentials.
const SECRET_WORDS: [&str; 8] = [
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "credential",
    "sig",
];

/// Whether a setting named `name` holds a credential (case-insensitive: `password`,
/// `aws_secret_access_key`, `AWS_SESSION_TOKEN`, `api_key`, ...).
pub fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| lower.contains(w))
}

/// A connection string with its password (URL userinfo, `password=` in a query or in a
/// libpq `key=value` string) replaced by [`REDACTED`]; anything else is kept as it is.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let mut out = url.to_owned();
    // URL userinfo: scheme://user:password@host
    if let Some(scheme_end) = out.find("://") {
        let rest = scheme_end + 3;
        let authority_end = out[rest..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..authority_end].rfind('@') {
            let at = rest + at;
            if let Some(colon) = out[rest..at].find(':') {
                out.replace_range(rest + colon + 1..at, REDACTED);
            }
        }
    }
    // Query parameters (`?password=x&…`) and libpq words (`host=h password=x`).
    let mut result = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(eq) = rest.find('=') {
        let name_start = rest[..eq].rfind(['?', '&', ' ', ';']).map_or(0, |i| i + 1);
        let value_end = rest[eq + 1..]
            .find(['&', ' ', ';', '#'])
            .map_or(rest.len(), |i| eq + 1 + i);
        result.push_str(&rest[..eq + 1]);
        if is_secret_name(&rest[name_start..eq]) {
            result.push_str(REDACTED);
        } else {
            result.push_str(&rest[eq + 1..value_end]);
        }
        rest = &rest[value_end..];
    }
    result.push_str(rest);
    if result == url {
        Cow::Borrowed(url)
    } else {
        Cow::Owned(result)
    }
}

/// Key-value settings (object-store options, extra headers) for `Debug`: values of secret
/// names ([`is_secret_name`], plus `authorization` and `key`-ending names) are redacted.
pub fn redact_options<'a, I, K, V>(options: I) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (&'a K, &'a V)>,
    K: AsRef<str> + ?Sized + 'a,
    V: AsRef<str> + ?Sized + 'a,
{
    options
        .into_iter()
        .map(|(k, v)| {
            let name = k.as_ref();
            let lower = name.to_ascii_lowercase();
            let secret = is_secret_name(name)
                || lower == "authorization"
                || (lower.ends_with("key") && !lower.ends_with("_id"));
            let value = if secret {
                REDACTED.to_owned()
            } else {
                v.as_ref().to_owned()
            };
            (name.to_owned(), value)
        })
        .collect()
}

/// `scheme://host:port` of a URL, for naming a server in messages: no user, password, path
/// or query, so nothing secret. A text without `://` is returned redacted ([`redact_url`]).
pub fn url_origin(url: &str) -> String {
    let redacted = redact_url(url);
    let Some((scheme, rest)) = redacted.split_once("://") else {
        return redacted.into_owned();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(
            serde_json::to_string(&s).ok().as_deref(),
            Some("\"hunter2\"")
        );
    }

    #[test]
    fn passwords_in_connection_strings_are_redacted() {
        assert_eq!(
            redact_url("postgres://app:hunter2@db:5432/x?sslmode=require"),
            "postgres://app:<redacted>@db:5432/x?sslmode=require"
        );
        assert_eq!(
            redact_url("host=db user=app password=hunter2 dbname=x"),
            "host=db user=app password=<redacted> dbname=x"
        );
        assert_eq!(
            redact_url("mongodb://u:p%40ss@h1,h2/?authSource=admin&apiKey=abc"),
            "mongodb://u:<redacted>@h1,h2/?authSource=admin&apiKey=<redacted>"
        );
        assert!(matches!(
            redact_url("http://127.0.0.1:8123"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn secret_options_are_redacted() {
        let opts = [
            ("AWS_ACCESS_KEY_ID", "AKIA1"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("aws_session_token", "tok"),
            ("x-api-key", "k"),
            ("region", "us-east-1"),
        ];
        let shown = redact_options(opts.iter().map(|(k, v)| (*k, *v)));
        let text = format!("{shown:?}");
        assert!(
            text.contains("AKIA1") && text.contains("us-east-1"),
            "{text}"
        );
        assert!(
            !text.contains("s3cr3t") && !text.contains("tok\"") && !text.contains("\"k\""),
            "{text}"
        );
    }

    #[test]
    fn an_origin_names_the_server_and_nothing_secret() {
        assert_eq!(
            url_origin("https://key:secret@store.internal:9000/base?token=x"),
            "https://store.internal:9000"
        );
        assert_eq!(url_origin("http://127.0.0.1:8333"), "http://127.0.0.1:8333");
        assert_eq!(url_origin("store:9000"), "store:9000");
    }
}
