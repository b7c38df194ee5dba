//! The JetStream sink against a real nats-server with JetStream, started natively
//! (`nats-server`, `PICO_NATS_SERVER_BIN` or on `PATH`). Each isolation is a stream of its own
//! capturing `pico.<isolation>`, created by the sink with a 30 s duplicate window; the fault
//! proxy sits on the client connection and cuts the answers to a publish. Reading back goes
//! around the proxy and takes every message the stream physically holds.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use pico_sink::identity::Scope;
use pico_sink_jetstream::async_nats::jetstream::{self, consumer};
use pico_sink_jetstream::{JetStreamSink, JetStreamSinkConfig, async_nats};

use crate::destinations::runtime::sink_section;
use crate::serve::nats::NatsServer;
use crate::serve::{Served, ServedDestination, Store};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{
    Destination, PayloadForm, ReadRow, Readback, SinkUnderTest, Target, payload_checksum,
};

/// The duplicate window of the streams the suite's sinks create: long enough for every
/// redelivery of the other scenarios, short enough for `replay-after-horizon` to wait it out.
const WINDOW: Duration = Duration::from_secs(30);

/// The JetStream sink.
pub struct JetStreamTarget;

#[async_trait]
impl Target for JetStreamTarget {
    fn name(&self) -> &'static str {
        "jetstream"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-jetstream"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Native]
    }
    async fn provision(&self, provider: ProviderKind) -> Result<Box<dyn Destination>, String> {
        if provider != ProviderKind::Native {
            return Err(format!("{provider}: only a native nats-server is started"));
        }
        Ok(Box::new(serve().await?))
    }
}

/// A nats-server with JetStream started on this machine.
pub(super) async fn serve() -> Result<ServedDestination<JetStream>, String> {
    let server = NatsServer::start().await?;
    Ok(ServedDestination {
        info: server.info(),
        served: Served::new(server),
        form: PayloadForm::Exact,
        store: JetStream,
    })
}

/// JetStream as the sink and the suite see it.
pub(super) struct JetStream;

impl JetStream {
    /// The sink's configuration for `isolation` at `url`: a stream of its own, created by the
    /// sink with the suite's window.
    fn config(url: String, isolation: &str) -> JetStreamSinkConfig {
        let mut config = JetStreamSinkConfig::new(url, isolation, format!("pico.{isolation}"));
        config.create_stream = true;
        config.duplicate_window = WINDOW;
        config.ack_timeout = Duration::from_secs(2);
        config
    }
}

#[async_trait]
impl Store for JetStream {
    type Server = NatsServer;

    /// A publish to the isolation's subject (with headers: `HPUB`), not a JetStream API call.
    fn lost_ack_trigger(&self) -> Option<&'static [u8]> {
        Some(b"HPUB pico.")
    }

    /// Every publish has its own acknowledgement.
    fn commits_record_by_record(&self) -> bool {
        true
    }

    async fn sink(
        &self,
        served: &Served<NatsServer>,
        isolation: &str,
    ) -> Result<SinkUnderTest, String> {
        let (url, proxy) = served.proxied("nats").await?;
        let sink = JetStreamSink::connect(Self::config(url, isolation))
            .await
            .map_err(|e| e.to_string())?;
        Ok(SinkUnderTest {
            sink: Arc::new(sink),
            faults: Some(proxy),
        })
    }

    async fn sink_section(
        &self,
        _served: &Served<NatsServer>,
        isolation: &str,
        via: std::net::SocketAddr,
    ) -> Result<String, String> {
        sink_section(
            "jetstream",
            &Self::config(format!("nats://{via}"), isolation),
        )
    }

    /// Waits out the duplicate window: the stream then forgets every id it saw.
    async fn pass_horizon(&self, _: &Served<NatsServer>, _: &str) -> Result<Upkeep, String> {
        let waited = WINDOW + Duration::from_secs(2);
        tokio::time::sleep(waited).await;
        Ok(Upkeep::of(Horizon::Duration {
            seconds: WINDOW.as_secs(),
            of: "message ids in the stream's duplicate window".into(),
        })
        .did("seconds waited past the duplicate window", waited.as_secs()))
    }

    async fn read_back(
        &self,
        served: &Served<NatsServer>,
        isolation: &str,
    ) -> Result<Readback, String> {
        let client = async_nats::connect(served.server().url.as_str())
            .await
            .map_err(|e| e.to_string())?;
        let js = jetstream::new(client);
        let Ok(mut stream) = js.get_stream(isolation).await else {
            return Ok(Readback::of_rows(Vec::new()));
        };
        let held = stream
            .info()
            .await
            .map_err(|e| e.to_string())?
            .state
            .messages;
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut messages = consumer.messages().await.map_err(|e| e.to_string())?;
        let mut rows = Vec::new();
        while (rows.len() as u64) < held {
            let message = tokio::time::timeout(Duration::from_secs(30), messages.next())
                .await
                .map_err(|_| {
                    format!(
                        "stream {isolation}: {} of {held} messages read in 30 s",
                        rows.len()
                    )
                })?
                .ok_or_else(|| format!("stream {isolation} ended after {} messages", rows.len()))?
                .map_err(|e| e.to_string())?;
            rows.push(row(&message)?);
        }
        let mut back = Readback::of_rows(rows);
        back.physical_rows = Some(held);
        Ok(back)
    }
}

/// A stored message back into a row: the identity from `Nats-Msg-Id`, the payload as stored.
fn row(message: &jetstream::Message) -> Result<ReadRow, String> {
    let msg_id = message
        .headers
        .as_ref()
        .and_then(|h| h.get(async_nats::header::NATS_MESSAGE_ID))
        .map(|v| v.as_str().to_owned())
        .ok_or_else(|| format!("a message without Nats-Msg-Id on {}", message.subject))?;
    let id = Scope::default()
        .parse_nats_message_id(&msg_id)
        .ok_or_else(|| format!("Nats-Msg-Id {msg_id:?} is not an identity"))?;
    let value = message.payload.clone();
    Ok(ReadRow {
        id,
        checksum: payload_checksum(PayloadForm::Exact, &value),
        value,
    })
}
