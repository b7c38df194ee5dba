//! Negative controls of the pico-sinks conformance suite.
//!
//! A verdict that cannot fail proves nothing. Each [`Control`] is one SQLite sink broken in
//! one way on purpose — it drops a record, appends while claiming no duplicate, dead-letters a
//! valid record or one it stored, leaves a torn record when its consume is cancelled, answers
//! before its write is visible — run through every scenario with the same public library a
//! sink's author uses ([`pico_conformance::runner::run_destination`]). [`run`] judges each
//! control's row ([`ControlRow::judge`]): the suite must catch every control, in at least one
//! scenario, for the reason it was broken, and must pass the same sink unbroken
//! ([`Control::Honest`]) everywhere. The table lands in the duplicate-behaviour report
//! (`pico-conformance controls`); this crate's test fails on a missed control.

mod control;
mod destination;
mod sink;

pub use control::Control;
pub use destination::ControlDestination;
pub use sink::ControlSink;

use pico_conformance::report::{ControlRow, ControlsTable, Provenance};
use pico_conformance::runner::{Progress, RunOptions, run_destination, today};
use pico_conformance::scenarios::SuiteSize;

/// Runs every control through every scenario at `size` and judges each; `code` stamps the
/// table with the code version under test.
pub async fn run(size: SuiteSize, code: Option<String>, progress: &dyn Progress) -> ControlsTable {
    let opts = RunOptions {
        size,
        code: code.clone(),
        ..RunOptions::default()
    };
    let mut rows = Vec::with_capacity(Control::ALL.len());
    for control in Control::ALL {
        let row = match ControlDestination::new(control) {
            Ok(dest) => {
                let row = run_destination(
                    control.id(),
                    env!("CARGO_PKG_NAME"),
                    None,
                    &dest,
                    &[],
                    &opts,
                    progress,
                )
                .await;
                ControlRow::judge(control.id(), control.does(), control.expected(), &row)
            }
            Err(why) => ControlRow {
                control: control.id().to_owned(),
                does: control.does().to_owned(),
                expected: control.expected(),
                not_run: Some(why),
                cells: Vec::new(),
            },
        };
        rows.push(row);
    }
    ControlsTable {
        ran: Provenance {
            date: today(),
            size: Some(size),
            code,
            seconds: None,
        },
        rows,
    }
}
