//! [`HttpSettings`] and the client built from them.

use std::time::Duration;

use pico_sink::SinkError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

/// Connection settings every HTTP-based sink shares. `Debug` redacts the values of
/// credential headers (`Authorization`, API keys, tokens). In a configuration file (a sink's
/// `http` table) every key is optional and an unknown key is refused with its name.
#[derive(Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Extra headers on every request (`Authorization`, API keys, ...); in a file a table,
    /// `headers = { Authorization = "Bearer …" }` (default: none).
    #[serde(with = "pico_sink::config::pairs")]
    pub headers: Vec<(String, String)>,
    /// Whole-request timeout (`request_timeout_ms`, default 30 000).
    #[serde(rename = "request_timeout_ms", with = "pico_sink::config::millis")]
    pub request_timeout: Duration,
    /// TCP/TLS connect timeout (`connect_timeout_ms`, default 5 000).
    #[serde(rename = "connect_timeout_ms", with = "pico_sink::config::millis")]
    pub connect_timeout: Duration,
}

impl Default for HttpSettings {
    /// No extra headers, 30 s request and 5 s connect timeouts.
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSettings")
            .field("headers", &redacted_headers(&self.headers))
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

/// Header pairs for `Debug`, credential values redacted.
pub fn redacted_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    pico_sink::kit::redact_options(headers.iter().map(|(k, v)| (k, v)))
}

impl HttpSettings {
    /// A client with these settings; `follow_redirects` off leaves 3xx answers to the caller
    /// (needed where credentials must survive a redirect to another host, as in Doris).
    /// A bad header is `Fatal`.
    pub fn client(&self, follow_redirects: bool) -> Result<reqwest::Client, SinkError> {
        let headers = header_map(&self.headers)?;
        let redirects = if follow_redirects {
            reqwest::redirect::Policy::limited(5)
        } else {
            reqwest::redirect::Policy::none()
        };
        reqwest::Client::builder()
            .timeout(self.request_timeout)
            .connect_timeout(self.connect_timeout)
            .default_headers(headers)
            .redirect(redirects)
            .build()
            .map_err(|e| SinkError::fatal("cannot build the HTTP client").with_source(e))
    }
}

/// Header pairs as a map; a bad name or value is `Fatal` (credential values are not printed).
pub fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, SinkError> {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| SinkError::fatal(format!("header name {name:?} is invalid: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| SinkError::fatal(format!("header {name} has an invalid value: {e}")))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Parses the base URL of a destination (`what` names the setting in messages); it must be
/// http or https. A trailing `/` is added so relative paths join below it.
pub fn base_url(url: &str, what: &str) -> Result<reqwest::Url, SinkError> {
    let mut parsed = reqwest::Url::parse(url)
        .map_err(|e| SinkError::fatal(format!("{what} {url:?} is not a valid URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(SinkError::fatal(format!(
            "{what} {url:?} must use http or https"
        )));
    }
    if !parsed.path().ends_with('/') {
        let path = format!("{}/", parsed.path());
        parsed.set_path(&path);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_and_headers() {
        let u = base_url("http://h:9200/prefix", "url").unwrap();
        assert_eq!(
            u.join("idx/_bulk").unwrap().as_str(),
            "http://h:9200/prefix/idx/_bulk"
        );
        assert!(matches!(
            base_url("ftp://h", "url"),
            Err(SinkError::Fatal { .. })
        ));
        assert!(matches!(
            base_url("::", "url"),
            Err(SinkError::Fatal { .. })
        ));
        let bad = HttpSettings {
            headers: vec![("x y".into(), "v".into())],
            ..HttpSettings::default()
        };
        assert!(matches!(bad.client(true), Err(SinkError::Fatal { .. })));
        assert!(HttpSettings::default().client(false).is_ok());
    }

    #[test]
    fn debug_redacts_credential_headers() {
        let s = HttpSettings {
            headers: vec![
                ("Authorization".into(), "Bearer sekrit".into()),
                ("X-Api-Key".into(), "sekrit".into()),
                ("X-Tenant".into(), "acme".into()),
            ],
            ..HttpSettings::default()
        };
        let text = format!("{s:?}");
        assert!(!text.contains("sekrit"), "{text}");
        assert!(text.contains("acme"), "{text}");
    }
}
