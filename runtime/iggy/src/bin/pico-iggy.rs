//! `pico-iggy run PIPELINE.toml`: consume an Apache Iggy topic into a pico sink, at least once,
//! as a member of a consumer group. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline
//! file, no server, or a missing dead-letter topic; 2 a batch failed every attempt; 3 fatal
//! sink error; 4 refused records without a dead-letter topic. Run it under a supervisor, which
//! restarts it: it resumes after the offsets the group stored.

use std::process::ExitCode;

use pico_iggy::Pipeline;
use pico_runtime::cli::{self, Binary};
use pico_runtime::signals::shutdown_signal;

fn main() -> ExitCode {
    let binary = Binary {
        name: "pico-iggy",
        about: "Run a pico sink under an Apache Iggy consumer group",
    };
    cli::main(binary, async |pipeline: &Pipeline, sink| {
        pico_iggy::run(pipeline, sink, shutdown_signal()).await
    })
}
