//! `pico-bench`: each sink beside its destination's raw bulk path on the same server in the same
//! run, reported as ratios (absolute numbers on a shared machine mean little).
//!
//! `pico-bench all` measures every sink, the identity derivations, pico-kafka end to end
//! (broker → pico-kafka → PostgreSQL, ClickHouse, S3, Delta on S3) and the commit-cost soak,
//! and writes `docs/benchmarks.{json,md,svg}`;
//! `pico-bench sink <sink>…` measures some and prints their tables; `pico-bench end-to-end`
//! and `pico-bench soak` measure one section and can put it into a written report;
//! `pico-bench render` re-renders the Markdown and SVG from the JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pico_suite::bench::report::{BenchReport, BenchSize, Machine, render_markdown, render_svg};
use pico_suite::bench::{self, Lakehouse};
use pico_suite::destinations;
use pico_suite::measure::{Measuring, SinkBench};

#[derive(Parser)]
#[command(
    name = "pico-bench",
    version,
    about = "Measures each sink beside its destination's raw bulk path and reports ratios"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// A sink pico-bench measures: a destination's own benchmark, named in the one registry
/// ([`destinations::ALL`]), or a lakehouse format, which the benchmark that spans them measures.
#[derive(Clone, Copy)]
struct Which {
    id: &'static str,
    measure: fn(BenchSize) -> Measuring,
}

/// The lakehouse formats: pico-bench's own benchmark, `bench::lakehouse`, spans them.
const LAKEHOUSES: [Which; 2] = [
    Which {
        id: "delta",
        measure: |size| Box::pin(bench::lakehouse(Lakehouse::Delta, size)),
    },
    Which {
        id: "iceberg",
        measure: |size| Box::pin(bench::lakehouse(Lakehouse::Iceberg, size)),
    },
];

impl Which {
    /// Every sink, in report order: the destinations' own benchmarks in table order, then the
    /// lakehouse formats.
    fn all() -> Vec<Which> {
        destinations::ALL
            .iter()
            .filter_map(|e| e.bench.map(|measure| Which { id: e.id, measure }))
            .chain(LAKEHOUSES)
            .collect()
    }

    /// The sink named `id` on the command line.
    fn named(id: &str) -> Result<Which, String> {
        let all = Which::all();
        all.iter().find(|w| w.id == id).copied().ok_or_else(|| {
            let ids: Vec<&str> = all.iter().map(|w| w.id).collect();
            format!("no benchmark for {id:?}; one of: {}", ids.join(", "))
        })
    }
}

#[derive(Subcommand)]
enum Command {
    /// Every sink and the identity derivations; writes benchmarks.{json,md,svg}.
    All {
        /// The smaller size CI runs (2 repetitions, 20 000 records of volume).
        #[arg(long)]
        reduced: bool,
        /// Where to write the report.
        #[arg(long, default_value = "docs")]
        out: PathBuf,
        /// Fail (exit 1) when a goal of the report is not met.
        #[arg(long)]
        check_goals: bool,
    },
    /// Some sinks only; prints their rows, and with `--out` puts them into the report there in
    /// place of those sinks' earlier rows (the rest of that report is kept as it was measured).
    Sink {
        /// Which sinks: postgres, redshift, influxdb, s3, clickhouse, quickwit (their own
        /// benchmarks, from the registry of destinations), delta, iceberg.
        #[arg(value_parser = Which::named)]
        sinks: Vec<Which>,
        /// The smaller size.
        #[arg(long)]
        reduced: bool,
        /// Directory holding the report to update (benchmarks.json, .md, .svg).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// pico-kafka end to end alone (broker → pico-kafka → each destination, beside raw consume
    /// and the sink's own write); prints its section of the report, and with `--out` puts it
    /// into the report there (the rest of that report is kept as it was measured).
    EndToEnd {
        /// Directory holding the benchmarks.json whose end-to-end section this run replaces.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The smaller size (20 000 records per topic instead of 200 000).
        #[arg(long)]
        reduced: bool,
        /// Only these destinations (postgres, clickhouse, s3, delta-s3); their rows replace
        /// theirs in the report and the others' stay.
        #[arg(long)]
        sink: Vec<String>,
    },
    /// The commit-cost soak alone (delta, delta-s3, iceberg, iceberg-s3): many commits of 100
    /// records into one table each; prints its section of the report, and with `--out` puts it
    /// into the report there (the rest of that report is kept as it was measured).
    Soak {
        /// Directory holding the benchmarks.json whose soak section this run replaces.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The smaller size (1 000 commits per sink instead of 10 000).
        #[arg(long)]
        reduced: bool,
        /// Commits per sink instead of the size's.
        #[arg(long)]
        commits: Option<usize>,
    },
    /// Re-render benchmarks.{md,svg} from benchmarks.json in DIR.
    Render {
        /// Directory holding benchmarks.json.
        #[arg(long, default_value = "docs")]
        out: PathBuf,
    },
}

fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day()
    )
}

/// The cargo profile this binary was built with.
fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// A report of this run with nothing measured yet.
fn empty_report(size: BenchSize) -> BenchReport {
    BenchReport {
        generated_by: format!("pico-bench {}", env!("CARGO_PKG_VERSION")),
        date: today(),
        size,
        profile: profile().into(),
        machine: Machine::current(),
        reps: size.reps(),
        sinks: Vec::new(),
        identity: Vec::new(),
        end_to_end: Vec::new(),
        soak: Vec::new(),
    }
}

/// Measures each of `sinks` beside its raw anchor, in order.
async fn measure_sinks(sinks: &[Which], size: BenchSize) -> Result<Vec<SinkBench>, String> {
    let mut measured = Vec::new();
    for which in sinks {
        tracing::info!(sink = %which.id, "measuring");
        measured.push((which.measure)(size).await?);
    }
    Ok(measured)
}

/// Measures `sinks`, the identity derivations, and pico-kafka end to end and the soak when
/// asked.
async fn measure(
    sinks: &[Which],
    size: BenchSize,
    with_end_to_end: bool,
    with_soak: bool,
) -> Result<BenchReport, String> {
    let mut report = empty_report(size);
    report.identity = bench::identity(size)?;
    report.sinks = measure_sinks(sinks, size).await?;
    if with_end_to_end {
        tracing::info!("measuring broker → pico-kafka → each destination");
        report.end_to_end = bench::end_to_end::end_to_end(size, &[]).await?;
    }
    if with_soak {
        let commits = bench::soak_commits(size);
        tracing::info!(
            commits,
            "the commit-cost soak of delta, delta-s3, iceberg, iceberg-s3"
        );
        report.soak = bench::soaks(commits, bench::soak_window(commits)).await?;
    }
    Ok(report)
}

fn write(out: &Path, report: &BenchReport) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n";
    for (name, text) in [
        ("benchmarks.json", json),
        ("benchmarks.md", render_markdown(report)),
        ("benchmarks.svg", render_svg(report)),
    ] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The report a section measured at `size` goes into: the one in `out` (which must have been
/// measured by a build of this profile at this size), or a new one.
fn report_to_merge(out: Option<&Path>, size: BenchSize) -> Result<BenchReport, String> {
    let Some(dir) = out else {
        return Ok(empty_report(size));
    };
    let report = read_report(dir)?;
    let profile = profile();
    if report.profile != profile || report.size != size {
        return Err(format!(
            "the report in --out was measured by a {} build at {} size, this run by a {profile} \
             build at {} size: run `pico-bench all` instead",
            report.profile,
            report.size.id(),
            size.id()
        ));
    }
    Ok(report)
}

/// The report in `dir`/benchmarks.json.
fn read_report(dir: &Path) -> Result<BenchReport, String> {
    let path = dir.join("benchmarks.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a benchmark report: {e}", path.display()))
}

fn size(reduced: bool) -> BenchSize {
    if reduced {
        BenchSize::Reduced
    } else {
        BenchSize::Full
    }
}

async fn run(cli: Cli) -> Result<bool, String> {
    match cli.command {
        Command::All {
            reduced,
            out,
            check_goals,
        } => {
            let report = measure(&Which::all(), size(reduced), true, true).await?;
            println!("{}", render_markdown(&report));
            write(&out, &report)?;
            println!("wrote {}/benchmarks.{{json,md,svg}}", out.display());
            let missed: Vec<String> = report
                .goal_checks()
                .into_iter()
                .filter(|c| !c.met)
                .map(|c| format!("{} (measured {})", c.goal, c.measured))
                .collect();
            for m in &missed {
                println!("GOAL NOT MET: {m}");
            }
            Ok(!check_goals || missed.is_empty())
        }
        Command::Sink {
            sinks,
            reduced,
            out,
        } => {
            let mut report = report_to_merge(out.as_deref(), size(reduced))?;
            for measured in measure_sinks(&sinks, size(reduced)).await? {
                match report.sinks.iter_mut().find(|s| s.sink == measured.sink) {
                    Some(earlier) => *earlier = measured,
                    None => report.sinks.push(measured),
                }
            }
            println!("{}", render_markdown(&report));
            if let Some(dir) = &out {
                write(dir, &report)?;
                println!(
                    "wrote the rows of {} into {}/benchmarks.{{json,md,svg}}",
                    sinks.iter().map(|w| w.id).collect::<Vec<_>>().join(", "),
                    dir.display()
                );
            }
            Ok(true)
        }
        Command::Soak {
            out,
            reduced,
            commits,
        } => {
            let commits = commits.unwrap_or(bench::soak_commits(size(reduced)));
            let mut report = report_to_merge(out.as_deref(), size(reduced))?;
            report.soak = bench::soaks(commits, bench::soak_window(commits)).await?;
            println!("{}", render_markdown(&report));
            if let Some(dir) = &out {
                write(dir, &report)?;
                println!(
                    "wrote the soak into {}/benchmarks.{{json,md,svg}}",
                    dir.display()
                );
            }
            Ok(true)
        }
        Command::EndToEnd { out, reduced, sink } => {
            let mut report = report_to_merge(out.as_deref(), size(reduced))?;
            let rows = bench::end_to_end::end_to_end(size(reduced), &sink).await?;
            report
                .end_to_end
                .retain(|r| !rows.iter().any(|new| new.sink == r.sink));
            report.end_to_end.extend(rows);
            let order = |id: &str| {
                bench::end_to_end::DESTINATIONS
                    .iter()
                    .position(|d| d.id == id)
            };
            report
                .end_to_end
                .sort_by_key(|r| (order(&r.sink), std::cmp::Reverse(r.partitions)));
            println!("{}", render_markdown(&report));
            if let Some(dir) = &out {
                write(dir, &report)?;
                println!(
                    "wrote the end-to-end rows into {}/benchmarks.{{json,md,svg}}",
                    dir.display()
                );
            }
            Ok(true)
        }
        Command::Render { out } => {
            write(&out, &read_report(&out)?)?;
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(
                    "warn,pico_suite=info,pico_bench=info,buoyant_kernel=off",
                )
            }),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match tokio::runtime::Runtime::new() {
        Ok(rt) => {
            rt.spawn(pico_suite::serve::reaper::stop_on_signal());
            rt.block_on(run(cli))
        }
        Err(e) => Err(format!("starting the runtime: {e}")),
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
