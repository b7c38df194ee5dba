//! The durable pull consumer the runtime reads through, and why each setting is what it is.
//!
//! * **Explicit acknowledgements**, sent only for records the sink confirmed. JetStream's
//!   `AckPolicy::All` (one ack covering every earlier message) lets one process acknowledge
//!   what another process sharing the durable still holds. Measured (`tests/jetstream.rs`,
//!   nats-server 2.9.10, which accepts `All` on a pull consumer): process A holds 1..=3, B
//!   acknowledges 4..=6, A dies — with `All` none of 1..=3 is delivered again (3 lost), with
//!   explicit acks all three are.
//! * **`max_deliver` unlimited.** A message delivered `max_deliver` times is no longer
//!   delivered: for a sink whose destination is down longer than that, a bounded value would
//!   drop messages. The runtime never gives a message up; refused records go to the dead-letter
//!   subject instead.
//! * **`ack_wait`** of 30 s. The server does not notice that a process died: what it held is
//!   delivered again only once `ack_wait` has passed (measured: a new connection got the two
//!   unacknowledged messages after 1 s with `ack_wait` 1 s), so `ack_wait` is how long a
//!   restart waits for its in-flight messages. A write that takes longer sends in-progress
//!   acknowledgements (`+WPI`), which restart the server's clock (measured: eight of them held
//!   a message 3 s with `ack_wait` 1 s), so a slow sink is not handed the same message again
//!   while it still writes it.
//! * **`max_ack_pending`** bounds what the server hands out unacknowledged: the consumer's own
//!   back-pressure.
//! * **Deliver all**: a new durable starts at the stream's first message.

use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
use pico_sink::identity::jetstream::JetStreamSource;

/// How the runtime's durable consumer is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerSettings {
    /// The durable consumer's name: the server keeps its position under it.
    pub durable: String,
    /// How long the server waits for an acknowledgement before it delivers a message again.
    pub ack_wait: Duration,
    /// The most messages handed out and not acknowledged.
    pub max_ack_pending: i64,
}

impl ConsumerSettings {
    /// `durable` with a 30 s `ack_wait` and 20 000 messages pending at most.
    pub fn new(durable: impl Into<String>) -> Self {
        Self {
            durable: durable.into(),
            ack_wait: Duration::from_secs(30),
            max_ack_pending: 20_000,
        }
    }
}

/// The pull consumer's configuration for `source`: durable, explicit acks, never giving a
/// message up, delivering the whole stream (or the filter's part of it) from its start.
pub fn pull_config(source: &JetStreamSource, settings: &ConsumerSettings) -> pull::Config {
    pull::Config {
        durable_name: Some(settings.durable.clone()),
        filter_subject: source.filter().unwrap_or_default().to_owned(),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: settings.ack_wait,
        max_deliver: -1,
        max_ack_pending: settings.max_ack_pending,
        ..pull::Config::default()
    }
}
