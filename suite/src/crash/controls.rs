//! The crash suite's controls: pico-kafka built with its `mutants` feature and told to break the
//! at-least-once contract in one way (`[chaos] mutant`), run through the kill case against
//! PostgreSQL. A suite that cannot tell such a runtime from the honest one proves nothing about
//! the honest one, so each control must be **caught**: records lost, counted and named, or, for
//! a control that breaks what the runtime reports rather than what it delivers, the case's
//! metrics check failing ([`super::scraped`]). A control not caught is **missed** and fails
//! the run.

use serde::{Deserialize, Serialize};

use super::destinations::CrashSink;
use super::{Case, CaseResult};

/// A deliberately broken runtime or sink: the names are pico-kafka's `[chaos] mutant` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Control {
    /// Commits each batch's end when the batch is cut from what was polled, before the sink
    /// wrote it (as Apache Iggy's connector runtime does).
    CommitAtPoll,
    /// When one partition commits, commits every other partition at its read position, past
    /// the batches their workers still have in flight.
    CommitOtherPartitions,
    /// A sink that confirms a batch at once and writes it seconds later.
    AckBeforeDurable,
    /// A sink that reports the records the destination already held as written: nothing lost,
    /// the metrics wrong.
    ReplaysAsWritten,
}

/// What catches a control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaughtBy {
    /// Records lost, counted.
    Loss,
    /// The metrics scraped disagreeing with what the case measured.
    Metrics,
}

impl Control {
    /// Every control, in report order.
    pub const ALL: [Control; 4] = [
        Control::CommitAtPoll,
        Control::CommitOtherPartitions,
        Control::AckBeforeDurable,
        Control::ReplaysAsWritten,
    ];

    /// The sink the controls run against by default (`pico-crash --control-sink` names
    /// another): keyed, so a loss is never hidden by a duplicate.
    pub const SINK: CrashSink = CrashSink::POSTGRES;

    /// The case the controls run: kills land where a broken commit order loses records.
    pub const CASE: Case = Case::Kill;

    /// The mutant's name in the pipeline file and the report.
    pub fn id(self) -> &'static str {
        match self {
            Control::CommitAtPoll => "commit-at-poll",
            Control::CommitOtherPartitions => "commit-other-partitions",
            Control::AckBeforeDurable => "ack-before-durable",
            Control::ReplaysAsWritten => "replays-as-written",
        }
    }

    /// What must catch it.
    pub fn caught_by(self) -> CaughtBy {
        match self {
            Control::ReplaysAsWritten => CaughtBy::Metrics,
            _ => CaughtBy::Loss,
        }
    }

    /// What it breaks, for the report of `runtime` (`pico-kafka`: its metric names).
    pub fn breaks(self, runtime: &str) -> String {
        let text = match self {
            Control::CommitAtPoll => {
                "the runtime commits a batch's offset when it cuts the batch, before the sink wrote it"
            }
            Control::CommitOtherPartitions => {
                "on each commit the runtime commits every other partition at its read position, \
                 past their batches in flight"
            }
            Control::AckBeforeDurable => {
                "the sink confirms a batch at once and writes it 3 s later"
            }
            Control::ReplaysAsWritten => {
                return format!(
                    "the sink reports the records the destination already held as written \
                     (`{}_records_already_present_total` stays 0 through every replay)",
                    runtime.replace('-', "_")
                );
            }
        };
        text.to_owned()
    }

    /// Its line in the `[chaos]` section.
    pub fn chaos_line(self) -> String {
        format!("mutant = \"{}\"\n", self.id())
    }
}

/// What one control's run showed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ControlResult {
    /// The control.
    pub control: Control,
    /// Its run of the kill case.
    pub result: CaseResult,
}

impl ControlResult {
    /// Caught: the case counted records lost, or, for a control of what the runtime reports,
    /// its metrics check failed.
    pub fn caught(&self) -> bool {
        match self.control.caught_by() {
            CaughtBy::Loss => self.result.lost_count > 0,
            CaughtBy::Metrics => self.metrics_failure().is_some(),
        }
    }

    fn metrics_failure(&self) -> Option<String> {
        self.result
            .metrics
            .as_ref()
            .and_then(super::scraped::MetricsCheck::failure)
    }

    /// Why a control that was not caught failed the run.
    pub fn missed(&self) -> Option<String> {
        if self.caught() {
            return None;
        }
        let how = match (&self.result.verdict, self.control.caught_by()) {
            (Ok(()), _) => "the kill case passed".to_owned(),
            (Err(why), CaughtBy::Loss) => format!("the kill case found no loss ({why})"),
            (Err(why), CaughtBy::Metrics) => {
                format!("the kill case's metrics agreed ({why})")
            }
        };
        Some(format!("control {} missed: {how}", self.control.id()))
    }

    /// Its cell in the controls table.
    pub fn cell(&self) -> String {
        let r = &self.result;
        if self.caught() {
            match (self.control.caught_by(), self.metrics_failure()) {
                (CaughtBy::Metrics, Some(why)) => format!("caught: {why}"),
                _ => format!(
                    "caught: {} of {} lost (first: {})",
                    r.lost_count,
                    r.produced,
                    r.lost.join(", ")
                ),
            }
        } else if r.produced == 0 {
            format!(
                "MISSED: did not run ({})",
                r.verdict.as_ref().err().map_or("", String::as_str)
            )
        } else if self.control.caught_by() == CaughtBy::Metrics {
            "MISSED: the metrics agreed".to_owned()
        } else {
            "MISSED: 0 lost".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn case(lost: u64, verdict: Result<(), String>) -> CaseResult {
        CaseResult {
            produced: 4_000,
            read: 4_000 - lost,
            distinct: 4_000 - lost,
            lost: (0..lost.min(3)).map(|o| format!("0:{o}")).collect(),
            lost_count: lost,
            verdict,
            ..CaseResult::failed(Control::SINK, Control::CASE, String::new())
        }
    }

    #[test]
    fn a_control_is_caught_only_by_a_counted_loss() {
        let lost = ControlResult {
            control: Control::CommitAtPoll,
            result: case(25, Err("25 records lost".into())),
        };
        assert!(lost.caught());
        assert_eq!(lost.missed(), None);
        assert!(lost.cell().starts_with("caught: 25 of 4000 lost"));
        // A failing case that lost nothing (a duplicate, a stall) does not catch a control.
        let failed = ControlResult {
            control: Control::AckBeforeDurable,
            result: case(0, Err("only 3 of 10 kills effective".into())),
        };
        assert!(!failed.caught());
        assert!(failed.missed().unwrap().contains("ack-before-durable"));
        let passed = ControlResult {
            control: Control::CommitOtherPartitions,
            result: case(0, Ok(())),
        };
        assert_eq!(passed.cell(), "MISSED: 0 lost");
    }

    #[test]
    fn a_metrics_control_is_caught_only_by_its_metrics_check() {
        use super::super::scraped::MetricsCheck;
        let mut result = case(0, Err("metrics: no record already present".into()));
        let control = |result: CaseResult| ControlResult {
            control: Control::ReplaysAsWritten,
            result,
        };
        // A failing case without a metrics disagreement does not catch it.
        assert!(!control(result.clone()).caught());
        result.metrics = Some(MetricsCheck {
            problems: vec!["no record already present after 10 effective kills".into()],
            ..MetricsCheck::default()
        });
        let caught = control(result.clone());
        assert!(caught.caught());
        assert!(
            caught.cell().starts_with("caught: metrics: no record"),
            "{}",
            caught.cell()
        );
        result.metrics = Some(MetricsCheck::default());
        let missed = control(result);
        assert_eq!(missed.cell(), "MISSED: the metrics agreed");
        assert!(missed.missed().unwrap().contains("replays-as-written"));
    }

    #[test]
    fn every_control_names_a_mutant_line() {
        for c in Control::ALL {
            assert_eq!(c.chaos_line(), format!("mutant = \"{}\"\n", c.id()));
            let back: Control = serde_json::from_str(&format!("\"{}\"", c.id())).unwrap();
            assert_eq!(back, c);
        }
    }
}
