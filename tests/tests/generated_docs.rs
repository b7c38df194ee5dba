//! The committed duplicate-behaviour table is generated, complete and fresh.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_conformance::report::{Report, TargetStatus};
use pico_conformance::runner::{self, RunOptions, Silent};
use pico_conformance::scenarios::SuiteSize;
use pico_sink::Scenario;
use pico_suite::destinations;
use pico_suite::render::{
    render_crate_verdicts, render_html, render_markdown, short_verdict, splice_verdicts,
};
use pico_workspace_tests::{sink_crates, workspace_root};

fn committed() -> Report {
    let text = std::fs::read_to_string(workspace_root().join("docs/duplicate-behaviour.json"))
        .expect("docs/duplicate-behaviour.json is committed");
    serde_json::from_str(&text).expect("it parses as a report")
}

#[test]
fn markdown_is_rendered_from_the_json_and_never_edited() {
    let md = std::fs::read_to_string(workspace_root().join("docs/duplicate-behaviour.md")).unwrap();
    assert_eq!(
        md,
        render_markdown(&committed()),
        "docs/duplicate-behaviour.md differs from what its JSON renders: regenerate with `./scripts/main-job.sh` (or `cargo run -p pico-suite -- render`)"
    );
}

#[test]
fn html_is_rendered_from_the_json() {
    let html =
        std::fs::read_to_string(workspace_root().join("docs/duplicate-behaviour.html")).unwrap();
    assert_eq!(
        html,
        render_html(&committed()),
        "docs/duplicate-behaviour.html differs from what its JSON renders: run `cargo run -p pico-suite -- render`"
    );
}

#[test]
fn the_committed_controls_table_catches_every_control() {
    let report = committed();
    let table = report
        .controls
        .expect("the report carries the controls table: run `pico-conformance controls`");
    let ids: Vec<&str> = table.rows.iter().map(|r| r.control.as_str()).collect();
    let expected: Vec<&str> = pico_conformance_controls::Control::ALL
        .iter()
        .map(|c| c.id())
        .collect();
    assert_eq!(ids, expected, "the table holds every control, in order");
    for row in &table.rows {
        let scenarios: Vec<Scenario> = row.cells.iter().map(|c| c.scenario).collect();
        assert_eq!(
            scenarios,
            Scenario::ALL,
            "{}: every scenario judged it",
            row.control
        );
    }
    let problems = table.problems();
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn summary_cells_are_short() {
    let report = committed();
    let mut cells = 0;
    for t in &report.targets {
        for s in &t.scenarios {
            let cell = short_verdict(s);
            assert!(
                cell.chars().count() <= 40,
                "{}/{}: {cell:?} is longer than 40 characters",
                t.target,
                s.scenario.id()
            );
            cells += 1;
        }
    }
    assert!(cells > 50, "only {cells} cells");
    // The Markdown summary itself: every cell of its table is short.
    let md = render_markdown(&report);
    let summary = md
        .split("## Summary")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap();
    for line in summary.lines().filter(|l| l.starts_with("| ")) {
        for cell in line.split(" | ") {
            let cell = cell.trim_matches(|c| c == '|' || c == ' ');
            assert!(cell.chars().count() <= 40, "summary cell {cell:?}");
        }
    }
}

#[test]
fn every_sink_readme_quotes_its_generated_verdicts() {
    let report = committed();
    for name in sink_crates() {
        let short = name.strip_prefix("pico-sink-").unwrap();
        let path = workspace_root().join("sinks").join(short).join("README.md");
        let readme = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{name} has no README ({}): {e}", path.display()));
        let fresh = splice_verdicts(&readme, &render_crate_verdicts(&report, &name))
            .unwrap_or_else(|| panic!("{} has no generated verdict block", path.display()));
        assert_eq!(
            readme,
            fresh,
            "{}: the verdict block is stale; run `cargo run -p pico-suite -- render`",
            path.display()
        );
        for heading in [
            "## Mechanism",
            "## What the destination must provide",
            "## What the destination holds",
            "## Runtime",
            "## What a replay becomes",
            "## Replay horizon",
            "## What it refuses",
            "## Example",
        ] {
            assert!(
                readme.contains(heading),
                "{name}'s README lacks {heading:?}"
            );
        }
    }
}

#[test]
fn every_sink_crate_is_in_the_table() {
    let report = committed();
    let crates = sink_crates();
    assert!(crates.len() >= 2, "{crates:?}");
    for name in crates {
        assert!(
            report.targets.iter().any(|t| t.sink_crate == name),
            "{name} has no row in docs/duplicate-behaviour.json: give it a conformance target and rerun the suite"
        );
    }
    for t in &report.targets {
        if let TargetStatus::NotVerifiedHere(reason) = &t.status {
            assert!(
                !reason.is_empty(),
                "{} is skipped without a reason",
                t.target
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_rows_match_a_fresh_run() {
    let report = committed();
    // The scenarios whose outcome depends on chance or timing (where a cut falls, how many
    // attempts an outage refuses: both counted in the outcome) are compared by verdict only.
    let random = [
        Scenario::CancelledConsume,
        Scenario::FlakyNetwork,
        Scenario::Outage,
    ];
    let opts = RunOptions {
        provider: Some(pico_conformance::provider::ProviderKind::Embedded),
        size: SuiteSize::Reduced,
        ..RunOptions::default()
    };
    let fresh = runner::run(&destinations::targets(), &opts, &Silent).await;
    for t in fresh
        .targets
        .iter()
        .filter(|t| t.status == TargetStatus::Verified)
    {
        let old = report
            .targets
            .iter()
            .find(|o| o.target == t.target)
            .unwrap_or_else(|| panic!("{} is missing from the committed table", t.target));
        for s in &t.scenarios {
            let cell = old
                .scenarios
                .iter()
                .find(|o| o.scenario == s.scenario)
                .unwrap();
            if random.contains(&s.scenario) {
                assert_eq!(
                    std::mem::discriminant(&cell.verdict),
                    std::mem::discriminant(&s.verdict),
                    "{}/{} changed: regenerate the table ({})",
                    t.target,
                    s.scenario.id(),
                    s.outcome
                );
            } else {
                assert_eq!(
                    (&cell.outcome, &cell.verdict),
                    (&s.outcome, &s.verdict),
                    "{}/{} changed: regenerate the table",
                    t.target,
                    s.scenario.id()
                );
            }
        }
    }
}
