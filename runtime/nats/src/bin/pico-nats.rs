//! `pico-nats run PIPELINE.toml`: consume a NATS JetStream stream into a pico sink, at least
//! once. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline file, no server, or a durable
//! whose settings would lose messages; 2 a batch failed every attempt; 3 fatal sink error; 4
//! refused records without a dead-letter subject. Run it under a supervisor, which restarts
//! it: it resumes from what the durable acknowledged.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pico_nats::{Exit, Pipeline};
use pico_runtime::assemble::build_sink;
use pico_runtime::signals::shutdown_signal;
use tracing::{error, info};

#[derive(Parser)]
#[command(
    name = "pico-nats",
    version,
    about = "Run a pico sink under a NATS JetStream durable consumer"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline until SIGTERM/SIGINT (then drain and acknowledge) or an error.
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
    if let Err(e) = pico_runtime::logging::init(&pipeline.log) {
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
            "ok: {} sink {:?}, durable {}",
            pipeline.sink.kind(),
            pipeline.sink,
            pipeline.jetstream.durable
        );
        return ExitCode::SUCCESS;
    }
    match runtime.block_on(pico_nats::run(&pipeline, sink, shutdown_signal())) {
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
