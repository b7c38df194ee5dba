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

/// The words for a set of cells' sizes: the one size they share, or `mixed`.
pub(super) fn sizes_words(sizes: impl IntoIterator<Item = Option<SuiteSize>>) -> Option<String> {
    let mut seen: Vec<SuiteSize> = sizes.into_iter().flatten().collect();
    seen.sort_by_key(|s| s.id());
    seen.dedup();
    match seen.as_slice() {
        [] => None,
        [one] => Some(one.id().to_owned()),
        _ => Some("mixed".to_owned()),
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
