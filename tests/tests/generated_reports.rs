//! The benchmark and crash-suite reports are generated, complete and fresh.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_suite::bench::report::{BenchReport, BenchSize, render_markdown, render_svg};
use pico_suite::crash::report::{CrashReport, render};
use pico_workspace_tests::workspace_root;

fn read(name: &str) -> String {
    std::fs::read_to_string(workspace_root().join("docs").join(name))
        .unwrap_or_else(|e| panic!("docs/{name} is committed: {e}"))
}

#[test]
fn benchmark_report_is_rendered_from_its_json_and_complete() {
    let report: BenchReport =
        serde_json::from_str(&read("benchmarks.json")).expect("docs/benchmarks.json parses");
    assert_eq!(
        read("benchmarks.md"),
        render_markdown(&report),
        "docs/benchmarks.md differs from its JSON: run `./scripts/bench.sh render`"
    );
    assert_eq!(
        read("benchmarks.svg"),
        render_svg(&report),
        "docs/benchmarks.svg differs from its JSON: run `./scripts/bench.sh render`"
    );
    // The committed report is a full-size run of an optimized build.
    assert_eq!(report.size, BenchSize::Full);
    assert_eq!(report.profile, "release");
    assert!(report.machine.cores > 0 && report.machine.memory_gib > 0.0);
    for sink in [
        "postgres",
        "redshift",
        "influxdb",
        "clickhouse",
        "s3",
        "delta",
        "iceberg",
        "quickwit",
    ] {
        let s = report
            .sinks
            .iter()
            .find(|s| s.sink == sink)
            .unwrap_or_else(|| panic!("{sink} is missing from docs/benchmarks.json"));
        let sizes: Vec<u64> = s.rows.iter().map(|r| r.records).collect();
        assert_eq!(sizes, pico_suite::bench::SIZES, "{sink}");
        for r in &s.rows {
            assert!(
                r.raw_ms > 0.0 && r.first_ms > 0.0 && r.replay_ms > 0.0,
                "{sink}: {r:?}"
            );
            assert!(
                r.cold_replay_ms.is_some_and(|ms| ms > 0.0) && r.held_checked,
                "{sink}: the committed report must carry the cold replay and the read-back: {r:?}"
            );
        }
    }
    let functions: Vec<&str> = report
        .identity
        .iter()
        .map(|t| t.function.as_str())
        .collect();
    assert_eq!(
        functions,
        [
            "Scope::record_text",
            "Scope::elasticsearch_id",
            "Scope::meilisearch_key"
        ]
    );
    // Every destination the end-to-end goal names, over 8 partitions and over 1, at full size,
    // each run read back.
    for sink in pico_suite::bench::report::goals::END_TO_END_SINKS {
        for partitions in [8, 1] {
            let row = report
                .end_to_end
                .iter()
                .find(|r| r.sink == sink && r.partitions == partitions)
                .unwrap_or_else(|| {
                    panic!(
                        "{sink} over {partitions} partition(s) is missing from the end-to-end rows"
                    )
                });
            assert!(row.records >= 200_000 && row.reps >= 5, "{row:?}");
            assert_eq!(row.verified_records, row.records, "{row:?}");
            assert!(row.peak_rss_bytes > 0, "{row:?}");
            for path in [&row.raw_consume, &row.sink_write, &row.end_to_end] {
                assert!(path.steady_per_s > 0.0 && path.total_ms > 0.0, "{row:?}");
            }
        }
    }
    // Goals are checked in the report itself; every goal has a line there.
    let md = read("benchmarks.md");
    for c in report.goal_checks() {
        assert!(md.contains(&c.goal), "{}", c.goal);
    }
}

#[test]
fn crash_report_is_rendered_from_its_json_and_passed() {
    let report: CrashReport =
        serde_json::from_str(&read("crash-suite.json")).expect("docs/crash-suite.json parses");
    assert_eq!(
        read("crash-suite.md"),
        render(&report),
        "docs/crash-suite.md differs from its JSON: rerun ./scripts/crash-suite.sh"
    );
    assert_eq!(
        report.size_name, "full",
        "the committed crash report is a full-size run"
    );
    assert!(!report.results.is_empty());
    assert!(
        report.failures().is_empty(),
        "the committed crash report has failures: {:?}",
        report.failures()
    );
}

/// A runtime's committed crash report (`crash-suite-<name>`): rendered from its JSON, a
/// full-size run of that runtime, PostgreSQL and S3 rows, no failure.
fn check_runtime_report(name: &str) {
    let stem = format!("crash-suite-{name}");
    let report: CrashReport = serde_json::from_str(&read(&format!("{stem}.json")))
        .unwrap_or_else(|e| panic!("docs/{stem}.json parses: {e}"));
    assert_eq!(report.runtime, format!("pico-{name}"));
    assert_eq!(
        read(&format!("{stem}.md")),
        render(&report),
        "docs/{stem}.md differs from its JSON: rerun ./scripts/crash-suite.sh --runtime {name}"
    );
    assert_eq!(
        report.size_name, "full",
        "the committed crash report is a full-size run"
    );
    for sink in ["postgres", "s3"] {
        assert!(
            report.results.iter().any(|r| r.sink.id() == sink),
            "no {sink} rows"
        );
    }
    assert!(
        report.failures().is_empty(),
        "the committed crash report has failures: {:?}",
        report.failures()
    );
}

#[test]
fn iggy_crash_report_is_rendered_from_its_json_and_passed() {
    check_runtime_report("iggy");
}

#[test]
fn nats_crash_report_is_rendered_from_its_json_and_passed() {
    check_runtime_report("nats");
}
