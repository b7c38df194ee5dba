//! A NATS JetStream sink whose replays the stream itself drops, and whose `consume` returns only
//! once the stream acknowledged every record.
//!
//! Every record is published to one subject with the header `Nats-Msg-Id` =
//! [`pico_sink::identity::Scope::nats_message_id`] (the identity `[ns/]topic:partition:offset`,
//! `%`-escaped outside printable ASCII). JetStream remembers the ids it stored for the stream's
//! *duplicate window* (2 minutes unless the stream says otherwise) and acknowledges a message
//! whose id it saw within the window as a duplicate, without storing it again. So any replay
//! inside the window — the same batch, re-batched, a lost acknowledgement, a second writer —
//! leaves one message per record, and the acknowledgement tells the sink which records were
//! already stored (`already_present`). A replay **after** the window is stored again: the
//! window is this sink's replay horizon; size it above the longest time a batch can take to
//! come back (the server keeps every id of the window in memory).
//!
//! The message is the record's value, byte for byte; headers carry the rest: `Pico-Topic`,
//! `Pico-Partition`, `Pico-Offset`, `Pico-Key`, `Pico-Ts` and the record's own headers (values
//! `%`-escaped outside printable ASCII, [`header_text`]).
//!
//! * A record JetStream cannot carry is rejected with its offset and reason: larger than the
//!   server's `max_payload`, or a header whose name is not a NATS header token (or is
//!   `Nats-*`/`Pico-*`).
//! * A connection lost, an acknowledgement that did not come within `ack_timeout`, an answer
//!   such as "insufficient resources": `Retryable` — the batch comes again and what was stored
//!   is dropped as a duplicate.
//! * A stream that does not exist (unless `create_stream`), a subject another stream captures,
//!   a URL that does not parse: `Fatal`, saying what to change. The client connects in the
//!   background and keeps reconnecting, so a server that does not answer — down, or refusing
//!   the credentials — is `Retryable`, with what to check if it lasts.
//!
//! Publishes are pipelined: up to 256 messages are in flight before their acknowledgements are
//! awaited, in order.

mod config;
mod message;
mod sink;

/// The NATS client the sink is built on, so a caller's own client has the same version.
pub use async_nats;

pub use config::JetStreamSinkConfig;
pub use message::{KEY, OFFSET, PARTITION, TIMESTAMP, TOPIC, header_bytes, header_text};
pub use sink::JetStreamSink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
