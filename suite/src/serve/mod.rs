//! The server kinds behind one [`Server`] trait, and [`Served`], the one holder of a started
//! server.
//!
//! A destination's server is found or started by one of three kinds: external (the user's, named
//! by `PICO_<SINK>_URL`), docker (a pinned image through a Docker-compatible engine, [`docker`])
//! or native (a binary on this machine, [`native`]); [`hosted::Hosted`] holds whichever of them
//! served a URL-addressed destination. Imports run one way: [`native`] and [`docker`] import
//! [`server`] and nothing of each other, [`hosted`] picks between them, [`served`] holds any
//! [`Server`]. [`reaper`] stops every process started here when the suite ends or is
//! interrupted. See `docs/architecture.md`.

pub mod docker;
pub mod hosted;
pub mod native;
pub mod reaper;
pub mod served;
pub mod server;

pub use served::{Served, ServedDestination, Store};
pub use server::Server;
