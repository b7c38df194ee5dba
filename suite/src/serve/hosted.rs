//! [`Hosted`]: a destination reached at a URL, with what keeps it running — nothing for an
//! external server (`PICO_<SINK>_URL`), containers for the docker kind, a process for the
//! native kind (servers that are one binary, [`crate::serve::native`]). [`provide`] picks the
//! kind.

use async_trait::async_trait;
use testcontainers_modules::testcontainers::{ContainerAsync, GenericImage};

use crate::provide::external_url;
use crate::serve::docker::{ContainerSpec, start};
use crate::serve::native::{BinaryServer, NativeProcess};
use crate::serve::server::Server;
use pico_conformance::provider::ProviderKind;

/// What keeps a destination running until the suite is done with it.
pub enum Kept {
    /// A container (docker kind).
    Container(Box<ContainerAsync<GenericImage>>),
    /// A server process (native kind).
    Process(Box<NativeProcess>),
}

impl Kept {
    async fn stop(self) -> Result<(), String> {
        match self {
            Kept::Container(c) => c.rm().await.map_err(|e| e.to_string()),
            Kept::Process(p) => p.stop().await,
        }
    }
}

/// A destination's URL with what keeps it running.
pub struct Hosted {
    /// The destination's base URL.
    pub url: String,
    kept: Vec<Kept>,
}

impl Hosted {
    /// Keeps `kept` running until [`Server::stop`]; a trailing `/` of `url` is dropped.
    pub fn new(url: String, kept: impl IntoIterator<Item = Kept>) -> Self {
        Self {
            url: url.trim_end_matches('/').to_owned(),
            kept: kept.into_iter().collect(),
        }
    }

    /// Keeps `kept` running too (a second service of the destination).
    pub fn keep(&mut self, kept: Kept) {
        self.kept.push(kept);
    }

    /// Whether nothing was started for it: the server is the user's.
    pub fn is_external(&self) -> bool {
        self.kept.is_empty()
    }
}

#[async_trait]
impl Server for Hosted {
    fn url(&self) -> &str {
        &self.url
    }

    /// Removes the containers and stops the processes, every one even when one fails.
    async fn stop(self) -> Result<(), String> {
        let mut errors = Vec::new();
        for kept in self.kept {
            if let Err(e) = kept.stop().await {
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

/// `sink`'s destination through `provider`, reached at `scheme://…` when started here.
/// `native` is the server's single binary, for the native kind, if it has one.
pub async fn provide(
    sink: &str,
    provider: ProviderKind,
    spec: ContainerSpec,
    scheme: &str,
    native: Option<&dyn BinaryServer>,
) -> Result<Hosted, String> {
    match (provider, native) {
        (ProviderKind::External, _) => Ok(Hosted::new(external_url(sink)?, [])),
        (ProviderKind::Docker, _) => {
            let started = start(&spec).await?;
            Ok(Hosted::new(
                format!("{scheme}://{}", started.address),
                [Kept::Container(Box::new(started.container))],
            ))
        }
        (ProviderKind::Native, Some(server)) => {
            let process = crate::serve::native::start(server).await?;
            Ok(Hosted::new(
                process.url.clone(),
                [Kept::Process(Box::new(process))],
            ))
        }
        (other, _) => Err(format!(
            "{} cannot be installed or run {other} on this machine; it runs through the docker \
             provider or {}",
            spec.service,
            crate::provide::external_url_var(sink)
        )),
    }
}
