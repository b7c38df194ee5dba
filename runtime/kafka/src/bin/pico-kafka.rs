//! `pico-kafka run PIPELINE.toml`: consume a Kafka-protocol topic into a pico sink, at least
//! once. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline file or no broker; 2 a batch
//! failed every attempt; 3 fatal sink error; 4 refused records without a dead-letter topic.
//! A sink's panic inside a delivery is caught by its partition's worker, which ends the run
//! with exit code 2 naming the partition and the panic; no panic hook aborts the process (a
//! library may catch a panic on purpose: delta-rs catches the one object_store raises when a
//! failed multipart upload is aborted, and returns the upload's error). Run it under a
//! supervisor, which restarts it from the committed offsets.

use std::process::ExitCode;

use pico_kafka::Pipeline;
use pico_runtime::cli::{self, Binary};
use pico_runtime::signals::shutdown_signal;

fn main() -> ExitCode {
    let binary = Binary {
        name: "pico-kafka",
        about: "Run a pico sink under a Kafka consumer group",
    };
    cli::main(binary, async |pipeline: &Pipeline, sink| {
        pico_kafka::run(pipeline, sink, shutdown_signal()).await
    })
}
