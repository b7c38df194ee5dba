//! [`HttpClient`]: a `reqwest::Client` (the sink's own or one the caller already has) plus the
//! headers every request of a sink carries.

use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, Url};

use crate::settings::{HttpSettings, header_map};
use pico_sink::SinkError;

/// A client and the sink's extra headers (credentials, tenant ids). The headers travel on
/// every request instead of as the client's defaults, so a client shared with the rest of a
/// process works unchanged.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    headers: HeaderMap,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A new client from `settings` (timeouts, redirects), with its headers.
    pub fn new(settings: &HttpSettings, follow_redirects: bool) -> Result<Self, SinkError> {
        let bare = HttpSettings {
            headers: Vec::new(),
            ..settings.clone()
        };
        Self::with_client(bare.client(follow_redirects)?, settings)
    }

    /// A client the caller already has; `settings` give the headers (its timeouts and
    /// redirect policy are the client's own). A bad header is `Fatal`.
    pub fn with_client(
        client: reqwest::Client,
        settings: &HttpSettings,
    ) -> Result<Self, SinkError> {
        Ok(Self {
            client,
            headers: header_map(&settings.headers)?,
        })
    }

    /// A request with the sink's headers.
    pub fn request(&self, method: Method, url: Url) -> RequestBuilder {
        self.client
            .request(method, url)
            .headers(self.headers.clone())
    }

    /// `GET url`.
    pub fn get(&self, url: Url) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// `POST url`.
    pub fn post(&self, url: Url) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// `PUT url`.
    pub fn put(&self, url: Url) -> RequestBuilder {
        self.request(Method::PUT, url)
    }
}
