//! Results, verdicts against each sink's claims, and the generated table.
//!
//! The JSON file is the record of a run; the Markdown file is rendered from it alone
//! ([`render_markdown`]), so the two always agree and neither is edited by hand.

use std::fmt::Write as _;

use pico_sink::{Claim, Scenario};
use serde::{Deserialize, Serialize};

use crate::ledger::Measured;
use crate::provider::ProviderKind;
use crate::target::ServerInfo;

/// How a scenario's measurement compares with the sink's claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "why")]
pub enum Verdict {
    /// Measured behaviour matches the claim, nothing lost.
    Pass,
    /// The sink claimed at most one visible copy and the destination shows more.
    Contradicted(String),
    /// Records were sent, not dead-lettered, and are not in the destination.
    Lost(String),
    /// Corrupted or foreign rows, or the scenario could not be carried out.
    Failed(String),
    /// The destination lacks what the scenario needs.
    NotApplicable(String),
}

impl Verdict {
    /// Whether this verdict fails the run.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Verdict::Contradicted(_) | Verdict::Lost(_) | Verdict::Failed(_)
        )
    }
}

/// One cell of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioReport {
    /// The scenario.
    pub scenario: Scenario,
    /// What the sink claims for it.
    pub claim: Claim,
    /// The outcome in plain words.
    pub outcome: String,
    /// Claim versus measurement.
    pub verdict: Verdict,
    /// The figures, when the scenario ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

/// Whether a target ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "reason")]
pub enum TargetStatus {
    /// It ran against a real destination.
    Verified,
    /// No provider could serve it here.
    NotVerifiedHere(String),
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetReport {
    /// Target id.
    pub target: String,
    /// What distinguishes the target from others of the same sink (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// Crate under test.
    pub sink_crate: String,
    /// Whether it ran.
    pub status: TargetStatus,
    /// The sink's mechanism, from `describe()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Provider used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderKind>,
    /// Server it ran against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
    /// The image the docker provider runs for this target (its pin), whichever provider ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_image: Option<String>,
    /// Date of the run (UTC, YYYY-MM-DD).
    pub date: String,
    /// How large the long scenarios ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<crate::scenarios::SuiteSize>,
    /// Per scenario.
    pub scenarios: Vec<ScenarioReport>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The tool and version that wrote it.
    pub generated_by: String,
    /// Per target, in run order.
    pub targets: Vec<TargetReport>,
}

impl Report {
    /// An empty report stamped with this tool.
    pub fn new() -> Self {
        Self {
            generated_by: format!("pico-conformance {}", env!("CARGO_PKG_VERSION")),
            targets: Vec::new(),
        }
    }

    /// Replaces what `newer` covers (per target, per scenario), keeping the rest.
    pub fn merge(&mut self, newer: Report) {
        for t in newer.targets {
            match self.targets.iter_mut().find(|o| o.target == t.target) {
                None => self.targets.push(t),
                Some(old) if t.status != TargetStatus::Verified => *old = t,
                Some(old) => {
                    if old.status != TargetStatus::Verified {
                        old.scenarios.clear();
                    }
                    for s in t.scenarios {
                        match old.scenarios.iter_mut().find(|o| o.scenario == s.scenario) {
                            Some(o) => *o = s,
                            None => old.scenarios.push(s),
                        }
                    }
                    old.scenarios.sort_by_key(|s| s.scenario);
                    old.status = t.status;
                    old.mechanism = t.mechanism;
                    old.provider = t.provider;
                    old.server = t.server;
                    old.date = t.date;
                    old.size = t.size;
                    old.title = t.title;
                    old.docker_image = t.docker_image;
                }
            }
        }
        self.generated_by = newer.generated_by;
    }

    /// Every failing cell, as `target/scenario: verdict`.
    pub fn failures(&self) -> Vec<String> {
        self.targets
            .iter()
            .flat_map(|t| {
                t.scenarios
                    .iter()
                    .filter(|s| s.verdict.is_failure())
                    .map(move |s| format!("{}/{}: {}", t.target, s.scenario.id(), s.outcome))
            })
            .collect()
    }
}

impl Default for Report {
    fn default() -> Self {
        Self::new()
    }
}

/// Short words for a claim.
pub fn claim_words(claim: &Claim) -> String {
    match claim {
        Claim::NoVisibleDuplicate => "no visible duplicate".into(),
        Claim::OverwrittenInPlace => "overwritten in place".into(),
        Claim::Repeats => "repeats".into(),
        Claim::Measured { why } => format!("measured only ({why})"),
        other => format!("{other:?}"),
    }
}

/// The outcome in plain words, and the verdict against `claim`.
pub fn judge(claim: &Claim, m: &Measured) -> (String, Verdict) {
    let mut words = Vec::new();
    let verdict;
    if !m.lost.is_empty() {
        words.push(format!("LOST {}: {}", m.lost.len(), list(&m.lost)));
        verdict = Verdict::Lost(format!("missing {}", list(&m.lost)));
    } else if !m.rejected_but_stored.is_empty() {
        words.push(format!(
            "{} rejected but stored: {}",
            m.rejected_but_stored.len(),
            list(&m.rejected_but_stored)
        ));
        verdict = Verdict::Contradicted(format!(
            "rejected {} record(s) as refused that the destination holds ({}): a dead-letter \
             queue replayed later would write them twice",
            m.rejected_but_stored.len(),
            list(&m.rejected_but_stored)
        ));
    } else if !m.mismatches.is_empty() {
        words.push(format!("{} rows repeat", m.visible_duplicates));
        verdict = Verdict::Contradicted(m.mismatches.join("; "));
    } else if !m.corrupted.is_empty() || m.foreign > 0 {
        let why = format!(
            "{} corrupted ({}), {} foreign rows",
            m.corrupted.len(),
            list(&m.corrupted),
            m.foreign
        );
        words.push(why.clone());
        verdict = Verdict::Failed(why);
    } else if m.visible_duplicates > 0 {
        words.push(format!(
            "{} rows repeat ({} records)",
            m.visible_duplicates, m.repeated_records
        ));
        verdict = if claim.promises_single_copy() {
            Verdict::Contradicted(format!(
                "claims {}, {} rows repeat",
                claim_words(claim),
                m.visible_duplicates
            ))
        } else {
            Verdict::Pass
        };
    } else {
        words.push(match claim {
            Claim::OverwrittenInPlace => "overwritten in place".to_owned(),
            _ => "no visible duplicate".to_owned(),
        });
        verdict = Verdict::Pass;
    }
    for f in &m.meter {
        match f.mode {
            crate::meter::DeliveryMode::AtMostOnce => words.push(format!(
                "at-most-once: {} lost, all named by the counter",
                f.lost.len()
            )),
            _ => words.push(format!(
                "{}: {} consumption rows, {}/{} cells polluted",
                f.mode.id(),
                f.consumption_rows,
                f.polluted_cells,
                f.summary_cells
            )),
        }
    }
    if let Some(p) = m.physical_duplicates.filter(|p| *p > 0) {
        words.push(format!("{p} physical duplicates before merge"));
    }
    if !m.dead_lettered.is_empty() {
        let ids: Vec<String> = m.dead_lettered.iter().map(|(id, _)| id.clone()).collect();
        words.push(format!(
            "rejected {}: {} ({})",
            m.dead_lettered.len(),
            list(&ids),
            truncate(&m.dead_lettered[0].1, 60)
        ));
    }
    (words.join("; "), verdict)
}

fn list(items: &[String]) -> String {
    let shown: Vec<String> = items.iter().take(3).map(|s| truncate(s, 40)).collect();
    let more = items.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn mark(v: &Verdict) -> &'static str {
    match v {
        Verdict::Pass => "✓",
        Verdict::Contradicted(_) => "✗ contradicts claim",
        Verdict::Lost(_) => "✗ LOSS",
        Verdict::Failed(_) => "✗ failed",
        Verdict::NotApplicable(_) => "n/a",
    }
}

/// Renders the Markdown table from a report.
pub fn render_markdown(report: &Report) -> String {
    let mut scenarios: Vec<Scenario> = report
        .targets
        .iter()
        .flat_map(|t| t.scenarios.iter().map(|s| s.scenario))
        .collect();
    scenarios.sort();
    scenarios.dedup();

    let mut md = String::new();
    let _ = writeln!(md, "# Duplicate behaviour per sink and failure scenario\n");
    let _ = writeln!(
        md,
        "Generated by `{}` from `duplicate-behaviour.json`; do not edit by hand \
         (regenerate with `./scripts/main-job.sh`).\n",
        report.generated_by
    );
    let _ = writeln!(
        md,
        "Each cell is what the destination held after the scenario, read back from the \
         destination itself and compared with an offset counter kept outside the sink: visible \
         duplicates, records lost (zero tolerance), records rejected with their offsets. \
         ✓ means the measurement agrees with the sink's own `describe()` claim.\n"
    );
    let _ = writeln!(md, "## Summary\n");
    let mut header = "| sink | provider | server |".to_owned();
    let mut rule = "|---|---|---|".to_owned();
    for s in &scenarios {
        let _ = write!(header, " {} |", s.id());
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    for t in report
        .targets
        .iter()
        .filter(|t| t.status == TargetStatus::Verified)
    {
        let server = t
            .server
            .as_ref()
            .map(|s| format!("{} {}", s.name, s.version))
            .unwrap_or_default();
        let provider = t.provider.map(|p| p.to_string()).unwrap_or_default();
        let _ = write!(
            md,
            "| {} | {} | {} |",
            cell(&t.target),
            provider,
            cell(&server)
        );
        for s in &scenarios {
            match t.scenarios.iter().find(|r| r.scenario == *s) {
                Some(r) => {
                    let _ = write!(md, " {} {} |", cell(&r.outcome), mark(&r.verdict));
                }
                None => md.push_str(" not run |"),
            }
        }
        md.push('\n');
    }

    let skipped: Vec<&TargetReport> = report
        .targets
        .iter()
        .filter(|t| t.status != TargetStatus::Verified)
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(md, "\n## Not verified here\n");
        let _ = writeln!(md, "| sink | crate | reason | date |\n|---|---|---|---|");
        for t in skipped {
            if let TargetStatus::NotVerifiedHere(reason) = &t.status {
                let _ = writeln!(
                    md,
                    "| {} | {} | not verified here: {} | {} |",
                    cell(&t.target),
                    t.sink_crate,
                    cell(reason),
                    t.date
                );
            }
        }
    }

    let meter: Vec<&TargetReport> = report
        .targets
        .iter()
        .filter(|t| {
            t.scenarios
                .iter()
                .any(|s| s.measured.as_ref().is_some_and(|m| !m.meter.is_empty()))
        })
        .collect();
    if !meter.is_empty() {
        let _ = writeln!(md, "\n## Meter-readings workload\n");
        let _ = writeln!(
            md,
            "The 2 400 readings of `meter_readings.py` (a bit-for-bit Rust port) delivered as offsets \
             of one topic-partition at-most-once, at-least-once and keyed, **read back from the \
             destination** and run through the workload's pipeline with its dedupe stage off. \
             Baseline: 2200 consumption rows, 0 of 55 summary cells polluted, no serving \
             difference. Loss is counted by the offset counter outside the sink.\n"
        );
        for t in meter {
            let Some(m) = t
                .scenarios
                .iter()
                .find_map(|s| s.measured.as_ref().filter(|m| !m.meter.is_empty()))
            else {
                continue;
            };
            let _ = writeln!(md, "### {}\n", t.target);
            let _ = writeln!(
                md,
                "| mode | rows read | lost (counter) | visible duplicates | consumption rows | polluted cells | serving diff per region |\n\
                 |---|---:|---|---:|---:|---:|---|"
            );
            for f in &m.meter {
                let lost = if f.lost.is_empty() {
                    "0".to_owned()
                } else {
                    let shown: Vec<String> = f.lost.iter().take(6).map(u64::to_string).collect();
                    let more = f.lost.len().saturating_sub(6);
                    format!(
                        "{}: offsets {}{}",
                        f.lost.len(),
                        shown.join(", "),
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    )
                };
                let diff = if f.serving_diff.is_empty() {
                    "none".to_owned()
                } else {
                    f.serving_diff
                        .iter()
                        .map(|(r, d)| format!("{r} {d:+.2}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} of {} | {} |",
                    f.mode.id(),
                    f.rows_read,
                    lost,
                    f.visible_duplicates,
                    f.consumption_rows,
                    f.polluted_cells,
                    f.summary_cells,
                    diff
                );
            }
            md.push('\n');
        }
    }

    let _ = writeln!(md, "\n## Details\n");
    for t in report
        .targets
        .iter()
        .filter(|t| t.status == TargetStatus::Verified)
    {
        let _ = writeln!(md, "### {} (`{}`)\n", t.target, t.sink_crate);
        if let Some(m) = &t.mechanism {
            let _ = writeln!(md, "Mechanism: {m}\n");
        }
        if let (Some(p), Some(s)) = (t.provider, &t.server) {
            let _ = writeln!(
                md,
                "Ran on {} {} through the {p} provider, {}.\n",
                s.name, s.version, t.date
            );
        }
        let _ = writeln!(
            md,
            "| scenario | claim | outcome | verdict | sent | read | duplicates | lost | rejected | notes |\n\
             |---|---|---|---|---|---|---|---|---|---|"
        );
        for r in &t.scenarios {
            let verdict = match &r.verdict {
                Verdict::Pass => "pass".to_owned(),
                Verdict::Contradicted(w) => format!("CONTRADICTED: {w}"),
                Verdict::Lost(w) => format!("LOSS: {w}"),
                Verdict::Failed(w) => format!("FAILED: {w}"),
                Verdict::NotApplicable(w) => format!("not applicable: {w}"),
            };
            match &r.measured {
                Some(m) => {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        r.scenario.id(),
                        cell(&claim_words(&r.claim)),
                        cell(&r.outcome),
                        cell(&verdict),
                        m.sent,
                        m.read,
                        m.visible_duplicates,
                        m.lost.len(),
                        m.dead_lettered.len(),
                        cell(&m.notes.join("; "))
                    );
                }
                None => {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} | | | | | | |",
                        r.scenario.id(),
                        cell(&claim_words(&r.claim)),
                        cell(&r.outcome),
                        cell(&verdict)
                    );
                }
            }
        }
        md.push('\n');
    }
    md
}
