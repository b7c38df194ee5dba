//! Results, verdicts against each sink's claims, and the generated table.
//!
//! The JSON file is the record of a run; the pages users read are rendered from it alone (by the
//! project's suite, `pico_suite::render`), so they always agree and neither is edited by hand.

use std::collections::BTreeMap;

use pico_sink::{Claim, Scenario};

mod controls;
mod finding;
mod judge;
mod provenance;

pub use controls::{ControlCell, ControlRow, ControlsTable, Mark};
pub use finding::Finding;
pub use judge::{claim_words, judge};
pub use provenance::Provenance;

use serde::{Deserialize, Serialize};

use crate::ledger::Measured;
use crate::provider::ProviderKind;
use crate::scenarios::SuiteSize;
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
    /// Nothing was lost or contradicted, but the scenario's fault never happened (the reason
    /// names it), so the cell proves nothing: shown as such, never as a pass.
    NotExercised(String),
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
    /// The run that measured this cell (a row merged from several runs keeps each cell's own;
    /// cells written before cells carried it take their row's date and size at the merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran: Option<Provenance>,
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
    /// Date of the newest run in the row (UTC, YYYY-MM-DD); each cell has its own in
    /// [`ScenarioReport::ran`].
    pub date: String,
    /// How large the long scenarios ran in the newest run of the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<SuiteSize>,
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
    /// The controls: sinks broken on purpose, and whether the suite caught each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<ControlsTable>,
}

impl TargetReport {
    /// The run that measured `cell`: its own, or the row's for cells written before cells
    /// carried one.
    pub fn provenance(&self, cell: &ScenarioReport) -> Provenance {
        cell.ran.clone().unwrap_or_else(|| Provenance {
            date: self.date.clone(),
            size: self.size,
            code: None,
            seconds: None,
        })
    }
}

impl Report {
    /// An empty report stamped with this tool.
    pub fn new() -> Self {
        Self {
            generated_by: format!("pico-conformance {}", env!("CARGO_PKG_VERSION")),
            targets: Vec::new(),
            controls: None,
        }
    }

    /// The targets that did not run here (skipped with their reason).
    pub fn unverified(&self) -> Vec<&TargetReport> {
        self.targets
            .iter()
            .filter(|t| t.status != TargetStatus::Verified)
            .collect()
    }

    /// Replaces what `newer` covers (per target, per scenario, and the controls table when it
    /// has one), keeping the rest.
    pub fn merge(&mut self, newer: Report) {
        if newer.controls.is_some() {
            self.controls = newer.controls;
        }
        for t in newer.targets {
            match self.targets.iter_mut().find(|o| o.target == t.target) {
                None => self.targets.push(t),
                Some(old) if t.status != TargetStatus::Verified => *old = t,
                Some(old) => {
                    if old.status != TargetStatus::Verified {
                        old.scenarios.clear();
                    }
                    // Cells the newer run leaves keep the run they came from.
                    for kept in &mut old.scenarios {
                        kept.ran.get_or_insert_with(|| Provenance {
                            date: old.date.clone(),
                            size: old.size,
                            code: None,
                            seconds: None,
                        });
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

    /// Per target, the seconds its cells of `size` took when they last ran (targets with no
    /// timed cell of that size are absent): what a run starts the longest targets by.
    pub fn seconds_by_target(&self, size: SuiteSize) -> BTreeMap<String, u64> {
        let mut seconds = BTreeMap::new();
        for t in &self.targets {
            let timed = t
                .scenarios
                .iter()
                .filter_map(|c| c.ran.as_ref())
                .filter(|ran| ran.size == Some(size))
                .filter_map(|ran| ran.seconds);
            let mut total = None;
            for s in timed {
                *total.get_or_insert(0) += s;
            }
            if let Some(total) = total {
                seconds.insert(t.target.clone(), total);
            }
        }
        seconds
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(date: &str, size: SuiteSize, cells: &[(Scenario, Option<&str>)]) -> TargetReport {
        TargetReport {
            target: "t".into(),
            title: String::new(),
            sink_crate: "c".into(),
            status: TargetStatus::Verified,
            mechanism: None,
            provider: Some(ProviderKind::Native),
            server: None,
            docker_image: None,
            date: date.into(),
            size: Some(size),
            scenarios: cells
                .iter()
                .map(|(scenario, code)| ScenarioReport {
                    scenario: *scenario,
                    claim: Claim::NoVisibleDuplicate,
                    outcome: String::new(),
                    verdict: Verdict::Pass,
                    measured: None,
                    ran: code.map(|c| Provenance {
                        date: date.into(),
                        size: Some(size),
                        code: Some(c.into()),
                        seconds: None,
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn a_targets_seconds_sum_its_timed_cells_of_one_size() {
        let mut report = Report::new();
        let mut timed = row(
            "2026-12-03",
            SuiteSize::Full,
            &[
                (Scenario::Outage, Some("abc")),
                (Scenario::LostAck, Some("abc")),
            ],
        );
        for (cell, seconds) in timed.scenarios.iter_mut().zip([30, 12]) {
            if let Some(ran) = &mut cell.ran {
                ran.seconds = Some(seconds);
            }
        }
        report.targets.push(timed);
        let mut untimed = row("2026-12-03", SuiteSize::Full, &[(Scenario::Outage, None)]);
        untimed.target = "u".into();
        report.targets.push(untimed);
        let full = report.seconds_by_target(SuiteSize::Full);
        assert_eq!(full.into_iter().collect::<Vec<_>>(), [("t".to_owned(), 42)]);
        assert!(report.seconds_by_target(SuiteSize::Reduced).is_empty());
    }

    #[test]
    fn a_merge_keeps_each_cells_own_run() {
        let mut old = Report::new();
        // Written before cells carried their run: they take the row's at the merge.
        old.targets.push(row(
            "2026-11-30",
            SuiteSize::Full,
            &[(Scenario::LostAck, None), (Scenario::Outage, None)],
        ));
        let mut newer = Report::new();
        newer.targets.push(row(
            "2026-12-01",
            SuiteSize::Reduced,
            &[(Scenario::Outage, Some("abc"))],
        ));
        old.merge(newer);
        let t = &old.targets[0];
        let words: Vec<String> = t
            .scenarios
            .iter()
            .map(|c| t.provenance(c).words())
            .collect();
        assert_eq!(words, ["2026-11-30 · full", "2026-12-01 · reduced · abc"]);
    }
}
