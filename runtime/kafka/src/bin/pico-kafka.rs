//! `pico-kafka run PIPELINE.toml`: consume a Kafka-protocol topic into a pico sink, at least
//! once. Exit codes: 0 drained on SIGTERM/SIGINT; 1 bad pipeline file or no broker; 2 a batch
//! failed every attempt; 3 fatal sink error; 4 refused records without a dead-letter topic.
//! A panic aborts the process (as a plugin panic aborts a runtime): run it under a
//! supervisor, which restarts it from the committed offsets.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use pico_kafka::chaos::{HoldAfterWrite, PanicOnce};
use pico_kafka::{Exit, Pipeline};
use pico_sink::Sink;
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

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    info!("signal received");
}

async fn build(pipeline: &Pipeline) -> Result<Arc<dyn Sink>, String> {
    let chaos = &pipeline.chaos;
    let sink = pipeline.sink.build().await.map_err(|e| e.to_string())?;
    #[cfg(feature = "mutants")]
    if let Some(mutant) = chaos.mutant {
        tracing::warn!(
            ?mutant,
            "a mutant runtime: it breaks the at-least-once contract on purpose"
        );
    }
    #[cfg(feature = "mutants")]
    let sink: Arc<dyn Sink> = match chaos.mutant {
        Some(pico_kafka::mutants::Mutant::AckBeforeDurable) => {
            Arc::new(pico_kafka::mutants::AckBeforeDurable::new(sink))
        }
        Some(pico_kafka::mutants::Mutant::ReplaysAsWritten) => {
            Arc::new(pico_kafka::mutants::ReplaysAsWritten::new(sink))
        }
        _ => sink,
    };
    let sink: Arc<dyn Sink> = match &chaos.written_file {
        Some(file) => Arc::new(HoldAfterWrite::new(
            sink,
            file,
            std::time::Duration::from_millis(chaos.hold_after_write_ms),
        )),
        None => sink,
    };
    Ok(match &chaos.panic_once_file {
        Some(marker) => Arc::new(PanicOnce::new(
            sink,
            marker,
            std::time::Duration::from_millis(chaos.panic_hold_ms),
        )),
        None => sink,
    })
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
    let sink = match runtime.block_on(build(&pipeline)) {
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
