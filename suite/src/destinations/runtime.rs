//! [`RuntimeDestination`]: what a destination offers the suites that run pico-kafka against it
//! (the crash suite): the `[sink]` section of a pipeline file writing into an isolation, and a
//! read-back of what one topic left there — every row the destination physically holds where it
//! can say so, not a deduplicated view.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use async_trait::async_trait;
use pico_conformance::target::{Destination, ReadRow, ServerInfo};
use serde::Serialize;

use crate::serve::{ServedDestination, Server, Store};

/// What a destination holds for one topic.
#[derive(Debug, Default)]
pub struct Stored {
    /// Every visible row (for ClickHouse the `FINAL` view; elsewhere every physical row).
    pub rows: Vec<ReadRow>,
    /// Rows physically stored where the visible view collapses them (ClickHouse before a
    /// merge), with whether merges were stopped so that none collapsed.
    pub physical: Option<(u64, bool)>,
    /// Something worth a note (objects, table version).
    pub note: Option<String>,
}

/// A started (or connected) destination pico-kafka writes into.
#[async_trait]
pub trait RuntimeDestination: Send + Sync {
    /// Name and version of the server.
    async fn info(&self) -> ServerInfo;
    /// The URL of what the runtime's sink connects to (a fault proxy goes in front of it):
    /// only its host and port count.
    fn upstream(&self) -> Result<String, String>;
    /// The `[sink]` section writing into `isolation`, connecting through `via` (the proxy).
    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String>;
    /// What `isolation` holds for `topic`.
    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String>;
    /// Where the runtime processes writing into `isolation` put their output (standard output
    /// and error, appended across restarts): the destination of the stdout sink. Others
    /// ignore it.
    fn output_in(&self, isolation: &str, dir: &std::path::Path) {
        let _ = (isolation, dir);
    }
    /// Stops what was started.
    async fn stop(self: Box<Self>) -> Result<(), String>;
}

/// A destination being started (or connected to) for pico-kafka.
pub type Providing =
    Pin<Box<dyn Future<Output = Result<Box<dyn RuntimeDestination>, String>> + Send>>;

/// Starts (or connects to) a destination for pico-kafka.
pub type Provide = fn() -> Providing;

/// A destination the crash suite runs pico-kafka against: its folder's `RUNTIME`, named by its
/// [`crate::destinations::Entry`].
#[derive(Debug)]
pub struct Runtime {
    /// Its id on the command line and in the crash report (`http-honouring`).
    pub id: &'static str,
    /// Its name in the crash report's JSON (`http`), which committed reports already use.
    pub serde_name: &'static str,
    /// Whether a replay leaves no visible duplicate (the sink dedupes on the record identity
    /// or a watermark); otherwise a replay with other batch boundaries repeats records, at most
    /// what was in flight at each interruption.
    pub keyed: bool,
    /// Whether its sink tells every replayed record as already present whatever the replay's
    /// batch boundaries (a per-record upsert that reports its conflicts); otherwise only a
    /// replay of the same batch is told, and a replay cut otherwise counts as written. The
    /// crash suite then requires already-present records after an effective kill.
    pub replays_told_per_record: bool,
    /// Whether the crash suite runs only its smoke test: the kill case with one effective
    /// kill (a sink shown to run under pico-kafka, not put through the whole failure matrix).
    pub smoke: bool,
    /// How to start it.
    pub provide: Provide,
}

/// [`Provide`] of a destination whose `provide` returns `D`.
pub(crate) fn boxed<D, F>(provide: fn() -> F) -> Providing
where
    D: RuntimeDestination + 'static,
    F: Future<Output = Result<D, String>> + Send + 'static,
{
    Box::pin(async move {
        provide()
            .await
            .map(|d| Box::new(d) as Box<dyn RuntimeDestination>)
    })
}

/// A conformance destination on a served server, run under pico-kafka: its [`Store`] writes
/// the `[sink]` section ([`Store::sink_section`]), and one topic's rows are read through the
/// same settle and paged read-back as the conformance judge's (every row the destination
/// holds, not a deduplicated view).
pub struct ServedRuntime<St: Store>(ServedDestination<St>);

impl<St: Store> ServedRuntime<St> {
    /// Runs `destination` under pico-kafka.
    pub fn new(destination: ServedDestination<St>) -> Self {
        Self(destination)
    }
}

#[async_trait]
impl<St: Store> RuntimeDestination for ServedRuntime<St> {
    async fn info(&self) -> ServerInfo {
        self.0.info.clone()
    }

    fn upstream(&self) -> Result<String, String> {
        Ok(self.0.served.server().url().to_owned())
    }

    async fn sink_toml(&self, isolation: &str, via: SocketAddr) -> Result<String, String> {
        self.0
            .store
            .sink_section(&self.0.served, isolation, via)
            .await
    }

    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String> {
        self.0.settle(isolation).await?;
        let mut rows = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = self.0.read_page(isolation, cursor.as_deref()).await?;
            rows.extend(page.back.rows.into_iter().filter(|r| &*r.id.topic == topic));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(Stored {
            rows,
            physical: None,
            note: None,
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        Box::new(self.0).shutdown().await
    }
}

/// `config` as the `[sink]` section of a pipeline file naming `kind`: the sink crate's own
/// configuration as it serializes, which pico-kafka reads back with the same type.
pub(crate) fn sink_section<C: Serialize>(kind: &str, config: &C) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a, C> {
        sink: Section<'a, C>,
    }
    #[derive(Serialize)]
    struct Section<'a, C> {
        kind: &'a str,
        #[serde(flatten)]
        config: &'a C,
    }
    toml::to_string(&File {
        sink: Section { kind, config },
    })
    .map_err(|e| format!("the {kind} configuration as TOML: {e}"))
}

/// `s` as a TOML basic string.
pub(crate) fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An isolation's table name (`crash-kill-1f2e` → `crash_kill_1f2e`).
pub(crate) fn table_of(isolation: &str) -> String {
    isolation.replace('-', "_")
}
