//! The server kinds behind one [`Server`] trait, and [`Served`], the one holder of a started
//! server.
//!
//! A destination's server is found or started by one of three kinds: external (the user's, named
//! by `PICO_<SINK>_URL`), docker (a pinned image through a Docker-compatible engine, [`docker`])
//! or native (a binary on this machine, [`native`]); [`hosted::Hosted`] holds whichever of them
//! served a URL-addressed destination. Imports run one way: [`native`] and [`docker`] import
//! [`server`] and nothing of each other, [`hosted`] picks between them, [`served`] holds any
//! [`Server`]. [`reaper`] stops every process started here when the suite ends or is
//! interrupted. Two servers are shared rather than owned by one destination: [`s3`], the
//! object store the s3, delta-s3 and iceberg-s3 destinations and the soak write into, and
//! [`kafka`], the broker pico-kafka runs against in the crash suite and the end-to-end benchmark. See `docs/architecture.md`.

pub mod docker;
pub mod hosted;
pub mod iggy;
pub mod kafka;
pub mod native;
pub mod nats;
pub mod prometheus;
pub mod reaper;
pub mod s3;
pub mod served;
pub mod server;

pub use served::{Served, ServedDestination, Store};
pub use server::Server;
