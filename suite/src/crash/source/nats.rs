//! NATS JetStream under `pico-nats`: the case's topic is a stream of that name capturing the
//! subject of that name, read by a durable pull consumer named after the case's group; the
//! dead letters go to a subject of their own, captured by a stream of the same name so they
//! can be read back.
//!
//! JetStream's identity ([`pico_sink::identity::jetstream`]): the topic is the stream's name
//! (no filter), the partition always 0, the offset the stream sequence the server answered the
//! publish with — the counter outside the runtime. The committed position is the consumer's
//! **ack floor** + 1: JetStream acknowledges each message on its own, and the floor is the
//! sequence below which every message was acknowledged, so a restarted consumer is handed
//! nothing below it again.
//!
//! Each record is published with a `Nats-Msg-Id` (the topic and the record's index): a publish
//! whose acknowledgement did not come (the broker case stops the server under the producer) is
//! sent again, and the stream's de-duplication (2 minutes by default) answers it with the
//! sequence it was first stored at instead of storing it twice.
//!
//! NATS refuses a message above the server's `max_payload` (1 MiB by default): the stream's
//! oversized bad records ([`BadKind::Oversized`], 1.5 MiB) cannot exist on JetStream and are not
//! published (every other kind is).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, Context, context::PublishAckFuture};
use async_trait::async_trait;
use bytes::Bytes;
use pico_conformance::target::{PayloadForm, payload_checksum};

use super::{CaseBroker, CaseNames, Handover, Pace};
use crate::crash::dead_letters::{BadKind, BadRecords, Letter};
use crate::crash::{Produced, record_value};

/// How long a publish is sent again while its acknowledgement does not come.
const PUBLISH_PATIENCE: Duration = Duration::from_secs(120);

/// The partition of every JetStream record ([`pico_sink::identity::jetstream::JETSTREAM_PARTITION`]).
const PARTITION: u32 = 0;

/// A nats-server with JetStream at `url` (`nats://HOST:PORT`), consumed by `pico-nats`.
#[derive(Debug, Clone)]
pub struct NatsSide {
    /// The server, as `pico-nats`'s `[jetstream] url` takes it.
    pub url: String,
}

impl NatsSide {
    /// A JetStream context on the server.
    async fn context(&self) -> Result<Context, String> {
        let client = async_nats::connect(&self.url)
            .await
            .map_err(|e| format!("NATS at {}: {e}", self.url))?;
        Ok(jetstream::new(client))
    }

    /// Creates the stream `topic` capturing the subject `topic`, and the stream `dlq`
    /// capturing the subject `dlq` (where the runtime sends its dead letters), both kept on
    /// file.
    pub async fn create(&self, topic: &str, dlq: &str) -> Result<(), String> {
        let js = self.context().await?;
        for name in [topic, dlq] {
            js.create_stream(jetstream::stream::Config {
                name: name.to_owned(),
                subjects: vec![name.to_owned()],
                storage: jetstream::stream::StorageType::File,
                ..jetstream::stream::Config::default()
            })
            .await
            .map_err(|e| format!("creating the stream {name}: {e}"))?;
        }
        Ok(())
    }
}

#[async_trait]
impl CaseBroker for NatsSide {
    fn runtime(&self) -> &'static str {
        "pico-nats"
    }

    fn metrics_prefix(&self) -> &'static str {
        "pico_nats"
    }

    /// One: a stream read by one durable consumer is one partition of the identity.
    fn partitions(&self) -> u32 {
        1
    }

    fn handover(&self) -> Handover {
        Handover::Takeover
    }

    fn cannot_hold(&self) -> Option<&'static str> {
        Some(
            "NATS refuses a message above its max_payload (1 MiB by default): the stream's \
             oversized bad records are not produced",
        )
    }

    fn sections(&self, names: CaseNames<'_>, session: Duration) -> String {
        // A message unacknowledged for the session comes back to another puller, and a
        // standby takes the durable's lease over a session after its holder died.
        let CaseNames {
            topic,
            group,
            dead_letters,
        } = names;
        format!(
            "[jetstream]\nurl = \"{}\"\nstream = \"{topic}\"\ndurable = \"{group}\"\n\
             ack_wait_ms = {ms}\nlease_ms = {ms}\nprogress_secs = 5\n\n[dead_letter]\n\
             subject = \"{dead_letters}\"\n",
            self.url,
            ms = session.as_millis()
        )
    }

    async fn produce(&self, topic: &str, mut pace: Pace) -> Result<(Produced, BadRecords), String> {
        let js = self.context().await?;
        let mut acked = Produced::new();
        let mut bad = BadRecords::new();
        while let Some(chunk) = pace.next().await {
            // A chunk published at once, then its acknowledgements awaited together; a record
            // whose publish or acknowledgement failed is sent again on its own. (Awaited one
            // after the other, the acknowledgements a broker restart lost each took the
            // client's 5 s timeout in turn: at full size the stream then grew by one message
            // every 5 s for minutes after the server was back.)
            let mut pending: Vec<(Option<PublishAckFuture>, u64, Bytes, Option<BadKind>)> =
                Vec::new();
            for i in chunk {
                let (value, kind) = record_value(i);
                if kind == Some(BadKind::Oversized) {
                    continue;
                }
                let value = Bytes::from(value);
                let ack = js
                    .publish_with_headers(topic.to_owned(), msg_id(topic, i), value.clone())
                    .await
                    .ok();
                pending.push((ack, i, value, kind));
            }
            let firsts = futures_util::future::join_all(pending.iter_mut().map(|p| {
                let ack = p.0.take();
                async move {
                    match ack {
                        Some(ack) => ack.await.ok().map(|a| a.sequence),
                        None => None,
                    }
                }
            }))
            .await;
            for ((_, i, value, kind), first) in pending.into_iter().zip(firsts) {
                let sum = payload_checksum(PayloadForm::Json, &value);
                let sequence = match first {
                    Some(sequence) => sequence,
                    None => publish_until_acked(&js, topic, i, value).await?,
                };
                let at = (PARTITION, sequence);
                acked.insert(at, sum);
                if let Some(kind) = kind {
                    bad.insert(at, kind);
                }
            }
        }
        Ok((acked, bad))
    }

    /// The durable consumer `group`'s ack floor + 1; 0 before the runtime created it.
    async fn committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, u64>, String> {
        let js = self.context().await?;
        let stream = js
            .get_stream(topic)
            .await
            .map_err(|e| format!("the stream {topic}: {e}"))?;
        let floor = match stream.consumer_info(group).await {
            Ok(info) => info.ack_floor.stream_sequence + 1,
            Err(e) if e.kind() == jetstream::context::ConsumerInfoErrorKind::NotFound => 0,
            Err(e) => return Err(format!("the consumer {group} of {topic}: {e}")),
        };
        Ok(BTreeMap::from([(PARTITION, floor)]))
    }

    /// Every message of the stream `topic`, by sequence.
    async fn letters(&self, topic: &str) -> Result<Vec<Letter>, String> {
        let js = self.context().await?;
        let mut stream = js
            .get_stream(topic)
            .await
            .map_err(|e| format!("the dead-letter stream {topic}: {e}"))?;
        let state = stream
            .info()
            .await
            .map_err(|e| format!("the dead-letter stream {topic}: {e}"))?
            .state
            .clone();
        let mut letters = Vec::new();
        for sequence in state.first_sequence.max(1)..=state.last_sequence {
            let m = stream
                .get_raw_message(sequence)
                .await
                .map_err(|e| format!("dead letter {sequence} of {topic}: {e}"))?;
            letters.push(Letter::of(
                i64::try_from(m.sequence).unwrap_or(i64::MAX),
                headers(&m.headers),
                &m.payload,
            ));
        }
        Ok(letters)
    }
}

/// The headers of record `i` of `topic`: its `Nats-Msg-Id`.
fn msg_id(topic: &str, i: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Msg-Id", format!("{topic}-{i}").as_str());
    headers
}

/// Publishes record `i` (`value`) to `topic` until the server acknowledges it, for up to
/// [`PUBLISH_PATIENCE`]: its stream sequence (the first one, for a publish stored before).
async fn publish_until_acked(
    js: &Context,
    topic: &str,
    i: u64,
    value: Bytes,
) -> Result<u64, String> {
    let started = Instant::now();
    loop {
        let attempt = async {
            js.publish_with_headers(topic.to_owned(), msg_id(topic, i), value.clone())
                .await?
                .await
        };
        match attempt.await {
            Ok(ack) => return Ok(ack.sequence),
            Err(e) if started.elapsed() < PUBLISH_PATIENCE => {
                tracing::debug!(topic, i, error = %e, "publish not acknowledged: sending it again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                return Err(format!(
                    "record {i} published to {topic} was not acknowledged within \
                     {PUBLISH_PATIENCE:?}: {e}"
                ));
            }
        }
    }
}

/// Each header's name and values, as a dead letter's headers are read.
fn headers(map: &HeaderMap) -> impl Iterator<Item = (&str, &[u8])> {
    map.iter().flat_map(|(name, values)| {
        values
            .iter()
            .map(move |v| (AsRef::<str>::as_ref(name), v.as_str().as_bytes()))
    })
}
