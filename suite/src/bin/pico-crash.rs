//! `pico-crash`: the runtime's crash suite against a real broker (tansu natively, Kafka through
//! docker, or `PICO_KAFKA_BROKERS`; with `--runtime iggy`, an Iggy server started natively) and
//! real destinations; writes docs/crash-suite.{json,md} (pico-iggy's: crash-suite-iggy.*).
//! Exits non-zero when a record is lost or a sink shows more duplicates than its bound.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use futures_util::StreamExt;
use futures_util::stream;
use pico_conformance::provider::ProviderKind;
use pico_conformance::runner::today;
use pico_suite::crash::controls::{Control, ControlResult};
use pico_suite::crash::destinations::{CrashDestination, CrashSink};
use pico_suite::crash::report::{CrashReport, file_stem, render};
use pico_suite::crash::shared_broker::SharedBroker;
use pico_suite::crash::supervisor::runtime_binary_named;
use pico_suite::crash::{Bench, Case, CaseResult, CaseSource, Size, run_case, run_control};
use pico_suite::serve::iggy::IggyServer;
use pico_suite::serve::kafka::Broker;
use pico_suite::serve::nats::NatsServer;

/// The runtime whose crash suite runs, and so its broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RuntimeArg {
    /// pico-kafka against a Kafka broker.
    Kafka,
    /// pico-iggy against an Iggy server (`PICO_IGGY_SERVER_BIN` or `iggy-server` on `PATH`).
    Iggy,
    /// pico-nats against a nats-server with JetStream (`PICO_NATS_SERVER_BIN` or
    /// `nats-server` on `PATH`). Its cases are being fitted to JetStream's model (#42).
    Nats,
}

impl RuntimeArg {
    fn binary(self) -> &'static str {
        match self {
            RuntimeArg::Kafka => "pico-kafka",
            RuntimeArg::Iggy => "pico-iggy",
            RuntimeArg::Nats => "pico-nats",
        }
    }
}

/// The broker a run provided.
enum Provided {
    Kafka(SharedBroker),
    Iggy(Box<SharedBroker<IggyServer>>),
    Nats(Box<SharedBroker<NatsServer>>),
}

impl Provided {
    fn source(&self) -> CaseSource<'_> {
        match self {
            Provided::Kafka(b) => CaseSource::Kafka(b),
            Provided::Iggy(s) => CaseSource::Iggy(s),
            Provided::Nats(s) => CaseSource::Nats(s),
        }
    }

    async fn stop(self) -> Result<(), String> {
        match self {
            Provided::Kafka(b) => b.into_inner().stop().await,
            Provided::Iggy(s) => s.into_inner().stop().await,
            Provided::Nats(s) => s.into_inner().stop().await,
        }
    }
}

#[derive(Parser)]
#[command(name = "pico-crash", version, about = "The runtime's crash suite")]
struct Cli {
    /// Only these sinks (repeatable): http-honouring, postgres, s3, clickhouse, delta-s3, and
    /// the smoke tests (the kill case with one effective kill): meilisearch, ….
    #[arg(long = "sink")]
    sinks: Vec<String>,
    /// Only these cases (repeatable): kill, panic, broker, destination, group, flaky.
    #[arg(long = "case")]
    cases: Vec<String>,
    /// The reduced size CI runs (4 000 records, 10 kills).
    #[arg(long)]
    reduced: bool,
    /// Where the broker comes from (default: external, then docker, then native tansu).
    #[arg(long)]
    broker: Option<ProviderKind>,
    /// The runtime under test: pico-kafka (default) or pico-iggy (`PICO_IGGY_BIN`, else beside
    /// this binary), each against its own broker.
    #[arg(long, value_enum, default_value = "kafka")]
    runtime: RuntimeArg,
    /// Where to write crash-suite.{json,md}.
    #[arg(long, default_value = "docs")]
    out: PathBuf,
    /// Print only.
    #[arg(long)]
    no_write: bool,
    /// Sinks run at once, each with its own destination, topics and groups (their cases mostly
    /// wait on session timeouts and holds). The broker case, which stops the shared broker,
    /// always runs alone.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Also run the controls: the kill case against postgres, at the reduced size, with the
    /// runtime broken on purpose in each way pico-kafka's `mutants` feature offers (the runtime
    /// binary must be built with it, as scripts/crash-suite.sh does). A control the suite does
    /// not catch (no record lost; for replays-as-written, metrics that agree) fails the run.
    #[arg(long)]
    controls: bool,
    /// The sink the controls run against (default postgres): any sink of the suite, to see
    /// the judge catch a broken runtime through that destination too.
    #[arg(long)]
    control_sink: Option<String>,
    /// Merge this run's rows into `<out>/crash-suite.json` (a report of the same size) instead
    /// of replacing it: the cases run here replace theirs, the others keep theirs (a sink
    /// skipped here loses its rows), and the report says which rows came from which run.
    #[arg(long)]
    merge: bool,
    /// Run nothing: render `<out>/crash-suite.md` again from `<out>/crash-suite.json` (after a
    /// change to the report's wording).
    #[arg(long)]
    render: bool,
}

/// Renders `out`'s crash-suite.md from its crash-suite.json (or `runtime`'s); whether that
/// report passed.
fn render_again(out: &std::path::Path, runtime: RuntimeArg) -> Result<bool, String> {
    let stem = file_stem(runtime.binary());
    let json = out.join(format!("{stem}.json"));
    let text = std::fs::read_to_string(&json)
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let report: CrashReport = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a crash report: {e}", json.display()))?;
    std::fs::write(out.join(format!("{stem}.md")), render(&report)).map_err(|e| e.to_string())?;
    Ok(report.failures().is_empty())
}

/// What one sink's run left: its destination and its cases, or why it could not run here.
type SinkRun = Result<(pico_conformance::target::ServerInfo, Vec<CaseResult>), String>;

/// What the sinks share.
struct Shared<'a> {
    source: CaseSource<'a>,
    runtime: &'a std::path::Path,
    work: &'a std::path::Path,
    size: Size,
    cases: &'a [Case],
}

/// Provides the destination of `sink`, runs every case against it in order and stops it.
async fn run_sink(shared: &Shared<'_>, sink: CrashSink) -> SinkRun {
    let destination = CrashDestination::provide(sink).await?;
    let info = destination.info().await;
    // A smoke test: the kill case alone, with one effective kill.
    let (size, cases): (Size, Vec<Case>) = if sink.smoke() {
        let kill = shared.cases.iter().copied().filter(|&c| c == Case::Kill);
        (Size::smoke(shared.size), kill.collect())
    } else {
        (shared.size, shared.cases.to_vec())
    };
    let bench = Bench {
        source: shared.source,
        destination: &destination,
        runtime: shared.runtime,
        work: shared.work,
        size,
    };
    let mut results = Vec::new();
    for case in cases {
        eprintln!("[{}] {} ...", sink.id(), case.id());
        let result = run_case(&bench, sink, case).await;
        eprintln!(
            "[{}] {}: produced {}, lost {}, duplicates {} (bound {}), starts {}, kills {}, {:.0} s: {}",
            sink.id(),
            case.id(),
            result.produced,
            result.lost_count,
            result.duplicates,
            result.duplicate_bound,
            result.processes.starts,
            result.processes.kills,
            result.seconds,
            match &result.verdict {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("FAIL {e}"),
            }
        );
        results.push(result);
    }
    if let Err(e) = destination.stop().await {
        eprintln!("[{}] stopping the destination: {e}", sink.id());
    }
    Ok((info, results))
}

/// Runs every control, one after another, against one destination of `sink`.
async fn run_controls(shared: &Shared<'_>, sink: CrashSink) -> Result<Vec<ControlResult>, String> {
    let destination = CrashDestination::provide(sink).await?;
    let bench = Bench {
        source: shared.source,
        destination: &destination,
        runtime: shared.runtime,
        work: shared.work,
        size: Size::REDUCED,
    };
    let mut results = Vec::new();
    for control in Control::ALL {
        eprintln!("[control {}] ...", control.id());
        let c = run_control(&bench, sink, control).await;
        eprintln!(
            "[control {}]: produced {}, lost {}, {:.0} s: {}",
            control.id(),
            c.result.produced,
            c.result.lost_count,
            c.result.seconds,
            c.cell()
        );
        results.push(c);
    }
    if let Err(e) = destination.stop().await {
        eprintln!("[controls] stopping the destination: {e}");
    }
    Ok(results)
}

/// One lane of the run: a sink's cases, or the controls.
enum Lane {
    Sink(CrashSink),
    Controls(CrashSink),
}

/// What a lane left.
enum LaneRun {
    Sink(CrashSink, SinkRun),
    Controls(Result<Vec<ControlResult>, String>),
}

async fn run_lane(shared: &Shared<'_>, lane: Lane) -> LaneRun {
    match lane {
        Lane::Sink(sink) => LaneRun::Sink(sink, run_sink(shared, sink).await),
        Lane::Controls(sink) => LaneRun::Controls(run_controls(shared, sink).await),
    }
}

fn pick<T: Copy>(
    names: &[String],
    all: &[T],
    id: impl Fn(T) -> &'static str,
) -> Result<Vec<T>, String> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|n| {
            all.iter()
                .copied()
                .find(|t| id(*t) == n || id(*t).starts_with(&format!("{n}-")))
                .ok_or_else(|| format!("unknown: {n}"))
        })
        .collect()
}

async fn broker(kind: Option<ProviderKind>) -> Result<Broker, String> {
    let kinds = match kind {
        Some(k) => vec![k],
        None => vec![
            ProviderKind::External,
            ProviderKind::Docker,
            ProviderKind::Native,
        ],
    };
    let mut reasons = Vec::new();
    for k in kinds {
        match Broker::provide(k).await {
            Ok(b) => return Ok(b),
            Err(e) => reasons.push(format!("{k}: {e}")),
        }
    }
    Err(reasons.join("; "))
}

async fn run(cli: Cli) -> Result<bool, String> {
    // The code measured is the checkout's as the run starts (edits made while it runs are not
    // in the binaries it runs).
    let code = pico_suite::code_version::code_version().unwrap_or_else(|| "unknown".into());
    let sinks = pick(&cli.sinks, &CrashSink::all(), CrashSink::id)?;
    let cases = pick(&cli.cases, &Case::ALL, Case::id)?;
    let size = if cli.reduced {
        Size::REDUCED
    } else {
        Size::FULL
    };
    let runtime = runtime_binary_named(cli.runtime.binary())?;
    let (provided, info, address) = match cli.runtime {
        RuntimeArg::Kafka => {
            let broker = broker(cli.broker)
                .await
                .map_err(|e| format!("no broker: {e}"))?;
            let (info, address) = (broker.info(), broker.brokers.clone());
            (Provided::Kafka(SharedBroker::new(broker)), info, address)
        }
        RuntimeArg::Iggy => {
            let server = IggyServer::start()
                .await
                .map_err(|e| format!("no Iggy server: {e}"))?;
            let (info, address) = (server.info(), server.url.clone());
            (
                Provided::Iggy(Box::new(SharedBroker::new(server))),
                info,
                address,
            )
        }
        RuntimeArg::Nats => {
            let server = NatsServer::start()
                .await
                .map_err(|e| format!("no nats-server: {e}"))?;
            let (info, address) = (server.info(), server.url.clone());
            (
                Provided::Nats(Box::new(SharedBroker::new(server))),
                info,
                address,
            )
        }
    };
    let work = tempfile::Builder::new()
        .prefix("pico-crash-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    eprintln!(
        "broker {} at {}; runtime {}; work dir {}",
        info.name,
        address,
        runtime.display(),
        work.path().display()
    );
    let mut report = CrashReport {
        generated_by: format!("pico-crash {}", env!("CARGO_PKG_VERSION")),
        date: today(),
        size_name: if cli.reduced { "reduced" } else { "full" }.into(),
        size,
        runtime: cli.runtime.binary().into(),
        // Kafka's and Iggy's topics both hold the suite's partitions; a JetStream stream is one.
        partitions: if cli.runtime == RuntimeArg::Nats {
            1
        } else {
            pico_suite::crash::PARTITIONS as u32
        },
        broker: info,
        servers: Vec::new(),
        results: Vec::new(),
        skipped: Vec::new(),
        jobs: cli.jobs.max(1),
        controls_size: cli.controls.then_some(Size::REDUCED),
        controls: Vec::new(),
        merged: Vec::new(),
    };
    eprintln!("{} sinks at once", cli.jobs.max(1));
    let shared = Shared {
        source: provided.source(),
        runtime: &runtime,
        work: work.path(),
        size,
        cases: &cases,
    };
    let mut lanes: Vec<Lane> = sinks.into_iter().map(Lane::Sink).collect();
    if cli.controls {
        let sink = match &cli.control_sink {
            Some(id) => CrashSink::named(id).ok_or_else(|| format!("unknown sink: {id}"))?,
            None => Control::SINK,
        };
        lanes.push(Lane::Controls(sink));
    }
    let mut runs: Vec<(usize, LaneRun)> = stream::iter(lanes.into_iter().enumerate())
        .map(|(i, lane)| {
            let shared = &shared;
            async move { (i, run_lane(shared, lane).await) }
        })
        .buffer_unordered(cli.jobs.max(1))
        .collect()
        .await;
    runs.sort_by_key(|(i, _)| *i);
    let mut controls_failed = None;
    for (_, run) in runs {
        match run {
            LaneRun::Sink(sink, Ok((info, results))) => {
                report.servers.push((sink, info));
                report.results.extend(results);
            }
            LaneRun::Sink(sink, Err(why)) => {
                eprintln!("[{}] SKIPPED — {why}", sink.id());
                report.skipped.push((sink, why));
            }
            LaneRun::Controls(Ok(controls)) => report.controls = controls,
            LaneRun::Controls(Err(why)) => controls_failed = Some(why),
        }
    }
    if let Err(e) = provided.stop().await {
        eprintln!("stopping the broker: {e}");
    }
    let stem = file_stem(cli.runtime.binary());
    if cli.merge {
        let json = cli.out.join(format!("{stem}.json"));
        let text = std::fs::read_to_string(&json)
            .map_err(|e| format!("--merge: cannot read {}: {e}", json.display()))?;
        let earlier: CrashReport = serde_json::from_str(&text)
            .map_err(|e| format!("--merge: {} is not a crash report: {e}", json.display()))?;
        report = report.merged_into(earlier, &code)?;
    }
    let markdown = render(&report);
    println!("{markdown}");
    let mut failures = report.failures();
    if let Some(why) = controls_failed {
        failures.push(format!("the controls could not run: {why}"));
    }
    for f in &failures {
        println!("FAILED {f}");
    }
    if !failures.is_empty() {
        // The runtime logs and pipeline files of the failed run stay for a look.
        let kept = work.keep();
        eprintln!("runtime logs kept in {}", kept.display());
    }
    if !cli.no_write {
        std::fs::create_dir_all(&cli.out).map_err(|e| e.to_string())?;
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())? + "\n";
        std::fs::write(cli.out.join(format!("{stem}.json")), json).map_err(|e| e.to_string())?;
        std::fs::write(cli.out.join(format!("{stem}.md")), markdown).map_err(|e| e.to_string())?;
    }
    Ok(failures.is_empty())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // The suite's own clients log every refused connection while the broker case
                // holds the broker down: expected, and counted in the report instead.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("warn,rdkafka=error,librdkafka=off")
                }),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = if cli.render {
        render_again(&cli.out, cli.runtime)
    } else {
        match tokio::runtime::Runtime::new() {
            Ok(rt) => {
                rt.spawn(pico_suite::serve::reaper::stop_on_signal());
                rt.block_on(run(cli))
            }
            Err(e) => Err(e.to_string()),
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
