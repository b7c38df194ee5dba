//! Destinations that only run in containers here (Elasticsearch, MongoDB, Meilisearch, Quickwit,
//! Doris): external (`PICO_<SINK>_URL`) or the docker provider with the pinned image.

use std::time::{Duration, Instant};

use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, GenericImage, ImageExt};

use crate::images::image;
use crate::provider::{ProviderKind, docker_engine, external_url, free_port};

/// How to run one service's image.
#[derive(Debug, Clone, Default)]
pub struct ContainerSpec {
    /// Service name in [`crate::images::IMAGES`].
    pub service: &'static str,
    /// The port the service listens on inside the container (mapped to a free host port);
    /// with `host_network` the port it listens on on the host.
    pub port: u16,
    /// Environment.
    pub env: Vec<(&'static str, String)>,
    /// Command arguments, if the image needs any.
    pub cmd: Vec<&'static str>,
    /// Run on the host network (Doris FE and BE find each other on 127.0.0.1).
    pub host_network: bool,
}

/// A started container, kept alive until dropped or removed.
pub struct Started {
    /// `host:port` of the service.
    pub address: String,
    /// The container.
    pub container: ContainerAsync<GenericImage>,
}

/// Starts `spec` through the Docker-compatible engine.
pub async fn start(spec: &ContainerSpec) -> Result<Started, String> {
    docker_engine()?;
    let full =
        image(spec.service).ok_or_else(|| format!("no image pinned for {}", spec.service))?;
    let (name, tag) = full.rsplit_once(':').ok_or("image without a tag")?;
    let mut request = GenericImage::new(name, tag)
        .with_exposed_port(spec.port.tcp())
        .with_startup_timeout(Duration::from_secs(300));
    for (k, v) in &spec.env {
        request = request.with_env_var(*k, v.clone());
    }
    if !spec.cmd.is_empty() {
        request = request.with_cmd(spec.cmd.clone());
    }
    let host_port = if spec.host_network {
        request = request.with_network("host");
        spec.port
    } else {
        let port = free_port().map_err(|e| e.to_string())?;
        request = request.with_mapped_port(port, spec.port.tcp());
        port
    };
    let container = request
        .start()
        .await
        .map_err(|e| format!("starting {full}: {e}"))?;
    Ok(Started {
        address: format!("127.0.0.1:{host_port}"),
        container,
    })
}

/// The URL of `sink`'s destination through `provider`, with the container that serves it
/// (none when external).
pub async fn provide(
    sink: &str,
    provider: ProviderKind,
    spec: ContainerSpec,
    scheme: &str,
) -> Result<(String, Option<ContainerAsync<GenericImage>>), String> {
    match provider {
        ProviderKind::External => Ok((external_url(sink)?, None)),
        ProviderKind::Docker => {
            let started = start(&spec).await?;
            Ok((
                format!("{scheme}://{}", started.address),
                Some(started.container),
            ))
        }
        other => Err(format!(
            "{} cannot be installed or run {other} on this machine; it runs through the docker \
             provider or {}",
            spec.service,
            crate::provider::external_url_var(sink)
        )),
    }
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

/// A destination's URL with what keeps it running and the fault proxies in front of it.
pub struct Hosted {
    /// The destination's base URL.
    pub url: String,
    containers: tokio::sync::Mutex<Vec<ContainerAsync<GenericImage>>>,
    /// Fault proxies handed to sinks.
    pub proxies: crate::proxy::FaultProxies,
}

impl Hosted {
    /// Keeps `containers` until [`Hosted::stop`].
    pub fn new(url: String, containers: Vec<ContainerAsync<GenericImage>>) -> Self {
        Self {
            url,
            containers: tokio::sync::Mutex::new(containers),
            proxies: crate::proxy::FaultProxies::default(),
        }
    }

    /// A new fault proxy in front of `url` and its address as `scheme://addr`.
    pub async fn proxied(
        &self,
        url: &str,
        scheme: &str,
    ) -> Result<(String, std::sync::Arc<crate::proxy::FaultProxy>), String> {
        let proxy = self.proxies.in_front_of_url(url).await?;
        Ok((format!("{scheme}://{}", proxy.addr()), proxy))
    }

    /// Stops the proxies and removes the containers.
    pub async fn stop(&self) -> Result<(), String> {
        self.proxies.clear().await;
        let mut errors = Vec::new();
        for c in self.containers.lock().await.drain(..) {
            if let Err(e) = c.rm().await {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}
