//! What a measurement shows wrong, by kind: the reasons a cell fails, named so that a control
//! (a sink broken on purpose) can say which one the suite must find.

use pico_sink::Claim;
use serde::{Deserialize, Serialize};

use crate::ledger::Measured;

/// One kind of wrong a measurement can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    /// Records sent, not dead-lettered, and not in the destination.
    Lost,
    /// Records reported already present that the destination cannot have held before the
    /// call.
    PresentNotHeld,
    /// Records rejected as refused that the destination holds.
    RejectedButStored,
    /// Valid records the sink rejected.
    RejectedValid,
    /// A reported outcome that does not account for its batch, or a replay reported as new.
    Miscounted,
    /// More copies than the sink's claim allows.
    Duplicates,
    /// Records read back with another value than was sent, or rows never sent.
    Corrupted,
}

impl Finding {
    /// The finding in a few words.
    pub fn words(self) -> &'static str {
        match self {
            Finding::Lost => "lost",
            Finding::PresentNotHeld => "already present, not held",
            Finding::RejectedButStored => "rejected but stored",
            Finding::RejectedValid => "valid record rejected",
            Finding::Miscounted => "outcome miscounted",
            Finding::Duplicates => "duplicates",
            Finding::Corrupted => "corrupted",
        }
    }

    /// Every finding of a measurement judged against `claim`, in the judge's order.
    pub fn of(claim: &Claim, m: &Measured) -> Vec<Finding> {
        let duplicates =
            !m.mismatches.is_empty() || (m.visible_duplicates > 0 && claim.promises_single_copy());
        [
            (!m.lost.is_empty(), Finding::Lost),
            (!m.present_unheld.is_empty(), Finding::PresentNotHeld),
            (
                !m.rejected_but_stored.is_empty(),
                Finding::RejectedButStored,
            ),
            (!m.rejected_valid.is_empty(), Finding::RejectedValid),
            (!m.miscounted.is_empty(), Finding::Miscounted),
            (duplicates, Finding::Duplicates),
            (!m.corrupted.is_empty() || m.foreign > 0, Finding::Corrupted),
        ]
        .into_iter()
        .filter_map(|(found, finding)| found.then_some(finding))
        .collect()
    }
}
