//! The controls table: sinks broken on purpose (and the same sink unbroken), each run through
//! every scenario, and whether the suite caught each one for the reason it was broken. A suite
//! whose verdicts cannot fail proves nothing; this table is the proof that they can.

use pico_sink::Scenario;
use serde::{Deserialize, Serialize};

use super::finding::Finding;
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
