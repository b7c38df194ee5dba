//! `pico-kafka run PIPELINE.toml`: consume a Kafka-protocol topic into a pico sink, at least
//! once. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline file or no broker; 2 a batch
//! failed every attempt; 3 fatal sink error; 4 refused records without a dead-letter topic.
//! A panic aborts the process (as a plugin panic aborts a runtime): run it under a
//! supervisor, which restarts it from the committed offsets.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pico_kafka::{Exit, Pipeline};
use pico_runtime::assemble::build_sink;
use pico_runtime::signals::shutdown_signal;
use tracing::{error, info};

#[derive(Parser)]
#[command(
    name = "pico-kafka",
    version,
    about = "Run a pico sink under a Kafka consumer group"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline until SIGTERM/SIGINT (then drain and commit) or an error.
    Run {
        /// The pipeline file (TOML).
        pipeline: PathBuf,
    },
    /// Check a pipeline file and build its sink, then exit.
    Check {
        /// The pipeline file (TOML).
        pipeline: PathBuf,
    },
}

fn main() -> ExitCode {
    // No panic hook that aborts: a library may catch a panic on purpose (delta-rs catches the
    // one object_store raises when a failed multipart upload is aborted, and returns the
    // upload's error), and a sink's panic inside a delivery is caught by its partition's
    // worker, which ends the run with `Exit::GaveUp` (exit code 2) naming the partition and
    // the panic; the supervisor restarts the process from the committed offsets.
    let cli = Cli::parse();
    let (path, check_only) = match cli.command {
        Command::Run { pipeline } => (pipeline, false),
        Command::Check { pipeline } => (pipeline, true),
    };
    let pipeline = match Pipeline::from_file(&path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    // The file says how to log (`[log]`), so the log starts once it is read.
    if let Err(e) = pico_kafka::logging::init(&pipeline.log) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let sink = match runtime.block_on(build_sink(&pipeline.sink, &pipeline.chaos)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if check_only {
        println!(
            "ok: {} sink {:?}, group {}",
            pipeline.sink.kind(),
            pipeline.sink,
            pipeline.kafka.group
        );
        return ExitCode::SUCCESS;
    }
    // `run` opens the sink first, riding out a destination that is down at start.
    let ended = runtime.block_on(pico_kafka::run(&pipeline, sink.clone(), shutdown_signal()));
    match ended {
        Ok(exit) => {
            match &exit {
                Exit::Drained => info!("stopped"),
                other => error!(?other, "stopped with an error"),
            }
            ExitCode::from(exit.code() as u8)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
