//! The committed duplicate-behaviour table is generated, complete and fresh.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_conformance::report::{Report, TargetStatus, render_markdown};
use pico_conformance::runner::{self, RunOptions, Silent};
use pico_conformance::scenarios::SuiteSize;
use pico_sink::Scenario;
use pico_suite::targets;
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
    // The scenarios whose outcome depends on chance (where a cut falls) are compared by
    // verdict only.
    let random = [Scenario::CancelledConsume, Scenario::FlakyNetwork];
    let opts = RunOptions {
        provider: Some(pico_conformance::provider::ProviderKind::Embedded),
        size: SuiteSize::Reduced,
        ..RunOptions::default()
    };
    let fresh = runner::run(&targets::all(), &opts, &Silent).await;
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
                    cell.verdict.is_failure(),
                    s.verdict.is_failure(),
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
