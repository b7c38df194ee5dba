//! The consumer group the runtime is built on: a member that reads the partitions the group
//! assigns it from positions it keeps itself, and stores a partition's offset only once the
//! sink confirmed everything up to it.
//!
//! Three facts of the Iggy server (0.9.0-edge.5, measured in `tests/group.rs`) shape it:
//!
//! * a poll with the `next` strategy starts after the group's **stored** offset, so a member
//!   that stores only after its sink confirmed would be handed the same messages again on every
//!   poll: the member polls by offset, from a position per partition it advances itself, and
//!   starts a partition at the stored offset + 1;
//! * a poll with `auto_commit` stores the offset when the messages are served — before any
//!   sink has written them; a member killed then loses them. The member never asks for it;
//! * the server **fences** both: it refuses a poll of a partition the member does not own, and
//!   a store of an offset of a partition the member neither owns nor is handing over. What a
//!   member stores is always the end of what its sink wrote, so a store, accepted or fenced,
//!   never moves the group past a message not written.
//!
//! And one fact of its client (`iggy` 0.11.0-edge.4, measured in `tests/runtime.rs`): when the
//! server goes away under requests in flight, the client's own reconnection can stall for good,
//! every later request failing with `Disconnected` or never answered. So every request here is
//! given [`ANSWER_WITHIN`], and a member whose connection failed [`GroupMember::reconnect`]s
//! with a new client.

use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use iggy::prelude::Client;
use iggy::prelude::{
    Consumer, ConsumerGroupClient, ConsumerOffsetClient, Identifier, IggyError, IggyMessage,
    MessageClient, Partitioning, PollingStrategy, TcpClient, TopicClient,
};
use iggy_binary_protocol::codes::SYNC_CONSUMER_GROUP_CODE;
use iggy_binary_protocol::requests::consumer_groups::SyncConsumerGroupRequest;
use iggy_binary_protocol::responses::consumer_groups::SyncConsumerGroupResponse;
use iggy_binary_protocol::{WireDecode, WireEncode, WireIdentifier};
use iggy_common::{BinaryTransport, RESYNC_REQUIRED_PARTITION_SENTINEL};
use pico_sink::identity::iggy::IggySource;

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    /// The connection string is not one the Iggy client takes.
    #[error("iggy url {url:?}: {source}; write it as iggy://USER:PASSWORD@HOST:PORT")]
    Url {
        /// The connection string, its password hidden.
        url: String,
        /// What the client said.
        source: IggyError,
    },
    /// The server refused or failed a request.
    #[error("iggy: {what}: {source}")]
    Server {
        /// What was asked.
        what: String,
        /// What the server or client said.
        source: IggyError,
    },
    /// A name the wire protocol cannot carry.
    #[error("iggy: {0}")]
    Name(String),
    /// The server did not answer in time (it is down, or the client's connection stalled).
    #[error("iggy: {what}: no answer within {after:?}")]
    Unanswered {
        /// What was asked.
        what: String,
        /// How long the member waited.
        after: Duration,
    },
}

impl ConsumerError {
    /// Whether the server refused to create a consumer group because it exists: members
    /// started at once race to create it, and each may join it.
    fn is_already_created(&self) -> bool {
        matches!(
            self,
            Self::Server {
                source: IggyError::ConsumerGroupNameAlreadyExists(..),
                ..
            }
        )
    }

    /// Whether the connection failed (the server is unreachable, or the client lost its
    /// connection): a new connection may mend it, unlike a refusal.
    pub fn is_connection(&self) -> bool {
        match self {
            Self::Unanswered { .. } => true,
            Self::Server { source, .. } => matches!(
                source,
                IggyError::Disconnected
                    | IggyError::NotConnected
                    | IggyError::CannotEstablishConnection
                    | IggyError::TcpError
                    | IggyError::StaleClient
                    | IggyError::Unauthenticated
            ),
            Self::Url { .. } | Self::Name(_) => false,
        }
    }
}

/// How long a member waits for the server's answer to one request.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The partitions the group assigns this member, in one generation of the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Rises with each rebalance.
    pub generation: u64,
    /// The partitions this member may read.
    pub partitions: Vec<u32>,
}

/// What a poll of one partition got.
#[derive(Debug)]
pub enum Polled {
    /// Messages from the asked offset on (none when the partition has nothing beyond it).
    Messages {
        /// The messages, in offset order.
        messages: Vec<IggyMessage>,
        /// The partition's last offset when the server answered (its end, for the lag).
        end: u64,
    },
    /// The group took the partition from this member: re-read the assignment.
    NotOwned,
}

/// A member of a consumer group of one topic.
pub struct GroupMember {
    /// The connection string, for a new connection.
    url: String,
    /// The connection, replaced by [`Self::reconnect`].
    client: RwLock<Arc<TcpClient>>,
    source: IggySource,
    stream: Identifier,
    topic: Identifier,
    group: Identifier,
    group_name: String,
    consumer: Consumer,
}

impl GroupMember {
    /// Connects to `url` (`iggy://USER:PASSWORD@HOST:PORT`), signs in, creates the consumer
    /// group `group` on `source` if it does not exist, and joins it.
    pub async fn join(url: &str, source: &IggySource, group: &str) -> Result<Self, ConsumerError> {
        let client = connect(url).await?;
        let member = Self {
            url: url.to_owned(),
            stream: named(source.stream())?,
            topic: named(source.topic_name())?,
            group: named(group)?,
            consumer: Consumer::group(named(group)?),
            group_name: group.to_owned(),
            source: source.clone(),
            client: RwLock::new(Arc::new(client)),
        };
        let client = member.client();
        let existing = answer(
            || format!("reading consumer group {group}"),
            client.get_consumer_group(&member.stream, &member.topic, &member.group),
        )
        .await?;
        if existing.is_none() {
            let created = answer(
                || format!("creating consumer group {group}"),
                client.create_consumer_group(&member.stream, &member.topic, group),
            )
            .await;
            match created {
                Ok(_) => {}
                // Another member started at the same moment created it first.
                Err(e) if e.is_already_created() => {
                    tracing::debug!(group, "consumer group created by another member meanwhile");
                }
                Err(e) => return Err(e),
            }
        }
        answer(
            || format!("joining consumer group {group}"),
            client.join_consumer_group(&member.stream, &member.topic, &member.group),
        )
        .await?;
        Ok(member)
    }

    /// The connection now.
    fn client(&self) -> Arc<TcpClient> {
        self.client
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the connection with a new one that joins the group again: after the old one
    /// failed, the server counts this member as gone (its partitions go to the others, or come
    /// back to this member in the new generation). The old connection is closed aside.
    pub async fn reconnect(&self) -> Result<(), ConsumerError> {
        let fresh = connect(&self.url).await?;
        answer(
            || format!("joining consumer group {} again", self.group_name),
            fresh.join_consumer_group(&self.stream, &self.topic, &self.group),
        )
        .await?;
        let old = std::mem::replace(
            &mut *self.client.write().unwrap_or_else(PoisonError::into_inner),
            Arc::new(fresh),
        );
        tokio::spawn(async move {
            let _ = tokio::time::timeout(ANSWER_WITHIN, old.disconnect()).await;
        });
        Ok(())
    }

    /// The topic this member reads.
    pub fn source(&self) -> &IggySource {
        &self.source
    }

    /// The partitions the group assigns this member now (asked of the group's coordinator;
    /// a partition being handed over to another member is no longer among them).
    pub async fn assignment(&self) -> Result<Assignment, ConsumerError> {
        let wire = |name: &str| {
            WireIdentifier::named(name).map_err(|e| ConsumerError::Name(format!("{name:?}: {e:?}")))
        };
        let request = SyncConsumerGroupRequest {
            stream_id: wire(self.source.stream())?,
            topic_id: wire(self.source.topic_name())?,
            group_id: wire(&self.group_name)?,
        };
        let client = self.client();
        let reply = answer(
            || "reading this member's assignment".into(),
            client.send_raw_with_response(SYNC_CONSUMER_GROUP_CODE, request.to_bytes()),
        )
        .await?;
        if reply.is_empty() {
            // The coordinator answers every member, even one without partitions.
            return Err(server(
                "reading this member's assignment".into(),
                IggyError::ConsumerGroupMemberNotFound(0, self.group.clone(), self.topic.clone()),
            ));
        }
        let (reply, _) = SyncConsumerGroupResponse::decode(&reply).map_err(|e| {
            ConsumerError::Name(format!("an assignment that does not decode: {e:?}"))
        })?;
        let mut partitions = reply.partitions;
        partitions.sort_unstable();
        Ok(Assignment {
            generation: reply.generation,
            partitions,
        })
    }

    /// The offset the group stored for `partition`: the last one a member confirmed, `None`
    /// when nothing was stored.
    pub async fn stored(&self, partition: u32) -> Result<Option<u64>, ConsumerError> {
        let client = self.client();
        let info = answer(
            || format!("reading the stored offset of partition {partition}"),
            client.get_consumer_offset(&self.consumer, &self.stream, &self.topic, Some(partition)),
        )
        .await?;
        Ok(info.map(|i| i.stored_offset))
    }

    /// Up to `count` messages of `partition` from offset `from` on. Stores nothing.
    pub async fn poll(
        &self,
        partition: u32,
        from: u64,
        count: u32,
    ) -> Result<Polled, ConsumerError> {
        let client = self.client();
        let strategy = PollingStrategy::offset(from);
        let polled = answer(
            || format!("polling partition {partition} from {from}"),
            client.poll_messages(
                &self.stream,
                &self.topic,
                Some(partition),
                &self.consumer,
                &strategy,
                count,
                false,
            ),
        )
        .await;
        match polled {
            Ok(p)
                if p.messages.is_empty()
                    && p.partition_id == RESYNC_REQUIRED_PARTITION_SENTINEL =>
            {
                Ok(Polled::NotOwned)
            }
            Ok(p) => Ok(Polled::Messages {
                end: p.current_offset,
                messages: p.messages,
            }),
            Err(ConsumerError::Server {
                source: IggyError::ConsumerGroupPartitionNotOwned(..),
                ..
            }) => Ok(Polled::NotOwned),
            Err(e) => Err(e),
        }
    }

    /// Stores `offset` as the last offset of `partition` the group has written: the next
    /// member to own it starts after it.
    pub async fn store(&self, partition: u32, offset: u64) -> Result<(), ConsumerError> {
        let client = self.client();
        answer(
            || format!("storing offset {offset} of partition {partition}"),
            client.store_consumer_offset(
                &self.consumer,
                &self.stream,
                &self.topic,
                Some(partition),
                offset,
            ),
        )
        .await
    }

    /// Joins the group again: after the connection was lost and restored the server no longer
    /// counts this client as a member.
    pub async fn rejoin(&self) -> Result<(), ConsumerError> {
        let client = self.client();
        answer(
            || format!("joining consumer group {} again", self.group_name),
            client.join_consumer_group(&self.stream, &self.topic, &self.group),
        )
        .await
    }

    /// Whether the topic `target` exists.
    pub async fn topic_exists(&self, target: &IggySource) -> Result<bool, ConsumerError> {
        let stream = named(target.stream())?;
        let topic = named(target.topic_name())?;
        let client = self.client();
        let found = answer(
            || format!("reading topic {}", target.topic()),
            client.get_topic(&stream, &topic),
        )
        .await?;
        Ok(found.is_some())
    }

    /// Appends `messages` to `target`, spread over its partitions; returns once the server
    /// answered.
    pub async fn send(
        &self,
        target: &IggySource,
        messages: &mut [IggyMessage],
    ) -> Result<(), ConsumerError> {
        let stream = named(target.stream())?;
        let topic = named(target.topic_name())?;
        let client = self.client();
        answer(
            || format!("sending to {}", target.topic()),
            client.send_messages(&stream, &topic, &Partitioning::balanced(), messages),
        )
        .await?;
        Ok(())
    }

    /// Leaves the group and disconnects: the group hands this member's partitions to the
    /// others at once, from the offsets stored.
    pub async fn leave(&self) -> Result<(), ConsumerError> {
        let client = self.client();
        answer(
            || "leaving the consumer group".into(),
            client.leave_consumer_group(&self.stream, &self.topic, &self.group),
        )
        .await?;
        let _ = tokio::time::timeout(ANSWER_WITHIN, client.disconnect()).await;
        Ok(())
    }
}

/// An identifier by name (a name of digits too: never read as a numeric id).
fn named(name: &str) -> Result<Identifier, ConsumerError> {
    Identifier::named(name).map_err(|e| ConsumerError::Name(format!("{name:?}: {e}")))
}

fn server(what: String, source: IggyError) -> ConsumerError {
    ConsumerError::Server { what, source }
}

/// A client for `url`, connected (and signed in with the credentials `url` holds).
async fn connect(url: &str) -> Result<TcpClient, ConsumerError> {
    let client = TcpClient::from_connection_string(url).map_err(|source| ConsumerError::Url {
        url: hide_password(url),
        source,
    })?;
    answer(
        || format!("connecting to {}", hide_password(url)),
        client.connect(),
    )
    .await?;
    Ok(client)
}

/// The answer to `request`, named by `what` when it fails or does not come within
/// [`ANSWER_WITHIN`].
async fn answer<T>(
    what: impl FnOnce() -> String,
    request: impl Future<Output = Result<T, IggyError>>,
) -> Result<T, ConsumerError> {
    match tokio::time::timeout(ANSWER_WITHIN, request).await {
        Ok(answered) => answered.map_err(|e| server(what(), e)),
        Err(_) => Err(ConsumerError::Unanswered {
            what: what(),
            after: ANSWER_WITHIN,
        }),
    }
}

/// `iggy://user:secret@host:port` → `iggy://user:***@host:port`, for messages and logs.
pub fn hide_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::hide_password;

    #[test]
    fn a_password_is_hidden() {
        assert_eq!(
            hide_password("iggy://iggy:s3cr@t@127.0.0.1:8090"),
            "iggy://iggy:***@127.0.0.1:8090"
        );
        assert_eq!(
            hide_password("iggy://127.0.0.1:8090"),
            "iggy://127.0.0.1:8090"
        );
    }
}
