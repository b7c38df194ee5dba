//! The command line every runtime binary shares: `run PIPELINE.toml` until SIGTERM/SIGINT, or
//! `check PIPELINE.toml`. Exit code 1 when the file, the log or the sink cannot be set up;
//! otherwise the run's own ([`Exit::code`]).

use std::fmt::Display;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use pico_sink::Sink;
use tracing::{error, info};

use crate::Exit;
use crate::assemble::build_sink;
use crate::pipeline_file::{self, PipelineFile};

#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline until SIGTERM/SIGINT (then drain and confirm) or an error.
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

/// A runtime binary: its name and what it does, in one line, for `--help`.
pub struct Binary {
    /// The binary's name (`pico-kafka`).
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
}

/// Parses the command line, reads the pipeline file, starts the log and builds the sink; then
/// `check` answers and exits, and `run` hands the pipeline and the sink to `run` and exits with
/// the run's code.
pub fn main<P, E>(
    binary: Binary,
    run: impl AsyncFnOnce(&P, Arc<dyn Sink>) -> Result<Exit, E>,
) -> ExitCode
where
    P: PipelineFile,
    E: Display,
{
    let command = Cli::command().name(binary.name).about(binary.about);
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let (path, check_only) = match cli.command {
        Command::Run { pipeline } => (pipeline, false),
        Command::Check { pipeline } => (pipeline, true),
    };
    let pipeline: P = match pipeline_file::read(&path) {
        Ok(p) => p,
        Err(e) => return failed(e),
    };
    // The file says how to log (`[log]`), so the log starts once it is read.
    if let Err(e) = crate::logging::init(pipeline.log()) {
        return failed(e);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return failed(format!("starting the runtime: {e}")),
    };
    let sink = match runtime.block_on(build_sink(pipeline.sink(), pipeline.chaos())) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    if check_only {
        println!(
            "ok: {} sink {:?}, {}",
            pipeline.sink().kind(),
            pipeline.sink(),
            pipeline.consumer()
        );
        return ExitCode::SUCCESS;
    }
    // `run` opens the sink first, riding out a destination that is down at start.
    match runtime.block_on(run(&pipeline, sink)) {
        Ok(exit) => {
            match &exit {
                Exit::Drained => info!("stopped"),
                other => error!(?other, "stopped with an error"),
            }
            ExitCode::from(exit.code() as u8)
        }
        Err(e) => failed(e),
    }
}

/// Says why on standard error; exit code 1.
fn failed(why: impl Display) -> ExitCode {
    eprintln!("error: {why}");
    ExitCode::from(1)
}
