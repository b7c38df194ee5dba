//! `pico-nats run PIPELINE.toml`: consume a NATS JetStream stream into a pico sink, at least
//! once. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline file, no server, or a durable
//! whose settings would lose messages; 2 a batch failed every attempt; 3 fatal sink error; 4
//! refused records without a dead-letter subject. Run it under a supervisor, which restarts
//! it: it resumes from what the durable acknowledged.

use std::process::ExitCode;

use pico_nats::Pipeline;
use pico_runtime::cli::{self, Binary};
use pico_runtime::signals::shutdown_signal;

fn main() -> ExitCode {
    let binary = Binary {
        name: "pico-nats",
        about: "Run a pico sink under a NATS JetStream durable consumer",
    };
    cli::main(binary, async |pipeline: &Pipeline, sink| {
        pico_nats::run(pipeline, sink, shutdown_signal()).await
    })
}
