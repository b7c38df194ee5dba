//! Apache Iggy under `pico-iggy`: the case's topic in the stream [`STREAM`], its records sent
//! round-robin to explicit partitions, the group's stored offsets read by a client outside the
//! group, the dead letters polled from the dead-letter topic by offset.
//!
//! Iggy's answer to a send names no offsets, and the `n`-th message sent to a partition is not
//! always at offset `n`: in the broker case a send the server saved just before its crash was
//! sent again by the client once it reconnected, and the partition held that batch twice (seen
//! as 499 payloads unlike the ones counted at their offsets). So the offsets are read back from
//! the server once everything was acknowledged, every acknowledged payload must be among them,
//! and a payload held twice is two records.
//!
//! Iggy refuses a message with an empty payload: the stream's bad record of that kind
//! ([`BadKind::Empty`]) cannot exist on Iggy and is not sent (every other kind is).

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use iggy::prelude::{
    Client, Consumer, ConsumerGroupClient, ConsumerOffsetClient, Identifier, IggyMessage,
    MessageClient, Partitioning, PollingStrategy, StreamClient, SystemClient, TcpClient,
    TopicClient, TopicCreateOptions, UserClient,
};
use pico_conformance::target::{PayloadForm, payload_checksum};

use super::{CaseBroker, CaseNames, Pace};
use crate::crash::broker_fault::GroupView;
use crate::crash::dead_letters::{BadKind, BadRecords, Letter};
use crate::crash::{PARTITIONS, Produced, record_value};
use crate::serve::iggy::{PASSWORD, USER};

/// The stream every crash topic lives in.
pub const STREAM: &str = "pico-crash";

/// Messages read per poll when the suite reads a topic back.
const PER_POLL: u32 = 100;

/// An Iggy server at `url` (`iggy://USER:PASSWORD@HOST:PORT`), consumed by `pico-iggy`.
#[derive(Debug, Clone)]
pub struct IggySide {
    /// The server, as `pico-iggy`'s `[iggy] url` takes it.
    pub url: String,
}

/// `name` as an Iggy identifier.
fn named(name: &str) -> Result<Identifier, String> {
    Identifier::named(name).map_err(|e| format!("{name:?} is no Iggy name: {e}"))
}

impl IggySide {
    /// A client signed in as the suite's user.
    async fn client(&self) -> Result<TcpClient, String> {
        let failed = |e: iggy::prelude::IggyError| format!("Iggy at {}: {e}", self.url);
        let client = TcpClient::from_connection_string(&self.url).map_err(failed)?;
        client.connect().await.map_err(failed)?;
        client.login_user(USER, PASSWORD).await.map_err(failed)?;
        Ok(client)
    }

    /// Hands `each` message of `partition` of `topic`, from offset `from` to the end, polled
    /// by offset by a consumer outside every group.
    async fn read(
        &self,
        topic: &str,
        partition: u32,
        from: u64,
        mut each: impl FnMut(&IggyMessage) + Send,
    ) -> Result<(), String> {
        let client = self.client().await?;
        let reader = Consumer::new(named("pico-crash-reader")?);
        let (stream, topic_id) = (named(STREAM)?, named(topic)?);
        let mut next = from;
        loop {
            let polled = client
                .poll_messages(
                    &stream,
                    &topic_id,
                    Some(partition),
                    &reader,
                    &PollingStrategy::offset(next),
                    PER_POLL,
                    false,
                )
                .await
                .map_err(|e| e.to_string())?;
            let Some(last) = polled.messages.last() else {
                return Ok(());
            };
            next = last.header.offset + 1;
            polled.messages.iter().for_each(&mut each);
        }
    }

    /// The records of `topic` as the server holds them, each of which must be `acked` (per
    /// checksum, how many were sent and their kind if bad); fails when fewer of a payload are
    /// held than were acknowledged.
    async fn held_as_acknowledged(
        &self,
        topic: &str,
        acked: &BTreeMap<u64, (usize, Option<BadKind>)>,
    ) -> Result<(Produced, BadRecords), String> {
        let mut held = Produced::new();
        for partition in 0..PARTITIONS as u32 {
            held.extend(self.read_back(topic, partition, 0).await?);
        }
        let mut bad = BadRecords::new();
        let mut found: BTreeMap<u64, usize> = BTreeMap::new();
        for (at, sum) in &held {
            let Some((_, kind)) = acked.get(sum) else {
                return Err(format!(
                    "{STREAM}/{topic} holds a record never sent, at {at:?}"
                ));
            };
            *found.entry(*sum).or_default() += 1;
            if let Some(kind) = kind {
                bad.insert(*at, *kind);
            }
        }
        let sent: usize = acked.values().map(|(n, _)| n).sum();
        let missing: usize = acked
            .iter()
            .map(|(sum, (n, _))| n.saturating_sub(found.get(sum).copied().unwrap_or(0)))
            .sum();
        if missing > 0 {
            return Err(format!(
                "{STREAM}/{topic} does not hold {missing} of the {sent} records it acknowledged \
                 (read back once all were sent)"
            ));
        }
        if held.len() > sent {
            tracing::info!(
                topic,
                twice = held.len() - sent,
                "records the server holds twice: a send it saved was sent again"
            );
        }
        Ok((held, bad))
    }

    /// Creates the stream (once) and the case's `topic` with `partitions` partitions, and its
    /// dead-letter topic `dlq` with one; both save and fsync every message before the server
    /// acknowledges it. A topic created with the server's defaults keeps up to 1 024
    /// acknowledged messages of a partition in memory, and a crash of the server loses them
    /// (pico-iggy's `tests/group.rs` measures it): the broker case would count the broker's
    /// loss against the runtime.
    pub async fn create(&self, topic: &str, dlq: &str, partitions: u32) -> Result<(), String> {
        let client = self.client().await?;
        let stream = named(STREAM)?;
        let exists = client
            .get_stream(&stream)
            .await
            .map_err(|e| e.to_string())?
            .is_some();
        if !exists {
            client
                .create_stream(STREAM)
                .await
                .map_err(|e| format!("creating the stream {STREAM}: {e}"))?;
        }
        for (name, count) in [(topic, partitions), (dlq, 1)] {
            client
                .create_topic(
                    &stream,
                    name,
                    &TopicCreateOptions {
                        partitions_count: Some(count),
                        enforce_fsync: Some(true),
                        messages_required_to_save: Some(1),
                        ..TopicCreateOptions::default()
                    },
                )
                .await
                .map_err(|e| format!("creating the topic {STREAM}/{name}: {e}"))?;
        }
        Ok(())
    }
}

#[async_trait]
impl CaseBroker for IggySide {
    fn runtime(&self) -> &'static str {
        "pico-iggy"
    }

    fn metrics_prefix(&self) -> &'static str {
        "pico_iggy"
    }

    fn cannot_hold(&self) -> Option<&'static str> {
        Some(
            "Iggy refuses a message with an empty payload: the stream's empty bad records are \
             not produced",
        )
    }

    /// `stream/topic` ([`pico_sink::identity::iggy`]; neither name here holds a `/` or `%`).
    fn identity_topic(&self, topic: &str) -> String {
        format!("{STREAM}/{topic}")
    }

    fn sections(&self, names: CaseNames<'_>, _session: Duration) -> String {
        // Iggy drops a member when its connection closes (no session timeout to set): a
        // killed process's partitions move at once.
        let CaseNames {
            topic,
            group,
            dead_letters,
        } = names;
        format!(
            "[iggy]\nurl = \"{}\"\nstream = \"{STREAM}\"\ntopic = \"{topic}\"\ngroup = \"{group}\"\n\
             progress_secs = 5\n\n[dead_letter]\ntopic = \"{dead_letters}\"\n",
            self.url
        )
    }

    async fn produce(&self, topic: &str, mut pace: Pace) -> Result<(Produced, BadRecords), String> {
        let client = self.client().await?;
        let (stream, topic_id) = (named(STREAM)?, named(topic)?);
        let partitions = PARTITIONS as u32;
        // Per acknowledged payload's checksum, how many were sent and their kind if bad (some
        // bad payloads repeat: the not-UTF-8 ones differ in one digit).
        let mut acked: BTreeMap<u64, (usize, Option<BadKind>)> = BTreeMap::new();
        while let Some(chunk) = pace.next().await {
            let mut by_partition: BTreeMap<u32, Vec<(Vec<u8>, Option<BadKind>)>> = BTreeMap::new();
            for i in chunk {
                let (value, kind) = record_value(i);
                if kind == Some(BadKind::Empty) {
                    continue;
                }
                by_partition
                    .entry((i % u64::from(partitions)) as u32)
                    .or_default()
                    .push((value, kind));
            }
            for (partition, records) in by_partition {
                let mut messages = records
                    .iter()
                    .map(|(value, _)| {
                        IggyMessage::builder()
                            .payload(value.clone().into())
                            .build()
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                client
                    .send_messages(
                        &stream,
                        &topic_id,
                        &Partitioning::partition_id(partition),
                        &mut messages,
                    )
                    .await
                    .map_err(|e| format!("sending to {STREAM}/{topic} {partition}: {e}"))?;
                for (value, kind) in records {
                    let sent = acked
                        .entry(payload_checksum(PayloadForm::Json, &value))
                        .or_insert((0, kind));
                    sent.0 += 1;
                }
            }
        }
        self.held_as_acknowledged(topic, &acked).await
    }

    async fn committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, u64>, String> {
        let client = self.client().await?;
        let (stream, topic_id, group_id) = (named(STREAM)?, named(topic)?, named(group)?);
        let mut committed: BTreeMap<u32, u64> = (0..PARTITIONS as u32).map(|p| (p, 0)).collect();
        let exists = client
            .get_consumer_group(&stream, &topic_id, &group_id)
            .await
            .map_err(|e| format!("the consumer group {group}: {e}"))?
            .is_some();
        if !exists {
            // The runtime creates the group when its first member joins.
            return Ok(committed);
        }
        let consumer = Consumer::group(group_id);
        for partition in 0..PARTITIONS as u32 {
            let stored = client
                .get_consumer_offset(&consumer, &stream, &topic_id, Some(partition))
                .await
                .map_err(|e| format!("the stored offset of {group} on {partition}: {e}"))?;
            // The stored offset is the last one processed; the next to read follows it.
            committed.insert(partition, stored.map_or(0, |s| s.stored_offset + 1));
        }
        Ok(committed)
    }

    async fn letters(&self, topic: &str) -> Result<Vec<Letter>, String> {
        let mut letters = Vec::new();
        self.read(topic, 0, 0, |m| {
            let headers = m.user_headers_map().ok().flatten().unwrap_or_default();
            letters.push(Letter::of(
                i64::try_from(m.header.offset).unwrap_or(i64::MAX),
                headers.iter().map(|(k, v)| {
                    (
                        std::str::from_utf8(k.as_bytes()).unwrap_or_default(),
                        v.as_bytes(),
                    )
                }),
                &m.payload,
            ));
        })
        .await
        .map_err(|e| format!("reading the dead letters of {topic}: {e}"))?;
        Ok(letters)
    }

    /// Members from the group's details; connected members from every connected client's
    /// details, which name the groups (stream, topic and group ids) it is in — a member's id
    /// is not its client's on iggy-server 0.9.0-edge.5.
    async fn group_view(&self, group: &str, topic: &str) -> Result<Option<GroupView>, String> {
        let client = self.client().await?;
        let (stream, topic_id, group_id) = (named(STREAM)?, named(topic)?, named(group)?);
        let failed = |what: &str, e: iggy::prelude::IggyError| format!("{what}: {e}");
        let ids = (
            client
                .get_stream(&stream)
                .await
                .map_err(|e| failed("the stream", e))?
                .map(|s| s.id),
            client
                .get_topic(&stream, &topic_id)
                .await
                .map_err(|e| failed("the topic", e))?
                .map(|t| t.id),
            client
                .get_consumer_group(&stream, &topic_id, &group_id)
                .await
                .map_err(|e| failed("the consumer group", e))?,
        );
        let (Some(stream_id), Some(topic_id), Some(details)) = ids else {
            return Ok(None);
        };
        let mut connected = 0;
        for c in client
            .get_clients()
            .await
            .map_err(|e| failed("the clients", e))?
        {
            // A client gone between the two requests is in no group.
            let Some(info) = client
                .get_client(c.client_id)
                .await
                .map_err(|e| failed("a client", e))?
            else {
                continue;
            };
            connected += info
                .consumer_groups
                .iter()
                .filter(|g| {
                    (g.stream_id, g.topic_id, g.group_id) == (stream_id, topic_id, details.id)
                })
                .count();
        }
        Ok(Some(GroupView {
            members: details.members.into_iter().map(|m| m.partitions).collect(),
            connected,
        }))
    }

    async fn read_back(&self, topic: &str, partition: u32, from: u64) -> Result<Produced, String> {
        let mut held = Produced::new();
        self.read(topic, partition, from, |m| {
            held.insert(
                (partition, m.header.offset),
                payload_checksum(PayloadForm::Json, &m.payload),
            );
        })
        .await
        .map_err(|e| format!("reading {STREAM}/{topic} {partition} back: {e}"))?;
        Ok(held)
    }
}
