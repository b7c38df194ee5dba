//! [`Provenance`]: where one cell's figures came from — the date, size and code of the run that
//! measured it. A row merged from several runs keeps each cell's own.

use serde::{Deserialize, Serialize};

use crate::scenarios::SuiteSize;

/// The run that measured a cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Date of the run (UTC, YYYY-MM-DD).
    pub date: String,
    /// How large the long scenarios ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<SuiteSize>,
    /// The code version that ran (a commit), when the runner was told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// How long the cell ran, in whole seconds (cells measured before cells were timed have
    /// none). The runner starts the targets that took longest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u64>,
}

impl Provenance {
    /// In a few words: `2026-12-01 · full · baf1000 · 35 s`.
    pub fn words(&self) -> String {
        let mut parts = vec![self.date.clone()];
        parts.extend(self.size.map(|s| s.id().to_owned()));
        parts.extend(self.code.clone());
        parts.extend(self.seconds.map(|s| format!("{s} s")));
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_what_is_known() {
        let p = Provenance {
            date: "2026-12-01".into(),
            size: Some(SuiteSize::Reduced),
            code: Some("baf1000".into()),
            seconds: Some(35),
        };
        assert_eq!(p.words(), "2026-12-01 · reduced · baf1000 · 35 s");
        let old = Provenance {
            date: "2026-11-30".into(),
            size: None,
            code: None,
            seconds: None,
        };
        assert_eq!(old.words(), "2026-11-30");
    }
}
