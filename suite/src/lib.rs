//! The project's own conformance targets: one per sink (and destination flavour), the servers
//! they run against (external, docker, native, embedded), the `pico-conformance` CLI that
//! generates the duplicate-behaviour table, and `pico-bench`.
//!
//! Everything here is built on the public API of [`pico_conformance`], exactly as a user's own
//! sink would be: a target is a [`pico_conformance::target::Target`] whose destinations
//! implement [`pico_conformance::target::Destination`]. Adding a sink means adding its crate and
//! a folder under `destinations/` (its target, and its server when it has a start recipe of its
//! own), and one line to [`destinations::targets`].

pub mod bench;
pub mod code_version;
pub mod crash;
pub mod destinations;
pub mod images;
pub mod measure;
pub mod provide;
pub mod render;
pub mod serve;
