//! When the broker, not the runtime, leaves records undelivered.
//!
//! iggy-server 0.9.0-edge.5 restores a consumer group after its crash with the members whose
//! connections died with it, and keeps their partitions assigned to them: no live member is
//! handed those partitions again, whatever the runtime does (pico-iggy's `tests/group.rs`
//! measures it). A case against such a broker cannot drain. It is told apart from a loss by
//! what is measured outside the runtime, never by the runtime's word:
//!
//! - the broker lists more members in the group than it has connected clients in it;
//! - every partition the group stopped committing on is assigned by the broker to a member
//!   and held by no live process (from their logs) — it is *stranded*;
//! - a record counts as undelivered only on a stranded partition, at or beyond the group's
//!   committed offset (the group never passed it), in no destination, and read back from the
//!   broker with the payload produced. Anything else missing is lost, as in every case.
//!
//! The case's other checks then judge the records the runtime could be handed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::Produced;
use super::dead_letters::BadRecords;
use super::destinations::Held;
use super::source::CaseBroker;

/// A consumer group as the broker lists it, against its connected clients.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupView {
    /// The partitions the broker assigns to each member of the group.
    pub members: Vec<Vec<u32>>,
    /// How many of the broker's connected clients are in the group.
    pub connected: usize,
}

impl GroupView {
    /// The partitions the broker assigns to a member while no live process holds them
    /// (`live`: each process's partitions, from its log) — only when the group lists more
    /// members than it has connected clients, and only when every partition in `behind` is
    /// among them. `None` otherwise: then nothing is the broker's fault.
    pub fn stranded(&self, live: &[BTreeSet<i32>], behind: &[u32]) -> Option<BTreeSet<u32>> {
        if self.members.len() <= self.connected || behind.is_empty() {
            return None;
        }
        let held: BTreeSet<u32> = live
            .iter()
            .flatten()
            .filter_map(|&p| u32::try_from(p).ok())
            .collect();
        let stranded: BTreeSet<u32> = self
            .members
            .iter()
            .flatten()
            .copied()
            .filter(|p| !held.contains(p))
            .collect();
        behind
            .iter()
            .all(|p| stranded.contains(p))
            .then_some(stranded)
    }
}

/// What the broker's fault left undelivered, measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerFault {
    /// Members the group listed when the case stalled.
    pub members: usize,
    /// How many of them had a connected client.
    pub connected: usize,
    /// Per stranded partition, the group's committed offset after the drain and the
    /// partition's end.
    pub stranded: BTreeMap<u32, (u64, u64)>,
    /// Records on stranded partitions at or beyond the committed offset, in no destination,
    /// read back from the broker as produced.
    pub undelivered: u64,
}

impl BrokerFault {
    /// The fault from the group `view` and the `stranded` partitions, with the group's
    /// `committed` offsets and the partitions' `ends`; `undelivered` from [`undelivered`].
    pub fn of(
        view: &GroupView,
        stranded: &BTreeSet<u32>,
        (committed, ends): (&BTreeMap<u32, u64>, &BTreeMap<u32, u64>),
        undelivered: &BTreeSet<(u32, u64)>,
    ) -> Self {
        let at = |m: &BTreeMap<u32, u64>, p: u32| m.get(&p).copied().unwrap_or(0);
        Self {
            members: view.members.len(),
            connected: view.connected,
            stranded: stranded
                .iter()
                .map(|&p| (p, (at(committed, p), at(ends, p))))
                .collect(),
            undelivered: undelivered.len() as u64,
        }
    }

    /// Whether the fault accounts for every partition in `unfinished` (committed short of
    /// its end after the drain).
    pub fn covers(&self, unfinished: &BTreeMap<u32, u64>, ends: &BTreeMap<u32, u64>) -> bool {
        ends.iter()
            .filter(|(p, end)| unfinished.get(*p).is_none_or(|c| c < *end))
            .all(|(p, _)| self.stranded.contains_key(p))
    }

    /// A few words for the summary table.
    pub fn headline(&self) -> String {
        format!("{} undelivered (broker fault)", self.undelivered)
    }

    /// The fault in words, for the notes.
    pub fn note(&self) -> String {
        let partitions: Vec<String> = self
            .stranded
            .iter()
            .map(|(p, (c, end))| format!("p{p} committed {c} of {end}"))
            .collect();
        format!(
            "broker fault: after its restart the broker listed {} members in the group while {} \
             had a connection, and kept partitions assigned to members no live process was ({}); \
             {} records there, beyond the committed offset, were never handed to a live member — \
             read back from the broker as produced, so held by it, not lost; the case's other \
             checks judge the records the runtime could be handed",
            self.members,
            self.connected,
            partitions.join(", "),
            self.undelivered
        )
    }
}

/// The records the broker held back: produced on a `stranded` partition at or beyond its
/// `committed` offset, not `stored` in the destination, and `read_back` from the broker with
/// the payload's checksum as produced.
pub fn undelivered(
    produced: &Produced,
    stranded: &BTreeSet<u32>,
    committed: &BTreeMap<u32, u64>,
    stored: &BTreeSet<(u32, u64)>,
    read_back: &Produced,
) -> BTreeSet<(u32, u64)> {
    produced
        .iter()
        .filter(|((p, o), sum)| {
            stranded.contains(p)
                && *o >= committed.get(p).copied().unwrap_or(0)
                && !stored.contains(&(*p, *o))
                && read_back.get(&(*p, *o)) == Some(*sum)
        })
        .map(|(k, _)| *k)
        .collect()
}

/// The fault of a case that stalled on the `stranded` partitions of `view`: each read back
/// from the `broker`'s `topic` from the group's `committed` offset, against what was
/// `produced` and what the destination `held`. With the records it held back.
pub(crate) async fn measure(
    (broker, topic): (&dyn CaseBroker, &str),
    (view, stranded): &(GroupView, BTreeSet<u32>),
    (produced, held): (&Produced, &Held),
    (committed, ends): (&BTreeMap<u32, u64>, &BTreeMap<u32, u64>),
) -> Result<(BrokerFault, BTreeSet<(u32, u64)>), String> {
    let mut read_back = Produced::new();
    for &p in stranded {
        let from = committed.get(&p).copied().unwrap_or(0);
        read_back.extend(broker.read_back(topic, p, from).await?);
    }
    let stored: BTreeSet<(u32, u64)> = held.rows.iter().map(|r| (r.partition, r.offset)).collect();
    let held_back = undelivered(produced, stranded, committed, &stored, &read_back);
    let fault = BrokerFault::of(view, stranded, (committed, ends), &held_back);
    Ok((fault, held_back))
}

/// `produced` and `bad` without the `undelivered` records: what the runtime could be handed.
pub fn withheld(
    produced: &Produced,
    bad: &BadRecords,
    undelivered: &BTreeSet<(u32, u64)>,
) -> (Produced, BadRecords) {
    let keep = |k: &(u32, u64)| !undelivered.contains(k);
    (
        produced
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (*k, *v))
            .collect(),
        bad.iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| (*k, *v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(partitions: &[&[i32]]) -> Vec<BTreeSet<i32>> {
        partitions
            .iter()
            .map(|p| p.iter().copied().collect())
            .collect()
    }

    #[test]
    fn a_partition_is_stranded_only_with_a_member_beyond_the_connected_ones() {
        let ghost = GroupView {
            members: vec![vec![0], vec![1, 2, 3]],
            connected: 1,
        };
        let held = live(&[&[1, 2, 3]]);
        assert_eq!(ghost.stranded(&held, &[0]), Some(BTreeSet::from([0])));
        // A partition behind that a live process holds is the runtime's to move.
        assert_eq!(ghost.stranded(&held, &[0, 1]), None);
        // Every member connected: nothing is the broker's fault.
        let healthy = GroupView {
            members: vec![vec![0], vec![1, 2, 3]],
            connected: 2,
        };
        assert_eq!(healthy.stranded(&live(&[&[1, 2, 3]]), &[0]), None);
        assert_eq!(ghost.stranded(&held, &[]), None);
    }

    #[test]
    fn only_what_the_broker_still_holds_beyond_the_committed_offset_is_undelivered() {
        let produced: Produced = (0..6u64).map(|o| ((0, o), 100 + o)).collect();
        let stranded = BTreeSet::from([0]);
        let committed = BTreeMap::from([(0, 3)]);
        // 1 missing below the committed offset (lost), 4 stored, 5 read back unlike produced.
        let stored = BTreeSet::from([(0, 0), (0, 2), (0, 4)]);
        let read_back: Produced = [((0, 1), 101), ((0, 3), 103), ((0, 5), 999)].into();
        let held_back = undelivered(&produced, &stranded, &committed, &stored, &read_back);
        assert_eq!(held_back, BTreeSet::from([(0, 3)]));
        // Not stranded: nothing is undelivered.
        let none = undelivered(&produced, &BTreeSet::new(), &committed, &stored, &read_back);
        assert!(none.is_empty());
        let bad: BadRecords = [((0, 3), super::super::BadKind::NotJson)].into();
        let (left, bad_left) = withheld(&produced, &bad, &held_back);
        assert_eq!(left.len(), 5);
        assert!(bad_left.is_empty());
    }

    #[test]
    fn the_fault_covers_only_its_stranded_partitions() {
        let view = GroupView {
            members: vec![vec![0], vec![1]],
            connected: 1,
        };
        let ends = BTreeMap::from([(0, 10), (1, 10)]);
        let fault = BrokerFault::of(
            &view,
            &BTreeSet::from([0]),
            (&BTreeMap::from([(0, 4), (1, 10)]), &ends),
            &BTreeSet::new(),
        );
        assert_eq!(fault.stranded, BTreeMap::from([(0, (4, 10))]));
        assert!(fault.covers(&BTreeMap::from([(0, 4), (1, 10)]), &ends));
        assert!(!fault.covers(&BTreeMap::from([(0, 4), (1, 9)]), &ends));
    }
}
