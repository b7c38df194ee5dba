//! What every pico runtime shares, whatever its broker.
//!
//! A runtime reads records from a broker, cuts each partition's records into batches
//! ([`pending::Pending`], by count, bytes and linger: [`settings::BatchLimits`]), delivers each
//! batch through the at-least-once [`pico_sink::driver::Driver`] into one sink, and confirms its
//! position to the broker only after the sink confirmed — never past the oldest record read
//! and not confirmed ([`tracker::Progress`]). This crate holds everything of that but the
//! broker's own consumer and position model:
//!
//! * the shared sections of a pipeline file ([`settings`]) and the `[sink]` section that builds
//!   any pico sink ([`sinks`]), wrapped by the crash suites' faults ([`assemble::build_sink`]);
//! * batch forming ([`pending`]), the in-flight tracker ([`tracker`]), the commit fence of a
//!   revoked partition ([`fence`]);
//! * the partitions' workers ([`worker`]): each delivers its partition's batches in order and
//!   confirms the position through the runtime's [`worker::Broker`];
//! * riding out a destination outage when opening the sink and when delivering a batch
//!   ([`outage`]), and how a run ends ([`Exit`]);
//! * the dead-letter headers that say where a refused record came from ([`dead_letter`]);
//! * what an operator sees: metrics under the runtime's own prefix ([`metrics`], [`metered`]),
//!   the `/metrics`, `/health` and `/ready` endpoint ([`endpoint`], [`health`]), logging
//!   ([`logging`]); and SIGTERM/SIGINT ([`signals`]);
//! * what a runtime does before it reads ([`start`]), its pipeline file read and checked
//!   ([`pipeline_file`]), and its binary's command line ([`cli`]).
//!
//! pico-kafka (the Kafka protocol) and pico-nats (NATS JetStream) are the runtimes built on it.

pub mod assemble;
pub mod chaos;
pub mod cli;
pub mod dead_letter;
pub mod endpoint;
pub mod exit;
pub mod fence;
pub mod health;
pub mod lock;
pub mod logging;
pub mod metered;
pub mod metrics;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod outage;
pub mod pending;
pub mod pipeline_file;
pub mod settings;
pub mod signals;
pub mod sinks;
pub mod start;
pub mod tracker;
pub mod worker;

pub use exit::Exit;
pub use lock::lock;
