//! The HTML duplicate-behaviour report, opened in a real browser (headless Chromium): every
//! target × scenario cell is in the rendered DOM with its verdict, and the page renders.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::path::PathBuf;
use std::process::Command;

use pico_conformance::report::{Report, TargetStatus};
use pico_suite::render::short_verdict;
use pico_workspace_tests::workspace_root;

/// Debian's `chromium` (or another Chromium build) on `PATH`.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// The text of every `<td data-target=… data-scenario=…>` cell of a serialized DOM.
fn cells(dom: &str) -> Vec<(String, String, String)> {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        let end = start + tag[start..].find('"')?;
        Some(tag[start..end].to_owned())
    };
    let mut found = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<td ") {
        rest = &rest[i..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        let body = &rest[close + 1..];
        let text = body[..body.find("</td>").unwrap_or(0)]
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
        if let (Some(t), Some(s)) = (attr(tag, "data-target"), attr(tag, "data-scenario")) {
            found.push((t, s, text));
        }
        rest = &rest[close..];
    }
    found
}

#[test]
fn every_cell_renders_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("PICO_REQUIRE_BROWSER").is_none(),
            "PICO_REQUIRE_BROWSER is set and no chromium is on PATH: run scripts/setup.sh"
        );
        eprintln!(
            "BROWSER TEST SKIPPED — no chromium on PATH (scripts/setup.sh installs Debian's chromium)"
        );
        return;
    };
    let page = workspace_root().join("docs/duplicate-behaviour.html");
    let profile = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "chromium failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let dom = String::from_utf8(run(&["--dump-dom"])).unwrap();
    let report: Report = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("docs/duplicate-behaviour.json")).unwrap(),
    )
    .unwrap();
    let rendered = cells(&dom);
    let mut scenarios: Vec<_> = report
        .targets
        .iter()
        .flat_map(|t| t.scenarios.iter().map(|s| s.scenario))
        .collect();
    scenarios.sort();
    scenarios.dedup();
    assert_eq!(
        rendered.len(),
        report.targets.len() * scenarios.len(),
        "one cell per target and scenario"
    );
    for t in &report.targets {
        for s in &scenarios {
            let want = match t.scenarios.iter().find(|r| r.scenario == *s) {
                _ if t.status != TargetStatus::Verified => "—".to_owned(),
                Some(r) => short_verdict(r),
                None => "not run".to_owned(),
            };
            let got = rendered
                .iter()
                .find(|(target, scenario, _)| target == &t.target && scenario == s.id())
                .map(|(_, _, text)| text.clone())
                .unwrap_or_else(|| panic!("no cell for {}/{}", t.target, s.id()));
            assert_eq!(got, want, "{}/{}", t.target, s.id());
        }
    }
    // The page also paints: a screenshot of it is a real PNG of some size.
    let shot = profile.path().join("report.png");
    run(&[
        "--window-size=1600,1200",
        &format!("--screenshot={}", shot.display()),
    ]);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}
