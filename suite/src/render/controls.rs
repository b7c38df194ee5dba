//! The controls section of both pages: sinks broken on purpose, and which scenario caught each.

use std::fmt::Write as _;

use pico_conformance::report::{ControlsTable, Finding, Mark};
use pico_sink::Scenario;

use super::html::{esc, inline};

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
