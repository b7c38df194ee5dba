//! An S3 sink that never writes a second object for a batch it already wrote.
//!
//! Each batch becomes one object whose key is a function of its identity alone:
//! `{prefix}/[{namespace}/]{topic-segment}/{partition}/{first:020}-{last:020}.jsonl[.gz]`
//! (the topic segment is the injective S3 encoding of `pico-identity`; zero-padded offsets make
//! LIST order offset order). Objects hold JSON lines of [`pico_sink::kit::Envelope`]s, so every
//! record carries its identity.
//!
//! * **Conditional create.** `PutObject` with `If-None-Match: *`: a replay of the same batch (a
//!   retry after a lost response, a restarted runtime) gets `412 Precondition Failed`, which
//!   means "already written" — success, nothing new stored. A `409` (a concurrent conditional
//!   write of the same key) is retried.
//! * **Watermark.** Before each write the sink LISTs the partition's prefix (everything on the
//!   first batch, only keys after the last one it knows afterwards) and takes the highest `last`
//!   offset found; only records above it are written. A replay with other boundaries
//!   (`[0..99]` then `[50..149]`) writes just the new tail `[100..149]`.
//!
//! The watermark relies on the runtime committing offsets only after the write: every writer of
//! a partition resumes from the committed offset, so nothing below the highest `last` is missing.
//!
//! What it does not cover: two writers of one partition at the same moment (a zombie during a
//! rebalance) can each LIST before the other's PUT and write overlapping objects; S3 has no
//! atomic "put if the prefix's watermark is still X". The conformance suite measures it.
//!
//! Endpoint, region, path-style addressing and credentials are configurable for S3-compatible
//! stores (SeaweedFS, MinIO, R2, ...). Static credentials (or `AWS_ACCESS_KEY_ID` /
//! `AWS_SECRET_ACCESS_KEY`) are read directly; for the full AWS credential chain build a client
//! with `aws-config` and pass it to [`S3Sink::with_client`]. The SDK's own retries are off: the
//! runtime's driver owns retries.

mod config;
mod errors;
mod sink;

/// The SDK the sink is built on, so a caller's own client has the same version.
pub use aws_sdk_s3;

pub use config::{S3SinkConfig, extension};
pub use sink::S3Sink;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
