//! The duplicate-behaviour report as users read it: the Markdown table
//! (`docs/duplicate-behaviour.md`), the self-contained HTML page, and the verdict block spliced
//! into each sink crate's README. Rendered from a [`pico_conformance::report::Report`] (the
//! committed JSON) and never edited by hand; `tests/generated_docs.rs` holds them to it.

mod cell;
mod controls;
mod html;
mod markdown;

pub use cell::{LEGEND, short_verdict};
pub use html::render_html;
pub use markdown::{
    VERDICTS_BEGIN, VERDICTS_END, render_crate_verdicts, render_markdown, splice_verdicts,
};
