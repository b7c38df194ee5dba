//! [`Server`]: what every server a destination runs on offers the suite, whichever kind started
//! it, and [`wait_http`], the readiness loop the kinds share.

use std::time::{Duration, Instant};

use async_trait::async_trait;

/// A destination's server, external, in a container or a process on this machine.
#[async_trait]
pub trait Server: Send + Sync + Sized + 'static {
    /// Where clients reach it: a base URL (`http://127.0.0.1:8123`, `postgres://…`) or an
    /// endpoint (S3).
    fn url(&self) -> &str;
    /// Stops what was started for it (nothing for a server of the user's); called once, by
    /// [`crate::serve::Served::stop`] or by the code that provided it.
    async fn stop(self) -> Result<(), String>;
}

/// Polls `url` with GET every 100 ms until `ready(status, body)` or `timeout`.
pub async fn wait_http(
    url: &str,
    timeout: Duration,
    headers: &[(&str, &str)],
    ready: impl Fn(u16, &str) -> bool,
) -> Result<(), String> {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let mut last = String::from("no answer");
    while started.elapsed() < timeout {
        let mut request = client.get(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        match request.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                if ready(status, &body) {
                    return Ok(());
                }
                last = format!("{status}: {}", body.chars().take(200).collect::<String>());
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("{url} not ready after {timeout:?} (last: {last})"))
}
