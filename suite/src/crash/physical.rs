//! What the destination physically holds, judged against what was produced: every stored row
//! counted (ClickHouse before any merge, not only its `FINAL` view), and every payload compared
//! by checksum with the one the broker acknowledged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Produced;
use super::destinations::Held;

/// The physical check of one case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PhysicalCheck {
    /// Rows the destination stores for the topic.
    pub rows: u64,
    /// Whether no merge can have collapsed a row before the count (merges stopped on a server
    /// started here, or a destination that never collapses rows).
    pub before_merges: bool,
    /// Stored rows beyond one per record.
    pub extra: u64,
    /// Records whose stored payload differs from the produced one.
    pub payload_mismatches: u64,
    /// The first few of them, as `partition:offset`.
    pub first_mismatches: Vec<String>,
    /// Payloads compared.
    pub payloads_compared: u64,
}

impl PhysicalCheck {
    /// Compares `held` with `produced`.
    pub(crate) fn of(produced: &Produced, held: &Held) -> Self {
        let mut records: BTreeMap<(u32, u64), ()> = BTreeMap::new();
        let mut mismatches = Vec::new();
        let mut compared = 0;
        for r in &held.rows {
            records.insert((r.partition, r.offset), ());
            if let Some(sent) = produced.get(&(r.partition, r.offset)) {
                compared += 1;
                if *sent != r.payload {
                    mismatches.push(format!("{}:{}", r.partition, r.offset));
                }
            }
        }
        let (rows, before_merges) = held.physical.unwrap_or((held.rows.len() as u64, true));
        Self {
            rows,
            before_merges,
            extra: rows.saturating_sub(records.len() as u64),
            payload_mismatches: mismatches.len() as u64,
            first_mismatches: mismatches.into_iter().take(5).collect(),
            payloads_compared: compared,
        }
    }

    /// Why the case fails for what the destination stores: a payload unlike the produced one,
    /// or, for a sink keyed on the record identity or a watermark, a stored row beyond one per
    /// record (counted before any merge).
    pub fn failure(&self, keyed: bool) -> Option<String> {
        if self.payload_mismatches > 0 {
            return Some(format!(
                "{} records hold another payload than was produced (first: {})",
                self.payload_mismatches,
                self.first_mismatches.join(", ")
            ));
        }
        (keyed && self.before_merges && self.extra > 0).then(|| {
            format!(
                "{} stored rows beyond one per record ({} rows stored)",
                self.extra, self.rows
            )
        })
    }

    /// The check in words, for the notes.
    pub fn note(&self) -> String {
        let when = if self.before_merges {
            ""
        } else {
            " (merges could not be stopped on a server not started here)"
        };
        format!(
            "{} rows stored{when}, {} beyond one per record; {} of {} payloads as produced",
            self.rows,
            self.extra,
            self.payloads_compared - self.payload_mismatches,
            self.payloads_compared
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::destinations::HeldRow;
    use super::*;

    fn row(partition: u32, offset: u64, payload: u64) -> HeldRow {
        HeldRow {
            partition,
            offset,
            payload,
        }
    }

    #[test]
    fn a_changed_payload_and_an_extra_stored_row_each_fail() {
        let produced = Produced::from([((0, 0), 7), ((0, 1), 8)]);
        let same = Held {
            rows: vec![row(0, 0, 7), row(0, 1, 8)],
            ..Held::default()
        };
        let check = PhysicalCheck::of(&produced, &same);
        assert_eq!((check.extra, check.payload_mismatches), (0, 0));
        assert_eq!(check.failure(true), None);

        let changed = Held {
            rows: vec![row(0, 0, 7), row(0, 1, 9)],
            ..Held::default()
        };
        let why = PhysicalCheck::of(&produced, &changed)
            .failure(true)
            .unwrap_or_default();
        assert!(why.contains("0:1"), "{why}");

        // Two records visible, three stored before any merge: one extra row.
        let collapsed = Held {
            rows: vec![row(0, 0, 7), row(0, 1, 8)],
            physical: Some((3, true)),
            ..Held::default()
        };
        let check = PhysicalCheck::of(&produced, &collapsed);
        assert_eq!(check.extra, 1);
        assert!(check.failure(true).is_some());
        assert_eq!(check.failure(false), None, "not judged for an unkeyed sink");
    }
}
