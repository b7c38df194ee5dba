//! [`Served`]: the one holder of a started server and the fault proxies put in front of it,
//! stopped once; and [`ServedDestination`], a conformance destination on such a server whose
//! [`Store`] says how its sink is built and how it is read back.

use std::sync::Arc;

use async_trait::async_trait;

use crate::serve::server::Server;
use pico_conformance::horizon::Upkeep;
use pico_conformance::proxy::{FaultProxies, FaultProxy};
use pico_conformance::target::{
    Destination, Page, PayloadForm, Readback, ServerInfo, SinkUnderTest,
};

/// A started server with the fault proxies handed out in front of it.
pub struct Served<S> {
    server: S,
    proxies: FaultProxies,
}

impl<S: Server> Served<S> {
    /// Holds `server` until [`Served::stop`].
    pub fn new(server: S) -> Self {
        Self {
            server,
            proxies: FaultProxies::default(),
        }
    }

    /// The server.
    pub fn server(&self) -> &S {
        &self.server
    }

    /// A new fault proxy in front of `url` (the server's own, or a second service of it such
    /// as a Doris backend).
    pub async fn proxy_to(&self, url: &str) -> Result<Arc<FaultProxy>, String> {
        self.proxies.in_front_of_url(url).await
    }

    /// A new fault proxy in front of `addr`.
    pub async fn proxy_to_addr(
        &self,
        addr: std::net::SocketAddr,
    ) -> Result<Arc<FaultProxy>, String> {
        self.proxies.in_front_of(addr).await
    }

    /// A new fault proxy in front of the server's URL, and its address as `scheme://addr`.
    pub async fn proxied(&self, scheme: &str) -> Result<(String, Arc<FaultProxy>), String> {
        self.proxied_to(self.server.url(), scheme).await
    }

    /// A new fault proxy in front of `url`, and its address as `scheme://addr`.
    pub async fn proxied_to(
        &self,
        url: &str,
        scheme: &str,
    ) -> Result<(String, Arc<FaultProxy>), String> {
        let proxy = self.proxy_to(url).await?;
        Ok((format!("{scheme}://{}", proxy.addr()), proxy))
    }

    /// Stops the proxies, then the server.
    pub async fn stop(self) -> Result<(), String> {
        self.proxies.clear().await;
        self.server.stop().await
    }
}

/// What differs between destinations on a [`Served`] server: how a sink is built and how what
/// the destination holds is read back.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The server kind it runs on.
    type Server: Server;
    /// Bytes of the committing request (lost-ack trigger); `None` when every request commits.
    fn lost_ack_trigger(&self) -> Option<&'static [u8]>;
    /// Whether each record commits on a request of its own
    /// ([`Destination::commits_record_by_record`]).
    fn commits_record_by_record(&self) -> bool {
        false
    }
    /// A new sink writing into `isolation`, through a fault proxy of `served`.
    async fn sink(
        &self,
        served: &Served<Self::Server>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String>;
    /// Waits until what the destination accepted for `isolation` is visible.
    async fn settle(&self, served: &Served<Self::Server>, isolation: &str) -> Result<(), String> {
        let _ = (served, isolation);
        Ok(())
    }
    /// What `isolation` holds.
    async fn read_back(
        &self,
        served: &Served<Self::Server>,
        isolation: &str,
    ) -> Result<Readback, String>;
    /// The `[sink]` section of a pico-kafka pipeline file writing into `isolation` through
    /// `via` (the crash suite's fault proxy in front of the server), for the crash suite's
    /// [`crate::destinations::runtime::ServedRuntime`]; the default: this destination is not
    /// run under pico-kafka.
    async fn sink_section(
        &self,
        served: &Served<Self::Server>,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        let _ = (served, isolation, via);
        Err("this destination has no pico-kafka sink section".into())
    }
    /// Drives `isolation` past the replay horizon with the destination's own upkeep
    /// ([`Destination::pass_horizon`]); the default does none and names no horizon.
    async fn pass_horizon(
        &self,
        served: &Served<Self::Server>,
        isolation: &str,
    ) -> Result<Upkeep, String> {
        let _ = (served, isolation);
        Ok(Upkeep::unstated())
    }
    /// One page of what `isolation` holds, from `cursor`; the default is one page,
    /// [`Store::read_back`].
    async fn read_page(
        &self,
        served: &Served<Self::Server>,
        isolation: &str,
        cursor: Option<&str>,
    ) -> Result<Page, String> {
        let _ = cursor;
        Ok(Page {
            back: self.read_back(served, isolation).await?,
            next: None,
        })
    }
}

/// A destination on `served`, described by `info`, payloads compared in `form`.
pub struct ServedDestination<St: Store> {
    /// The server and its proxies.
    pub served: Served<St::Server>,
    /// Name and version, as the reports print them.
    pub info: ServerInfo,
    /// How payloads are stored.
    pub form: PayloadForm,
    /// What differs.
    pub store: St,
}

#[async_trait]
impl<St: Store> Destination for ServedDestination<St> {
    fn server(&self) -> ServerInfo {
        self.info.clone()
    }

    fn payload_form(&self) -> PayloadForm {
        self.form
    }

    fn lost_ack_trigger(&self) -> Option<Vec<u8>> {
        self.store.lost_ack_trigger().map(<[u8]>::to_vec)
    }

    fn commits_record_by_record(&self) -> bool {
        self.store.commits_record_by_record()
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        self.store.sink(&self.served, isolation).await
    }

    async fn settle(&self, isolation: &str) -> Result<(), String> {
        self.store.settle(&self.served, isolation).await
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        self.store.read_back(&self.served, isolation).await
    }

    async fn read_page(&self, isolation: &str, cursor: Option<&str>) -> Result<Page, String> {
        self.store.read_page(&self.served, isolation, cursor).await
    }

    async fn pass_horizon(&self, isolation: &str) -> Result<Upkeep, String> {
        self.store.pass_horizon(&self.served, isolation).await
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        self.served.stop().await
    }
}
