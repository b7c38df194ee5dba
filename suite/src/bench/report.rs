//! The benchmark report: what one `pico-bench all` run measured, rendered as Markdown and as an
//! SVG bar chart of the ratios. The JSON is the record; both renderings come from it alone.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::end_to_end::render as render_end_to_end;
pub use crate::bench::end_to_end::{EndToEndRow, PathFigures};
pub use crate::measure::{BenchRow, BenchSize, SinkBench};

/// The goals the report checks each run against (from the performance issue).
pub mod goals {
    /// A replay may cost at most this share of a first write (time): the cold replay, through
    /// a new instance into a place with history, where it was measured.
    pub const REPLAY_PER_FIRST: f64 = 0.2;
    /// The share of its raw anchor's throughput a sink's first write must reach at
    /// [`FIRST_PER_RAW_BATCH`] records: PostgreSQL 0.9 of the keyed logged `COPY`, InfluxDB 0.8
    /// of plain line protocol of the same points, and 0.8 for every sink that was there
    /// already (#39).
    pub const FIRST_PER_RAW: [(&str, f64); 6] = [
        ("postgres", 0.9),
        ("influxdb", 0.8),
        ("clickhouse", 0.8),
        ("delta", 0.8),
        ("iceberg", 0.8),
        ("quickwit", 0.8),
    ];
    /// The batch size the first-write goal applies to.
    pub const FIRST_PER_RAW_BATCH: u64 = 10_000;
    /// An identity derivation must take less than this, in nanoseconds per record.
    pub const IDENTITY_NS: f64 = 100.0;
    /// The share of the slower of its two parts (raw consume of the topic, the sink's own first
    /// write of the same records) `pico-kafka` must reach end to end in steady state (#39)…
    pub const END_TO_END_PER_SLOWER: f64 = 0.8;
    /// … for these destinations (their crash-suite ids).
    pub const END_TO_END_SINKS: [&str; 4] = ["postgres", "clickhouse", "s3", "delta-s3"];
    /// In the commit-cost soak, the median commit of the last window may cost at most this
    /// many times the median commit of the first.
    pub const SOAK_GROWTH: f64 = 1.5;
}

/// The machine a run measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs available to the process.
    pub cores: usize,
    /// Total memory, GiB.
    pub memory_gib: f64,
    /// CPU model, as `/proc/cpuinfo` names it.
    pub cpu: String,
    /// Operating system, as `/etc/os-release` names it.
    pub os: String,
}

impl Machine {
    /// The machine this process runs on.
    pub fn current() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let meminfo = read("/proc/meminfo");
        let kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_else(|| std::env::consts::OS.into());
        Self {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: (kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            cpu,
            os,
        }
    }
}

/// One lakehouse sink through many small commits into one table ([`crate::bench::soak`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakRow {
    /// `delta`, `delta-s3`, `iceberg` or `iceberg-s3`.
    pub sink: String,
    /// Where the table lived (local filesystem, or the S3 server and its version).
    pub store: String,
    /// Commits made, one per batch.
    pub commits: u64,
    /// Records per commit.
    pub records_per_commit: u64,
    /// Commits in each latency window.
    pub window: u64,
    /// Median commit latency of the first `window` commits, milliseconds.
    pub first_p50_ms: f64,
    /// Median commit latency of the last `window` commits, milliseconds.
    pub last_p50_ms: f64,
    /// The commits' summed latency, seconds.
    pub wall_s: f64,
    /// Batches handed to the sink again after a `Retryable` error (a runtime's retry; the
    /// latency of such a commit is its successful attempt's).
    #[serde(default)]
    pub retries: u64,
    /// Snapshots (Iceberg) or log entries (Delta) the table keeps at the end.
    pub versions_kept: u64,
    /// Data files the table's storage holds at the end.
    pub data_files: u64,
    /// Their bytes.
    pub data_bytes: u64,
    /// Metadata files (Delta's `_delta_log/`, Iceberg's `metadata/`) at the end.
    pub metadata_files: u64,
    /// Their bytes.
    pub metadata_bytes: u64,
}

impl SoakRow {
    /// How many times the first window's median commit the last window's costs.
    pub fn growth(&self) -> f64 {
        self.last_p50_ms / self.first_p50_ms
    }
}

/// One identity derivation's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityTiming {
    /// The function (`Scope::record_text`, …).
    pub function: String,
    /// Nanoseconds per record (median of the repetitions).
    pub ns_per_record: f64,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The tool and version that wrote it.
    pub generated_by: String,
    /// Date of the run (UTC, YYYY-MM-DD).
    pub date: String,
    /// How large the run was.
    pub size: BenchSize,
    /// The cargo profile the binary was built with (`release` or `debug`).
    pub profile: String,
    /// Where it ran.
    pub machine: Machine,
    /// Repetitions per measurement.
    pub reps: usize,
    /// Per sink.
    pub sinks: Vec<SinkBench>,
    /// Identity derivations.
    pub identity: Vec<IdentityTiming>,
    /// Broker → `pico-kafka` → each destination, beside its parts, when it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub end_to_end: Vec<EndToEndRow>,
    /// The commit-cost soak of the lakehouse sinks, when it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soak: Vec<SoakRow>,
}

/// One goal the report checks, and whether this run met it.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalCheck {
    /// What is checked, in words.
    pub goal: String,
    /// The measured figure, in words.
    pub measured: String,
    /// Whether it was met.
    pub met: bool,
}

impl BenchReport {
    /// Every goal of [`goals`] against this run's figures.
    pub fn goal_checks(&self) -> Vec<GoalCheck> {
        let mut checks = Vec::new();
        for s in &self.sinks {
            for r in &s.rows {
                let which = if r.cold_replay_ms.is_some() {
                    "cold replay"
                } else {
                    "replay"
                };
                checks.push(GoalCheck {
                    goal: format!(
                        "{} {which} ≤ {} × first write at {} records",
                        s.sink,
                        goals::REPLAY_PER_FIRST,
                        r.records
                    ),
                    measured: format!("{:.3}", r.judged_replay_per_first()),
                    met: r.judged_replay_per_first() <= goals::REPLAY_PER_FIRST,
                });
                let goal = goals::FIRST_PER_RAW
                    .iter()
                    .find(|(sink, _)| *sink == s.sink)
                    .map(|(_, share)| *share);
                if let Some(share) = goal
                    && r.records == goals::FIRST_PER_RAW_BATCH
                {
                    checks.push(GoalCheck {
                        goal: format!(
                            "{} first write ≥ {share} × its raw anchor ({}) at {} records",
                            s.sink, s.raw_path, r.records
                        ),
                        measured: format!("{:.2}", r.first_per_raw()),
                        met: r.first_per_raw() >= share,
                    });
                }
            }
        }
        for row in &self.end_to_end {
            if let Some(goal) = row.goal() {
                checks.push(GoalCheck {
                    goal,
                    measured: format!("{:.2}", row.per_slower()),
                    met: row.per_slower() >= goals::END_TO_END_PER_SLOWER,
                });
            }
        }
        for row in &self.soak {
            checks.push(GoalCheck {
                goal: format!(
                    "{} soak: p50 of the last {} commits ≤ {} × p50 of the first {}",
                    row.sink,
                    row.window,
                    goals::SOAK_GROWTH,
                    row.window
                ),
                measured: format!("{:.2}", row.growth()),
                met: row.growth() <= goals::SOAK_GROWTH,
            });
        }
        for t in &self.identity {
            checks.push(GoalCheck {
                goal: format!("{} < {} ns per record", t.function, goals::IDENTITY_NS),
                measured: format!("{:.1} ns", t.ns_per_record),
                met: t.ns_per_record < goals::IDENTITY_NS,
            });
        }
        checks
    }
}

fn rate(n: u64, ms: f64) -> f64 {
    n as f64 / (ms / 1000.0)
}

/// Renders the Markdown page.
pub fn render_markdown(r: &BenchReport) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "Generated by `{}` (`pico-bench all`) from `benchmarks.json`; do not edit by hand. \
         Every sink is measured beside its destination's raw bulk path on the same server in the \
         same run, and reported as ratios: absolute times on a shared machine mean little.\n",
        r.generated_by
    );
    let _ = writeln!(
        md,
        "Run of {}: {} size ({} repetitions, medians), `{}` build, on {} cores, {} GiB, {}, {}.\n",
        r.date,
        r.size.id(),
        r.reps,
        r.profile,
        r.machine.cores,
        r.machine.memory_gib,
        r.machine.cpu,
        r.machine.os
    );
    let _ = writeln!(md, "![ratios](benchmarks.svg)\n");
    let _ = writeln!(md, "## Goals\n\n| goal | measured | met |\n|---|---:|---|");
    for c in r.goal_checks() {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            c.goal,
            c.measured,
            if c.met { "yes" } else { "**no**" }
        );
    }
    // Runs from before #39 timed the anchor first in every repetition, with no warm-up, and
    // kept no spread.
    let alternated = r
        .sinks
        .iter()
        .any(|s| s.rows.iter().any(|row| row.first_per_raw_range.is_some()));
    let method = if alternated {
        "Each path runs once unmeasured before its repetitions, and the order alternates (the \
         anchor first in even repetitions, the sink first in odd ones); beside the median, the \
         lowest and highest first / raw of one repetition."
    } else {
        "This run timed the anchor first and the sink second in every repetition, with no \
         unmeasured warm-up (the method before the alternating order), and kept no spread."
    };
    let cold = if r
        .sinks
        .iter()
        .any(|s| s.rows.iter().any(|row| row.cold_replay_ms.is_some()))
    {
        format!(
            "what replaying the batch costs as a share of the first write (time), as after a \
             restart: a new sink instance, opened untimed, replays it into a place that already \
             holds {} earlier batches of {} records of the same partition and the batch itself",
            r.size.history_batches(),
            crate::measure::HISTORY_BATCH_RECORDS
        )
    } else {
        "not measured in this run (the method before the cold replay)".to_owned()
    };
    let checked = r
        .sinks
        .iter()
        .flat_map(|s| &s.rows)
        .all(|row| row.held_checked);
    let held = if checked {
        "After every write and replay the sink's place was read back (untimed): each held \
         exactly the records sent to it, each once."
    } else {
        "This run did not read the sink's places back (the method before that check)."
    };
    let _ = writeln!(
        md,
        "\n## Sinks\n\nRecords of about 1 KiB of JSON. *first / raw*: the sink's first-write \
         throughput as a share of the raw anchor's (median). *cold replay / first*: {cold}. \
         *warm replay / first*: the same batch again through the instance that has just written \
         it, into a place holding only that batch. {method} {held} ⚠: the sink wrote faster \
         than its own anchor, the bare path of the same rows, which is a measurement to explain \
         before the figure is trusted.\n"
    );
    let _ = writeln!(
        md,
        "| sink | server | raw anchor | batch | raw records/s | first records/s | first / raw | cold replay / first | warm replay / first |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|"
    );
    for s in &r.sinks {
        for row in &s.rows {
            let spread = row
                .first_per_raw_range
                .map(|(low, high)| format!(" ({low:.2}–{high:.2})"))
                .unwrap_or_default();
            let flag = if row.faster_than_anchor() { " ⚠" } else { "" };
            let cold = row
                .cold_replay_per_first()
                .map_or("not measured".to_owned(), |c| format!("{c:.3}"));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.2}{spread}{flag} | {cold} | {:.3} |",
                s.sink,
                s.server,
                s.raw_path,
                row.records,
                rate(row.records, row.raw_ms),
                rate(row.records, row.first_ms),
                row.first_per_raw(),
                row.replay_per_first()
            );
        }
    }
    let faster: Vec<String> = r
        .sinks
        .iter()
        .flat_map(|s| {
            s.rows
                .iter()
                .filter(|row| row.faster_than_anchor())
                .map(move |row| format!("{} at {} records", s.sink, row.records))
        })
        .collect();
    if !faster.is_empty() {
        let _ = writeln!(
            md,
            "\n⚠ Faster than its own anchor, to explain: {}.",
            faster.join(", ")
        );
    }
    let notes: Vec<(&str, &String)> = r
        .sinks
        .iter()
        .flat_map(|s| s.notes.iter().map(move |n| (s.sink.as_str(), n)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(md);
        for (sink, note) in notes {
            let _ = writeln!(md, "- {sink}: {note}");
        }
    }
    render_end_to_end(&mut md, &r.end_to_end);
    render_soak(&mut md, &r.soak);
    let _ = writeln!(
        md,
        "\n## Identity\n\nOne derivation per record, for a namespaced identity (medians of the \
         repetitions; `cargo bench -p pico-identity` measures the same with criterion).\n"
    );
    let _ = writeln!(md, "| function | ns per record |\n|---|---:|");
    for t in &r.identity {
        let _ = writeln!(md, "| `{}` | {:.1} |", t.function, t.ns_per_record);
    }
    md
}

/// The soak's section of the Markdown page, when it ran.
fn render_soak(md: &mut String, rows: &[SoakRow]) {
    let Some(first) = rows.first() else {
        return;
    };
    let _ = writeln!(
        md,
        "\n## Commit-cost soak\n\n{} commits of {} records each into one fresh table per sink, \
         with the sink's own table upkeep on (its defaults). *growth*: the median commit of the \
         last {} commits as a multiple of the median of the first {}. What the table's storage \
         holds at the end: data files, and metadata (Delta's `_delta_log/`, Iceberg's \
         `metadata/`). *retries*: batches handed to the sink again after a `Retryable` error, \
         as a runtime does (one second later).\n",
        first.commits, first.records_per_commit, first.window, first.window
    );
    let _ = writeln!(
        md,
        "| sink | store | commits | first p50 ms | last p50 ms | growth | total s | retries | versions kept | data files | data MB | metadata files | metadata MB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mb = |b: u64| b as f64 / 1e6;
    for row in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.0} | {} | {} | {} | {:.1} | {} | {:.1} |",
            row.sink,
            row.store,
            row.commits,
            row.first_p50_ms,
            row.last_p50_ms,
            row.growth(),
            row.wall_s,
            row.retries,
            row.versions_kept,
            row.data_files,
            mb(row.data_bytes),
            row.metadata_files,
            mb(row.metadata_bytes)
        );
    }
}

/// Renders the ratios as a horizontal bar chart (SVG, no script).
pub fn render_svg(r: &BenchReport) -> String {
    const BAR: f64 = 14.0;
    const GAP: f64 = 10.0;
    const LEFT: f64 = 190.0;
    const WIDTH: f64 = 420.0;
    let rows: Vec<(String, &BenchRow)> = r
        .sinks
        .iter()
        .flat_map(|s| {
            s.rows
                .iter()
                .map(move |row| (format!("{} · {}", s.sink, row.records), row))
        })
        .collect();
    let scale = rows
        .iter()
        .map(|(_, row)| row.first_per_raw().max(row.judged_replay_per_first()))
        .fold(1.0_f64, f64::max);
    let height = 60.0 + rows.len() as f64 * (2.0 * BAR + GAP) + 30.0;
    let total = LEFT + WIDTH + 80.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{total}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        svg,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">pico-sinks: first write / raw anchor \
         (throughput) and replay / first write (time), {} size, {}</text>",
        r.size.id(),
        r.date
    );
    let _ = writeln!(
        svg,
        "<rect x=\"{LEFT}\" y=\"32\" width=\"12\" height=\"10\" fill=\"#4a7bd0\"/>\
         <text x=\"{}\" y=\"41\">first / raw</text>\
         <rect x=\"{}\" y=\"32\" width=\"12\" height=\"10\" fill=\"#e39a2d\"/>\
         <text x=\"{}\" y=\"41\">replay / first (cold where measured)</text>",
        LEFT + 16.0,
        LEFT + 110.0,
        LEFT + 126.0
    );
    let x_of = |v: f64| LEFT + WIDTH * v / scale;
    for (mark, label) in [(1.0, "1.0"), (goals::REPLAY_PER_FIRST, "0.2")] {
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"50\" x2=\"{x:.1}\" y2=\"{y:.1}\" stroke=\"#999\" \
             stroke-dasharray=\"3,3\"/><text x=\"{x:.1}\" y=\"{t:.1}\" text-anchor=\"middle\" \
             fill=\"#666\">{label}</text>",
            x = x_of(mark),
            y = height - 25.0,
            t = height - 10.0
        );
    }
    let mut y = 55.0;
    for (label, row) in &rows {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            LEFT - 8.0,
            y + BAR + 4.0
        );
        for (value, colour) in [
            (row.first_per_raw(), "#4a7bd0"),
            (row.judged_replay_per_first(), "#e39a2d"),
        ] {
            let _ = writeln!(
                svg,
                "<rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR}\" fill=\"{colour}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">{value:.2}</text>",
                (x_of(value) - LEFT).max(1.0),
                x_of(value) + 4.0,
                y + BAR - 3.0
            );
            y += BAR;
        }
        y += GAP;
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soak_section_gives_growth_and_retries_per_sink() {
        let row = SoakRow {
            sink: "iceberg-s3".into(),
            store: "SeaweedFS 3.80".into(),
            commits: 10_000,
            records_per_commit: 100,
            window: 1_000,
            first_p50_ms: 20.0,
            last_p50_ms: 25.0,
            wall_s: 300.0,
            retries: 3,
            versions_kept: 100,
            data_files: 10_000,
            data_bytes: 50_000_000,
            metadata_files: 400,
            metadata_bytes: 9_000_000,
        };
        let mut md = String::new();
        render_soak(&mut md, &[row]);
        println!("{md}");
        assert!(md.contains("| retries |"), "{md}");
        assert!(
            md.contains(
                "| iceberg-s3 | SeaweedFS 3.80 | 10000 | 20.0 | 25.0 | 1.25 | 300 | 3 | 100 |"
            ),
            "{md}"
        );
    }

    #[test]
    fn a_report_from_before_the_retry_count_reads_as_no_retries() {
        let json = r#"{"sink":"delta","store":"local filesystem","commits":10,"records_per_commit":100,
            "window":1,"first_p50_ms":1.0,"last_p50_ms":1.0,"wall_s":0.1,"versions_kept":10,
            "data_files":10,"data_bytes":1,"metadata_files":1,"metadata_bytes":1}"#;
        let row: SoakRow = serde_json::from_str(json).expect("an older soak row");
        assert_eq!(row.retries, 0);
    }

    #[test]
    fn the_replay_goal_judges_the_cold_replay_where_it_was_measured() {
        let json = r#"{"records":1000,"bytes":1,"raw_ms":10.0,"first_ms":10.0,"replay_ms":1.0}"#;
        let old: BenchRow = serde_json::from_str(json).expect("a row from before the cold replay");
        assert_eq!(old.cold_replay_per_first(), None);
        assert_eq!(old.judged_replay_per_first(), 0.1);
        let cold = BenchRow {
            cold_replay_ms: Some(5.0),
            ..old
        };
        assert_eq!(cold.judged_replay_per_first(), 0.5);
        let report = BenchReport {
            generated_by: "pico-bench".into(),
            date: "2026-12-05".into(),
            size: BenchSize::Reduced,
            profile: "release".into(),
            machine: Machine {
                cores: 2,
                memory_gib: 1.0,
                cpu: "cpu".into(),
                os: "os".into(),
            },
            reps: 2,
            sinks: vec![SinkBench {
                sink: "s3".into(),
                server: "SeaweedFS".into(),
                raw_path: "PutObject".into(),
                rows: vec![cold],
                notes: Vec::new(),
            }],
            identity: Vec::new(),
            end_to_end: Vec::new(),
            soak: Vec::new(),
        };
        let check = &report.goal_checks()[0];
        assert_eq!(
            check.goal,
            "s3 cold replay ≤ 0.2 × first write at 1000 records"
        );
        assert!(!check.met, "{check:?}");
        let md = render_markdown(&report);
        assert!(
            md.contains("holds 20 earlier batches of 100 records"),
            "{md}"
        );
        assert!(md.contains("| 0.500 | 0.100 |"), "{md}");
    }
}
