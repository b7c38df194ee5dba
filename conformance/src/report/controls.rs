//! The controls table: sinks broken on purpose (and the same sink unbroken), each run through
//! every scenario, and whether the suite caught each one for the reason it was broken. A suite
//! whose verdicts cannot fail proves nothing; this table is the proof that they can.

use std::fmt::Write as _;

use pico_sink::Scenario;
use serde::{Deserialize, Serialize};

use super::finding::Finding;
use super::html::{esc, inline};
use super::{Provenance, TargetReport, TargetStatus, Verdict};

/// How one scenario judged one control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// The cell failed, and for the reason the control was broken.
    Caught,
    /// The cell failed, for another reason only.
    OtherReason,
    /// The cell passed: this scenario does not see the defect.
    Missed,
    /// The scenario's fault never happened.
    NotExercised,
    /// The scenario has no meaning for the control's destination.
    NotApplicable,
    /// The honest sink passed.
    Clean,
    /// The honest sink failed: the suite accuses a sink that does nothing wrong.
    FalseAlarm,
}

impl Mark {
    /// The mark as shown in the table.
    pub fn words(self) -> &'static str {
        match self {
            Mark::Caught => "caught",
            Mark::OtherReason => "other reason",
            Mark::Missed => "missed",
            Mark::NotExercised => "○ not exercised",
            Mark::NotApplicable => "n/a",
            Mark::Clean => "clean",
            Mark::FalseAlarm => "✗ false alarm",
        }
    }
}

/// One scenario's judgement of one control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlCell {
    /// The scenario.
    pub scenario: Scenario,
    /// How it judged the control.
    pub mark: Mark,
    /// What it found wrong (empty when the cell passed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<Finding>,
    /// The cell's outcome in words, as in the duplicate-behaviour table.
    pub outcome: String,
}

impl ControlCell {
    /// The cell as shown: its mark, and for another reason what was found.
    pub fn words(&self) -> String {
        match self.mark {
            // A scenario that failed before it measured anything found no kind of wrong.
            Mark::OtherReason if self.found.is_empty() => {
                "other reason: the scenario failed".to_owned()
            }
            Mark::OtherReason => format!(
                "other reason: {}",
                self.found
                    .iter()
                    .map(|f| f.words())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            mark => mark.words().to_owned(),
        }
    }
}

/// One control through every scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlRow {
    /// The control's id.
    pub control: String,
    /// What the control does wrong, in words.
    pub does: String,
    /// What the suite must find (`None`: the honest sink, which must pass every scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Finding>,
    /// Why the control did not run, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// Per scenario.
    pub cells: Vec<ControlCell>,
}

impl ControlRow {
    /// Judges a control's row of the duplicate-behaviour table: each cell is caught when it
    /// failed and `expected` is among what it found.
    pub fn judge(
        control: &str,
        does: &str,
        expected: Option<Finding>,
        row: &TargetReport,
    ) -> ControlRow {
        let not_run = match &row.status {
            TargetStatus::NotVerifiedHere(why) => Some(why.clone()),
            TargetStatus::Verified => None,
        };
        let cells = row
            .scenarios
            .iter()
            .map(|cell| {
                let found = cell
                    .measured
                    .as_ref()
                    .map(|m| Finding::of(&cell.claim, m))
                    .unwrap_or_default();
                let mark = match (&cell.verdict, expected) {
                    (Verdict::NotApplicable(_), _) => Mark::NotApplicable,
                    (Verdict::NotExercised(_), _) => Mark::NotExercised,
                    (Verdict::Pass, None) => Mark::Clean,
                    (Verdict::Pass, Some(_)) => Mark::Missed,
                    (_, None) => Mark::FalseAlarm,
                    (_, Some(f)) if found.contains(&f) => Mark::Caught,
                    (_, Some(_)) => Mark::OtherReason,
                };
                ControlCell {
                    scenario: cell.scenario,
                    mark,
                    found,
                    outcome: cell.outcome.clone(),
                }
            })
            .collect();
        ControlRow {
            control: control.to_owned(),
            does: does.to_owned(),
            expected,
            not_run,
            cells,
        }
    }

    /// The scenarios that caught the control for the right reason.
    pub fn caught_by(&self) -> Vec<Scenario> {
        self.cells
            .iter()
            .filter(|c| c.mark == Mark::Caught)
            .map(|c| c.scenario)
            .collect()
    }
}

/// Every control, judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlsTable {
    /// The run that judged them.
    pub ran: Provenance,
    /// Per control, the honest sink first.
    pub rows: Vec<ControlRow>,
}

impl ControlsTable {
    /// What makes the table a failure: a control no scenario caught for its reason, a control
    /// that did not run, an honest sink that did not pass every scenario.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for row in &self.rows {
            if let Some(why) = &row.not_run {
                problems.push(format!("{}: did not run: {why}", row.control));
                continue;
            }
            match row.expected {
                Some(expected) if row.caught_by().is_empty() => problems.push(format!(
                    "{} ({}) was not found as {:?} by any scenario: {}",
                    row.control,
                    row.does,
                    expected.words(),
                    row.cells
                        .iter()
                        .map(|c| format!("{} {}", c.scenario.id(), c.mark.words()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Some(_) => {}
                None => {
                    problems.extend(row.cells.iter().filter(|c| c.mark != Mark::Clean).map(|c| {
                        format!(
                            "{} is {} in {}: {}",
                            row.control,
                            c.mark.words(),
                            c.scenario.id(),
                            c.outcome
                        )
                    }))
                }
            }
        }
        problems
    }
}

const INTRO: &str = "Each row is a sink over an in-process SQLite table broken in one way on \
purpose (`conformance/controls`), run through every scenario by the same public library as the \
rows above; the honest row is the same sink unbroken. A control is *caught* where its cell \
fails for the reason it was broken, *other reason* where the cell fails for another one, \
*missed* where the cell passes. Every control must be caught by at least one scenario and the \
honest sink must pass every one: `cargo test -p pico-conformance-controls` fails otherwise.";

/// The HTML page's class for a mark (the colours of the summary matrix).
fn class(mark: Mark) -> &'static str {
    match mark {
        Mark::Caught | Mark::Clean => "ok",
        Mark::OtherReason => "repeat",
        Mark::FalseAlarm => "fail",
        Mark::Missed => "skip",
        Mark::NotExercised | Mark::NotApplicable => "na",
    }
}

/// Renders the controls section of the HTML page.
pub(super) fn render_html(table: &ControlsTable, h: &mut String) {
    let _ = write!(
        h,
        "<h2>Controls: sinks broken on purpose</h2>\n<p>{} Ran: {}.</p>\n<table class=\"matrix\">\n\
         <tr><th>control</th><th>what it does</th><th>must be found as</th>",
        inline(INTRO),
        esc(&table.ran.words())
    );
    if let Some(first) = table.rows.first() {
        for c in &first.cells {
            let _ = write!(h, "<th>{}</th>", c.scenario.id());
        }
    }
    h.push_str("</tr>\n");
    for row in &table.rows {
        let expected = row
            .expected
            .map_or("nothing: passes every scenario", Finding::words);
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{expected}</td>",
            esc(&row.control),
            esc(&row.does)
        );
        if let Some(why) = &row.not_run {
            let _ = write!(h, "<td class=\"fail\">did not run: {}</td>", esc(why));
        }
        for c in &row.cells {
            let _ = write!(
                h,
                "<td class=\"v {}\" title=\"{}\">{}</td>",
                class(c.mark),
                esc(&c.outcome),
                esc(&c.words())
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Renders the controls section of the Markdown page.
pub(super) fn render(table: &ControlsTable, md: &mut String) {
    let _ = writeln!(
        md,
        "\n## Controls: sinks broken on purpose\n\n{INTRO} Ran: {}.\n",
        table.ran.words()
    );
    let scenarios: Vec<Scenario> = table
        .rows
        .first()
        .map(|r| r.cells.iter().map(|c| c.scenario).collect())
        .unwrap_or_default();
    let mut header = "| control | what it does | must be found as |".to_owned();
    let mut rule = "|---|---|---|".to_owned();
    for s in &scenarios {
        let _ = write!(header, " {} |", s.id());
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    for row in &table.rows {
        let expected = row
            .expected
            .map_or("nothing: passes every scenario", Finding::words);
        let _ = write!(md, "| {} | {} | {expected} |", row.control, row.does);
        if let Some(why) = &row.not_run {
            let _ = write!(md, " did not run: {} |", why.replace('|', "\\|"));
        }
        for c in &row.cells {
            let _ = write!(md, " {} |", c.words());
        }
        md.push('\n');
    }
}
