//! The Markdown rendering of a report: legend, one-glance summary, not-verified list, the
//! meter-readings figures once, then the details per target.

use std::fmt::Write as _;

use pico_sink::Scenario;

use pico_conformance::SuiteSize;
use pico_conformance::horizon::Upkeep;
use pico_conformance::meter::DeliveryMode;
use pico_conformance::report::{Report, TargetReport, TargetStatus, Verdict, claim_words};
use pico_conformance::scenarios::meter::ModeFigures;

use super::cell::{LEGEND, short_verdict};

/// Escapes a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Every scenario any target ran, in table order.
pub(super) fn scenarios(report: &Report) -> Vec<Scenario> {
    let mut all: Vec<Scenario> = report
        .targets
        .iter()
        .flat_map(|t| t.scenarios.iter().map(|s| s.scenario))
        .collect();
    all.sort();
    all.dedup();
    all
}

/// The words for a set of cells' sizes: the one size they share, or `mixed`.
fn sizes_words(sizes: impl IntoIterator<Item = Option<SuiteSize>>) -> Option<String> {
    let mut seen: Vec<SuiteSize> = sizes.into_iter().flatten().collect();
    seen.sort_by_key(|s| s.id());
    seen.dedup();
    match seen.as_slice() {
        [] => None,
        [one] => Some(one.id().to_owned()),
        _ => Some("mixed".to_owned()),
    }
}

/// How a target ran, in a few words (`native · full`), or `—`.
pub(super) fn ran(t: &TargetReport) -> String {
    let sizes = sizes_words(
        t.scenarios
            .iter()
            .map(|c| t.provenance(c).size)
            .chain([t.size]),
    );
    match (t.provider, sizes) {
        (Some(p), Some(s)) => format!("{p} · {s}"),
        (Some(p), None) => p.to_string(),
        _ => "—".to_owned(),
    }
}

/// The summary cell of `target` for `scenario`.
pub(super) fn summary_cell(t: &TargetReport, scenario: Scenario) -> String {
    if t.status != TargetStatus::Verified {
        return "—".to_owned();
    }
    t.scenarios
        .iter()
        .find(|r| r.scenario == scenario)
        .map_or_else(|| "not run".to_owned(), short_verdict)
}

/// The horizon a target named in its replay-after-horizon cell, in short (`—` where it has
/// none: not verified, not run, or a cell measured before cells carried it).
pub(super) fn horizon_cell(t: &TargetReport) -> String {
    horizon_of(t).map_or_else(|| "—".to_owned(), |u| u.horizon.short())
}

/// The upkeep of a target's replay-after-horizon cell, with the horizon it named.
pub(super) fn horizon_of(t: &TargetReport) -> Option<&Upkeep> {
    if t.status != TargetStatus::Verified {
        return None;
    }
    t.scenarios
        .iter()
        .find(|r| r.scenario == Scenario::ReplayAfterHorizon)
        .and_then(|r| r.measured.as_ref())
        .and_then(|m| m.upkeep.as_ref())
}

/// The verdict in words, for the details.
pub(super) fn verdict_words(v: &Verdict) -> String {
    match v {
        Verdict::Pass => "pass".to_owned(),
        Verdict::Contradicted(w) => format!("CONTRADICTED: {w}"),
        Verdict::Lost(w) => format!("LOSS: {w}"),
        Verdict::Failed(w) => format!("FAILED: {w}"),
        Verdict::NotApplicable(w) => format!("not applicable: {w}"),
        Verdict::NotExercised(w) => format!("not exercised: {w}"),
    }
}

/// The meter-readings figures of a target, when it ran the workload.
pub(super) fn meter_figures(t: &TargetReport) -> Option<&[ModeFigures]> {
    t.scenarios.iter().find_map(|s| {
        s.measured
            .as_ref()
            .filter(|m| !m.meter.is_empty())
            .map(|m| m.meter.as_slice())
    })
}

/// The figures of one mode.
pub(super) fn mode(figures: &[ModeFigures], mode: DeliveryMode) -> Option<&ModeFigures> {
    figures.iter().find(|f| f.mode == mode)
}

/// Offsets the counter found missing that the delivery mode did not drop: the sink's loss.
pub(super) fn lost_by_sink(figures: &[ModeFigures]) -> usize {
    figures
        .iter()
        .map(|f| {
            f.lost
                .iter()
                .filter(|o| !f.dropped_by_delivery.contains(o))
                .count()
        })
        .sum()
}

/// A serving difference in words (`none` when there is none).
pub(super) fn serving_words(f: &ModeFigures) -> String {
    if f.serving_diff.is_empty() {
        return "none".to_owned();
    }
    f.serving_diff
        .iter()
        .map(|(r, d)| format!("{r} {d:+.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the meter-readings section says before its table.
pub(super) const METER_INTRO: &str = "The 2 400 readings of `meter_readings.py` (a bit-for-bit Rust \
port) are delivered into each destination as offsets of one topic-partition in the workload's three \
delivery modes, **read back from the destination** and run through the workload's pipeline with its \
dedupe stage off. Baseline: 2 200 consumption rows, 55 summary cells, no serving difference. \
*Acknowledge before write* (the workload's at-most-once) drops readings by design of the delivery \
mode: the runtime moved past them before they were written, and the offset counter outside the sink \
names every one of them; that is the mode's loss, not the sink's. *Redelivered* (at-least-once) \
hands the sink the same offsets again: what the destination keeps of them is the sink's doing. \
*Keyed* is the workload's own exactly-once (a keyed write upstream). The last column, the loss \
the sink is responsible for, must be 0.";

/// Renders the Markdown page from a report.
pub fn render_markdown(report: &Report) -> String {
    let scenarios = scenarios(report);
    let mut md = String::new();
    let _ = writeln!(md, "# Duplicate behaviour per sink and failure scenario\n");
    let _ = writeln!(
        md,
        "Generated by `{}` from `duplicate-behaviour.json` (also rendered as \
         [`duplicate-behaviour.html`](duplicate-behaviour.html)); do not edit by hand \
         (regenerate with `./scripts/main-job.sh`, re-render with \
         `cargo run -p pico-suite -- render`).\n",
        report.generated_by
    );
    let _ = writeln!(
        md,
        "Each cell is what the destination held after the scenario, read back from the \
         destination itself and compared with an offset counter kept outside the sink. A cell \
         that contradicts the sink's own `describe()` claim, or loses a record, fails the run.\n"
    );
    let _ = writeln!(md, "| mark | meaning |\n|---|---|");
    for (mark, meaning) in LEGEND {
        let _ = writeln!(md, "| {mark} | {meaning} |");
    }

    let _ = writeln!(md, "\n## Summary\n");
    let mut header = "| target | ran |".to_owned();
    let mut rule = "|---|---|".to_owned();
    for s in &scenarios {
        let _ = write!(header, " {} |", s.id());
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header} horizon |\n{rule}---|");
    for t in &report.targets {
        let _ = write!(md, "| {} | {} |", cell(&t.target), ran(t));
        for s in &scenarios {
            let _ = write!(md, " {} |", cell(&summary_cell(t, *s)));
        }
        let _ = writeln!(md, " {} |", cell(&horizon_cell(t)));
    }
    render_horizons(report, &mut md);

    let skipped = report.unverified();
    if !skipped.is_empty() {
        let _ = writeln!(md, "\n## Not verified here\n");
        let _ = writeln!(md, "| target | crate | reason | date |\n|---|---|---|---|");
        for t in skipped {
            if let TargetStatus::NotVerifiedHere(reason) = &t.status {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} |",
                    cell(&t.target),
                    t.sink_crate,
                    cell(reason),
                    t.date
                );
            }
        }
    }

    render_meter(report, &mut md);
    if let Some(controls) = &report.controls {
        super::controls::render(controls, &mut md);
    }

    let _ = writeln!(md, "\n## Details\n");
    for t in report
        .targets
        .iter()
        .filter(|t| t.status == TargetStatus::Verified)
    {
        render_details(t, &mut md);
    }
    md
}

/// What each target's replay horizon is, what the suite did to go past it, and what an old
/// batch replayed beyond it became.
fn render_horizons(report: &Report, md: &mut String) {
    let rows: Vec<(&TargetReport, &Upkeep)> = report
        .targets
        .iter()
        .filter_map(|t| horizon_of(t).map(|u| (t, u)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Replay horizon\n");
    let _ = writeln!(md, "{HORIZON_INTRO}\n");
    let _ = writeln!(
        md,
        "| target | horizon | upkeep before the replay | the old batch replayed |\n|---|---|---|---|"
    );
    for (t, upkeep) in rows {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            cell(&t.target),
            cell(&upkeep.horizon.words()),
            cell(&upkeep.steps_words()),
            cell(&summary_cell(t, Scenario::ReplayAfterHorizon))
        );
    }
}

/// What the replay-horizon section says before its table.
pub(super) const HORIZON_INTRO: &str = "How far back each destination still recognises a \
replay (a consumer group reset to an old offset, a recovery replay from a backup topic). \
Scenario `replay-after-horizon` delivers a batch of 100 records, then 20 000 later records on the \
same partition in 40 writes, runs the destination's own upkeep, and hands the old batch to a new \
sink instance again. A horizon of *none* means the mechanism recognises the replay as long as \
the destination holds what it replays; a count or a duration is where recognition ends, and the \
last column shows what a replay past it left.";

fn render_meter(report: &Report, md: &mut String) {
    use DeliveryMode::{AtLeastOnce, AtMostOnce, Keyed};
    let rows: Vec<(&TargetReport, &[ModeFigures])> = report
        .targets
        .iter()
        .filter_map(|t| meter_figures(t).map(|f| (t, f)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n## Meter-readings workload\n\n{METER_INTRO}\n");
    let _ = writeln!(
        md,
        "| target | acknowledge before write: dropped by the mode | redelivered: visible duplicates | redelivered: polluted cells | redelivered: serving difference | keyed: polluted cells | lost by the sink |\n\
         |---|---:|---:|---:|---|---:|---:|"
    );
    for (t, figures) in rows {
        let dropped = mode(figures, AtMostOnce).map_or_else(
            || "not run".to_owned(),
            |f| {
                let named = f.dropped_by_delivery.iter().all(|o| f.lost.contains(o));
                format!(
                    "{}{}",
                    f.dropped_by_delivery.len(),
                    if named {
                        ", all named by the counter"
                    } else {
                        ", NOT all named"
                    }
                )
            },
        );
        let redelivered = mode(figures, AtLeastOnce);
        let keyed = mode(figures, Keyed);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&t.target),
            dropped,
            redelivered.map_or_else(|| "—".into(), |f| f.visible_duplicates.to_string()),
            redelivered.map_or_else(
                || "—".into(),
                |f| format!("{} of {}", f.polluted_cells, f.summary_cells)
            ),
            redelivered.map_or_else(|| "—".into(), serving_words),
            keyed.map_or_else(
                || "—".into(),
                |f| format!("{} of {}", f.polluted_cells, f.summary_cells)
            ),
            lost_by_sink(figures)
        );
    }
}

fn render_details(t: &TargetReport, md: &mut String) {
    let title = if t.title.is_empty() {
        String::new()
    } else {
        format!(" — {}", t.title)
    };
    let _ = writeln!(md, "### {}{title} (`{}`)\n", t.target, t.sink_crate);
    if let Some(m) = &t.mechanism {
        let _ = writeln!(md, "Mechanism: {m}\n");
    }
    if let (Some(p), Some(s)) = (t.provider, &t.server) {
        let size = t
            .size
            .map(|s| format!("; long scenarios at {} size", s.id()))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "Ran on {} {} through the {p} provider, newest run {}{size}; each cell's own run \
             (date · size · code) is in its last column.\n",
            s.name, s.version, t.date
        );
    }
    let _ = writeln!(
        md,
        "| scenario | claim | outcome | verdict | sent | read | duplicates | lost | rejected | notes | ran |\n\
         |---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in &t.scenarios {
        let _ = write!(
            md,
            "| {} | {} | {} | {} |",
            r.scenario.id(),
            cell(&claim_words(&r.claim)),
            cell(&r.outcome),
            cell(&verdict_words(&r.verdict))
        );
        match &r.measured {
            Some(m) => {
                let _ = write!(
                    md,
                    " {} | {} | {} | {} | {} | {} |",
                    m.sent,
                    m.read,
                    m.visible_duplicates,
                    m.lost.len(),
                    m.dead_lettered.len(),
                    cell(&m.notes.join("; "))
                );
            }
            None => md.push_str(" | | | | | |"),
        }
        let _ = writeln!(md, " {} |", cell(&t.provenance(r).words()));
    }
    md.push('\n');
}

/// The verdicts of one sink crate's targets, as a Markdown block for the crate's README.
pub fn render_crate_verdicts(report: &Report, sink_crate: &str) -> String {
    let targets: Vec<&TargetReport> = report
        .targets
        .iter()
        .filter(|t| t.sink_crate == sink_crate)
        .collect();
    let mut md = String::new();
    if targets.is_empty() {
        let _ = writeln!(md, "No conformance run covers this crate yet.");
        return md;
    }
    let _ = writeln!(
        md,
        "Measured by the conformance suite against a real server, quoted from the generated \
         [duplicate-behaviour table](../../docs/duplicate-behaviour.md) (legend there):\n"
    );
    let mut header = "| scenario |".to_owned();
    let mut rule = "|---|".to_owned();
    for t in &targets {
        let _ = write!(header, " {} |", cell(&t.target));
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    for s in scenarios(report) {
        let _ = write!(md, "| {} |", s.id());
        for t in &targets {
            let _ = write!(md, " {} |", cell(&summary_cell(t, s)));
        }
        md.push('\n');
    }
    let mut notes = String::new();
    for t in &targets {
        match (&t.status, &t.server) {
            (TargetStatus::NotVerifiedHere(reason), _) => {
                let _ = writeln!(notes, "- `{}`: not verified here ({reason}).", t.target);
            }
            (TargetStatus::Verified, Some(s)) => {
                let _ = writeln!(
                    notes,
                    "- `{}`: {} {}, {}.",
                    t.target, s.name, s.version, t.date
                );
                if let Some(upkeep) = horizon_of(t) {
                    let _ = writeln!(
                        notes,
                        "- `{}` replay horizon: {}; upkeep before the old batch came again: {}.",
                        t.target,
                        upkeep.horizon.words(),
                        upkeep.steps_words()
                    );
                }
            }
            _ => {}
        }
    }
    let _ = write!(md, "\n{notes}");
    md
}

/// The line that opens the generated verdict block in a sink crate's README.
pub const VERDICTS_BEGIN: &str =
    "<!-- generated verdicts: `cargo run -p pico-suite -- render` rewrites this block -->";
/// The line that closes it.
pub const VERDICTS_END: &str = "<!-- end of generated verdicts -->";

/// `readme` with its verdict block replaced by `block`, or `None` when it has no block.
pub fn splice_verdicts(readme: &str, block: &str) -> Option<String> {
    let start = readme.find(VERDICTS_BEGIN)? + VERDICTS_BEGIN.len();
    let end = start + readme[start..].find(VERDICTS_END)?;
    Some(format!("{}\n{block}{}", &readme[..start], &readme[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_names_the_one_size_its_cells_share_or_mixed() {
        assert_eq!(
            sizes_words([Some(SuiteSize::Full), None, Some(SuiteSize::Full)]).as_deref(),
            Some("full")
        );
        assert_eq!(
            sizes_words([Some(SuiteSize::Full), Some(SuiteSize::Reduced)]).as_deref(),
            Some("mixed")
        );
        assert_eq!(sizes_words([None]), None);
    }
}
