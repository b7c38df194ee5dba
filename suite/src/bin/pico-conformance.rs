//! `pico-conformance`: run the conformance suite and write the duplicate-behaviour table.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use pico_conformance::provider::ProviderKind;
use pico_conformance::report::{Report, ScenarioReport, Verdict};
use pico_conformance::runner::{self, Progress, RunOptions};
use pico_conformance::scenarios::SuiteSize;
use pico_sink::Scenario;
use pico_suite::destinations;
use pico_suite::render::{render_crate_verdicts, render_html, render_markdown, splice_verdicts};

#[derive(Parser)]
#[command(
    name = "pico-conformance",
    version,
    about = "Replays batches against real destinations and reports what a duplicate becomes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run targets through scenarios, print the table, and write docs/duplicate-behaviour.{md,json}.
    Run {
        /// Only these targets (repeatable; see `list`).
        #[arg(long = "sink")]
        sinks: Vec<String>,
        /// Only these scenarios (repeatable; see `list`).
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
        /// Use only this provider (default: auto — external, docker, native, embedded).
        #[arg(long)]
        provider: Option<ProviderKind>,
        /// Targets run at once (the cells mostly wait on their servers; the main job runs 2).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        #[command(flatten)]
        output: Output,
    },
    /// Run the controls (sinks over SQLite broken on purpose, and the same sink unbroken)
    /// through every scenario and write the controls table into the report in OUT; fails when
    /// a control is caught by no scenario or the honest sink fails one.
    Controls {
        #[command(flatten)]
        output: Output,
    },
    /// List targets and scenarios.
    List,
    /// Merge the reports of runs made elsewhere (other machines, or parallel runs of disjoint
    /// targets) into the report in OUT, then render it.
    Merge {
        /// Directories holding a duplicate-behaviour.json each, merged in the order given.
        #[arg(long = "from", required = true)]
        from: Vec<PathBuf>,
        /// Directory of the report that receives them.
        #[arg(long, default_value = "docs")]
        out: PathBuf,
    },
    /// Re-render the Markdown from the JSON in DIR.
    Render {
        /// Directory holding duplicate-behaviour.json.
        #[arg(long, default_value = "docs")]
        out: PathBuf,
    },
}

/// How large a run is and where its results go (`run` and `controls`).
#[derive(clap::Args)]
struct Output {
    /// Run the long scenarios (flaky-network) at reduced size, as CI does.
    #[arg(long)]
    reduced: bool,
    /// Where the report is (duplicate-behaviour.{json,md,html}); results merge into it.
    #[arg(long, default_value = "docs")]
    out: PathBuf,
    /// Print only; write nothing.
    #[arg(long)]
    no_write: bool,
}

impl Output {
    /// The size `--reduced` names.
    fn size(&self) -> SuiteSize {
        if self.reduced {
            SuiteSize::Reduced
        } else {
            SuiteSize::Full
        }
    }
}

/// Progress as a bar on a terminal, as plain lines otherwise.
struct Display {
    bar: Option<ProgressBar>,
    lines: Mutex<()>,
}

impl Display {
    fn new(total: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            bar,
            lines: Mutex::new(()),
        }
    }

    fn line(&self, text: String) {
        let _guard = self.lines.lock();
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }
}

impl Progress for Display {
    fn provisioning(&self, target: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{target}: provisioning"));
        } else {
            self.line(format!("[{target}] provisioning"));
        }
    }
    fn skipped(&self, target: &str, reason: &str) {
        self.line(format!("[{target}] SKIPPED — not verified here: {reason}"));
        if let Some(bar) = &self.bar {
            bar.inc(Scenario::ALL.len() as u64);
        }
    }
    fn started(&self, target: &str, scenario: Scenario) {
        match &self.bar {
            Some(bar) => bar.set_message(format!("{target}: {}", scenario.id())),
            None => self.line(format!("[{target}] {} ...", scenario.id())),
        }
    }
    fn running(&self, target: &str, scenario: Scenario, status: &str) {
        self.line(format!("[{target}] {} {status}", scenario.id()));
    }
    fn finished(&self, target: &str, report: &ScenarioReport) {
        let mark = match report.verdict {
            Verdict::Pass => "ok",
            Verdict::NotApplicable(_) => "n/a",
            Verdict::NotExercised(_) => "not exercised",
            _ => "FAIL",
        };
        let took = report
            .ran
            .as_ref()
            .and_then(|ran| ran.seconds)
            .map(|s| format!(" ({s} s)"))
            .unwrap_or_default();
        self.line(format!(
            "[{target}] {} {mark}{took}: {}",
            report.scenario.id(),
            report.outcome
        ));
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}

fn read_report(path: &Path) -> Result<Option<Report>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{} is not a report: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

fn write_report(dir: &Path, report: &Report) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n";
    let json_path = dir.join("duplicate-behaviour.json");
    std::fs::write(&json_path, json)
        .map_err(|e| format!("writing {}: {e}", json_path.display()))?;
    for (name, text) in [
        ("duplicate-behaviour.md", render_markdown(report)),
        ("duplicate-behaviour.html", render_html(report)),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    // The sink crates' READMEs quote their rows: rewrite their generated blocks beside docs/.
    let Some(root) = dir.parent() else {
        return Ok(());
    };
    let mut crates: Vec<&str> = report
        .targets
        .iter()
        .map(|t| t.sink_crate.as_str())
        .collect();
    crates.sort_unstable();
    crates.dedup();
    for name in crates {
        let Some(short) = name.strip_prefix("pico-sink-") else {
            continue;
        };
        let path = root.join("sinks").join(short).join("README.md");
        let Ok(readme) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Some(updated) = splice_verdicts(&readme, &render_crate_verdicts(report, name)) {
            std::fs::write(&path, updated)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn merge(from: &[PathBuf], out: &Path) -> Result<(), String> {
    let mut merged = read_report(&out.join("duplicate-behaviour.json"))?.unwrap_or_default();
    for dir in from {
        let path = dir.join("duplicate-behaviour.json");
        let report =
            read_report(&path)?.ok_or_else(|| format!("{} does not exist", path.display()))?;
        merged.merge(report);
    }
    // The table lists targets in the suite's order, whatever order the runs came in.
    let order: Vec<&str> = destinations::targets().iter().map(|t| t.name()).collect();
    merged.targets.sort_by_key(|t| {
        order
            .iter()
            .position(|n| *n == t.target)
            .unwrap_or(order.len())
    });
    write_report(out, &merged)?;
    println!("merged {} report(s) into {}", from.len(), out.display());
    Ok(())
}

fn parse_scenarios(ids: &[String]) -> Result<Vec<Scenario>, String> {
    ids.iter()
        .map(|id| {
            Scenario::from_id(id).ok_or_else(|| {
                format!(
                    "unknown scenario {id:?}; known: {}",
                    Scenario::ALL.map(Scenario::id).join(", ")
                )
            })
        })
        .collect()
}

async fn run(
    sinks: Vec<String>,
    scenarios: Vec<String>,
    provider: Option<ProviderKind>,
    jobs: usize,
    size: SuiteSize,
    out: PathBuf,
    no_write: bool,
) -> Result<bool, String> {
    let all = destinations::targets();
    for name in &sinks {
        if !all.iter().any(|t| runner::selects(name, t.name())) {
            let known: Vec<&str> = all.iter().map(|t| t.name()).collect();
            return Err(format!(
                "unknown sink {name:?}; known: {}",
                known.join(", ")
            ));
        }
    }
    let json_path = out.join("duplicate-behaviour.json");
    let mut merged = read_report(&json_path)?.unwrap_or_default();
    let opts = RunOptions {
        targets: sinks,
        scenarios: parse_scenarios(&scenarios)?,
        provider,
        size,
        code: pico_suite::code_version::code_version(),
        jobs,
        last_seconds: merged.seconds_by_target(size),
        ..RunOptions::default()
    };
    let selected = all
        .iter()
        .filter(|t| {
            opts.targets.is_empty() || opts.targets.iter().any(|n| runner::selects(n, t.name()))
        })
        .count();
    let per_target = if opts.scenarios.is_empty() {
        Scenario::ALL.len()
    } else {
        opts.scenarios.len()
    };
    let display = Display::new((selected * per_target) as u64);
    let started = std::time::Instant::now();
    let report = runner::run(&all, &opts, &display).await;
    let elapsed = started.elapsed().as_secs();
    if let Some(bar) = &display.bar {
        bar.finish_and_clear();
    }

    merged.merge(report.clone());
    println!("{}", render_markdown(&report));

    let cells: usize = report.targets.iter().map(|t| t.scenarios.len()).sum();
    let skipped: Vec<&str> = report
        .unverified()
        .into_iter()
        .map(|t| t.target.as_str())
        .collect();
    let failures = report.failures();
    println!(
        "summary: {} targets, {cells} scenarios run in {elapsed} s, {} failed; {} targets SKIPPED (not verified here){}",
        report.targets.len(),
        failures.len(),
        skipped.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(": {}", skipped.join(", "))
        }
    );
    for f in &failures {
        println!("FAILED {f}");
    }
    if !no_write {
        write_report(&out, &merged)?;
        println!("wrote {} and duplicate-behaviour.md", json_path.display());
    }
    Ok(failures.is_empty())
}

async fn controls(size: SuiteSize, out: PathBuf, no_write: bool) -> Result<bool, String> {
    let display =
        Display::new((pico_conformance_controls::Control::ALL.len() * Scenario::ALL.len()) as u64);
    let table =
        pico_conformance_controls::run(size, pico_suite::code_version::code_version(), &display)
            .await;
    if let Some(bar) = &display.bar {
        bar.finish_and_clear();
    }
    let problems = table.problems();
    for row in &table.rows {
        let caught: Vec<&str> = row.caught_by().iter().map(|s| s.id()).collect();
        match row.expected {
            Some(_) => println!("{}: caught by {}", row.control, caught.join(", ")),
            None => println!(
                "{}: {}",
                row.control,
                row.cells
                    .iter()
                    .map(|c| format!("{} {}", c.scenario.id(), c.words()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    for p in &problems {
        println!("FAILED control: {p}");
    }
    if !no_write {
        let json_path = out.join("duplicate-behaviour.json");
        let mut report = read_report(&json_path)?.unwrap_or_default();
        report.controls = Some(table);
        write_report(&out, &report)?;
        println!("wrote the controls table into {}", json_path.display());
    }
    Ok(problems.is_empty())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // delta-kernel logs an ERROR for every table it finds not yet created.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new(
                        "error,buoyant_kernel=off,deltalake_core::kernel::transaction=off",
                    )
                }),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List => {
            println!(
                "sinks (--sink takes an id or a prefix ending at '-': `delta` runs delta and delta-s3):"
            );
            for t in destinations::targets() {
                println!(
                    "  {:<16} {:<26} {:<34} providers: {}",
                    t.name(),
                    t.sink_crate(),
                    t.title(),
                    t.providers()
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            println!("scenarios:");
            for s in Scenario::ALL {
                println!("  {}", s.id());
            }
            Ok(true)
        }
        Command::Render { out } => {
            read_report(&out.join("duplicate-behaviour.json")).and_then(|r| {
                let r = r.ok_or("no duplicate-behaviour.json there")?;
                write_report(&out, &r).map(|_| true)
            })
        }
        Command::Merge { from, out } => merge(&from, &out).map(|_| true),
        Command::Controls { output } => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(controls(output.size(), output.out, output.no_write)),
            Err(e) => Err(format!("starting the runtime: {e}")),
        },
        Command::Run {
            sinks,
            scenarios,
            provider,
            jobs,
            output,
        } => match tokio::runtime::Runtime::new() {
            Ok(rt) => {
                rt.spawn(pico_suite::serve::reaper::stop_on_signal());
                rt.block_on(run(
                    sinks,
                    scenarios,
                    provider,
                    jobs,
                    output.size(),
                    output.out,
                    output.no_write,
                ))
            }
            Err(e) => Err(format!("starting the runtime: {e}")),
        },
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
