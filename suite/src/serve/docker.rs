//! The docker kind: a service's pinned image (see [`crate::images`]) started through a
//! Docker-compatible engine on a free host port.

use std::time::Duration;

use testcontainers_modules::testcontainers::core::IntoContainerPort;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, GenericImage, ImageExt};

use crate::images::image;
use crate::provide::{docker_engine, free_port};

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
