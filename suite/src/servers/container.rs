//! Destinations served over HTTP-like URLs (Elasticsearch, MongoDB, Meilisearch, Quickwit,
//! Doris, …): external (`PICO_<SINK>_URL`), the docker provider with the pinned image, or —
//! for servers that are one binary — the native provider of [`crate::servers::binary`].

use std::time::{Duration, Instant};

use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, GenericImage, ImageExt};

use crate::images::image;
use crate::provide::{docker_engine, external_url, free_port};
use crate::servers::binary::{BinaryServer, NativeProcess};
use pico_conformance::provider::ProviderKind;

/// What keeps a destination running until the suite is done with it.
pub enum Kept {
    /// A container (docker provider).
    Container(Box<ContainerAsync<GenericImage>>),
    /// A server process (native provider).
    Process(Box<NativeProcess>),
}

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
    /// The host port to map `port` to (default: a free one), for services that must advertise
    /// their own address (Kafka).
    pub host_port: Option<u16>,
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
        let port = match spec.host_port {
            Some(p) => p,
            None => free_port().map_err(|e| e.to_string())?,
        };
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

/// The URL of `sink`'s destination through `provider`, with what serves it (none when
/// external). `native` is the server's single binary, for the native provider, if it has one.
pub async fn provide(
    sink: &str,
    provider: ProviderKind,
    spec: ContainerSpec,
    scheme: &str,
    native: Option<&dyn BinaryServer>,
) -> Result<(String, Option<Kept>), String> {
    match (provider, native) {
        (ProviderKind::External, _) => Ok((external_url(sink)?, None)),
        (ProviderKind::Docker, _) => {
            let started = start(&spec).await?;
            Ok((
                format!("{scheme}://{}", started.address),
                Some(Kept::Container(Box::new(started.container))),
            ))
        }
        (ProviderKind::Native, Some(server)) => {
            let process = crate::servers::binary::start(server).await?;
            Ok((process.url.clone(), Some(Kept::Process(Box::new(process)))))
        }
        (other, _) => Err(format!(
            "{} cannot be installed or run {other} on this machine; it runs through the docker \
             provider or {}",
            spec.service,
            crate::provide::external_url_var(sink)
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
    kept: tokio::sync::Mutex<Vec<Kept>>,
    /// Fault proxies handed to sinks.
    pub proxies: pico_conformance::proxy::FaultProxies,
}

impl Hosted {
    /// Keeps `kept` running until [`Hosted::stop`].
    pub fn new(url: String, kept: impl IntoIterator<Item = Kept>) -> Self {
        Self {
            url,
            kept: tokio::sync::Mutex::new(kept.into_iter().collect()),
            proxies: pico_conformance::proxy::FaultProxies::default(),
        }
    }

    /// A new fault proxy in front of `url` and its address as `scheme://addr`.
    pub async fn proxied(
        &self,
        url: &str,
        scheme: &str,
    ) -> Result<(String, std::sync::Arc<pico_conformance::proxy::FaultProxy>), String> {
        let proxy = self.proxies.in_front_of_url(url).await?;
        Ok((format!("{scheme}://{}", proxy.addr()), proxy))
    }

    /// Stops the proxies, removes the containers and stops the processes.
    pub async fn stop(&self) -> Result<(), String> {
        self.proxies.clear().await;
        let mut errors = Vec::new();
        for kept in self.kept.lock().await.drain(..) {
            let stopped = match kept {
                Kept::Container(c) => c.rm().await.map_err(|e| e.to_string()),
                Kept::Process(p) => p.stop().await,
            };
            if let Err(e) = stopped {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}
