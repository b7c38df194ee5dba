//! Dead letters under crashes: bad records at known positions of every case's stream, and what
//! became of each one after the case drained. A bad record is either in the dead-letter topic
//! — read back from the broker, with `pico.dlq.*` headers naming its topic, partition, offset
//! and the reason — and then not in the destination, or stored by a sink whose destination
//! takes it; never both, never neither. No good record may be dead-lettered.
//!
//! The bad kinds are those the conformance suite's bad-input scenario found destinations to
//! refuse: text that is not JSON, bytes that are not UTF-8, an empty value, JSON with a NUL
//! escape, and a value larger than a 1 MiB limit. Which destination refuses which is not typed
//! here: the check reads what happened.

use std::collections::{BTreeMap, BTreeSet};

use pico_conformance::target::{PayloadForm, payload_checksum};
use serde::{Deserialize, Serialize};

use super::Produced;
use super::destinations::Held;

/// A record of the crash stream that some destination cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BadKind {
    /// Text that is not JSON.
    NotJson,
    /// Bytes that are not UTF-8.
    NotUtf8,
    /// An empty value.
    Empty,
    /// JSON holding a `\u0000` escape (PostgreSQL's `jsonb` refuses it).
    NulEscape,
    /// A JSON value of 1.5 MiB, above a 1 MiB limit.
    Oversized,
}

/// Every `BAD_EVERY`-th record of a case is bad (the first at `BAD_EVERY / 2`), the kinds in
/// turn: 40 bad records at full size, 8 reduced, every kind at least once.
pub const BAD_EVERY: u64 = 500;

/// The size of the oversized value's filler.
pub const OVERSIZED_BYTES: usize = 3 << 19;

impl BadKind {
    /// Every kind, in the order they appear in a stream.
    pub const ALL: [BadKind; 5] = [
        BadKind::NotJson,
        BadKind::NotUtf8,
        BadKind::Empty,
        BadKind::NulEscape,
        BadKind::Oversized,
    ];

    /// The id in the report.
    pub fn id(self) -> &'static str {
        match self {
            BadKind::NotJson => "not-json",
            BadKind::NotUtf8 => "not-utf8",
            BadKind::Empty => "empty",
            BadKind::NulEscape => "nul-escape",
            BadKind::Oversized => "oversized",
        }
    }

    /// The kind of the `i`-th record of a stream, if it is a bad one.
    pub fn of(i: u64) -> Option<BadKind> {
        (i % BAD_EVERY == BAD_EVERY / 2)
            .then(|| BadKind::ALL[((i / BAD_EVERY) % BadKind::ALL.len() as u64) as usize])
    }

    /// The value of the `i`-th record, of this kind.
    pub fn payload(self, i: u64) -> Vec<u8> {
        match self {
            BadKind::NotJson => format!("reading {i} is not json").into_bytes(),
            BadKind::NotUtf8 => vec![0xff, 0xfe, b'0' + (i % 10) as u8, 0x80],
            BadKind::Empty => Vec::new(),
            BadKind::NulEscape => format!("{{\"i\":{i},\"nul\":\"a\\u0000b\"}}").into_bytes(),
            BadKind::Oversized => {
                format!("{{\"i\":{i},\"big\":\"{}\"}}", "x".repeat(OVERSIZED_BYTES)).into_bytes()
            }
        }
    }
}

/// The bad records a producer wrote: their `(partition, offset)` and kind.
pub type BadRecords = BTreeMap<(u32, u64), BadKind>;

/// The dead-letter topic of a case's topic.
pub(crate) fn dead_letter_topic(topic: &str) -> String {
    format!("{topic}-dlq")
}

/// One dead letter as the broker holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Letter {
    /// Its offset in the dead-letter topic.
    pub at: i64,
    /// `pico.dlq.topic`, `pico.dlq.partition`, `pico.dlq.offset`, if all three are there.
    pub origin: Option<(String, u32, u64)>,
    /// `pico.dlq.reason`.
    pub reason: String,
    /// `pico.dlq.may_be_stored` (absent or unreadable: `None`).
    pub may_be_stored: Option<bool>,
    /// [`payload_checksum`] of its value, as JSON.
    pub payload: u64,
}

impl Letter {
    /// A letter at `at` in the dead-letter topic, from its headers (name, value) and value.
    pub fn of<'h>(
        at: i64,
        headers: impl Iterator<Item = (&'h str, &'h [u8])>,
        value: &[u8],
    ) -> Self {
        let mut found: BTreeMap<&str, String> = BTreeMap::new();
        for (key, value) in headers {
            if let Some(name) = key.strip_prefix("pico.dlq.") {
                found.insert(name, String::from_utf8_lossy(value).into_owned());
            }
        }
        let origin: Option<(String, u32, u64)> = (|| {
            Some((
                found.get("topic")?.clone(),
                found.get("partition")?.parse().ok()?,
                found.get("offset")?.parse().ok()?,
            ))
        })();
        Self {
            at,
            origin,
            reason: found.get("reason").cloned().unwrap_or_default(),
            may_be_stored: found.get("may_be_stored").and_then(|v| v.parse().ok()),
            payload: payload_checksum(PayloadForm::Json, value),
        }
    }
}

/// The records of `origin` that `letters` name (a letter for another topic names none).
pub(crate) fn lettered(letters: &[Letter], origin: &str) -> BTreeSet<(u32, u64)> {
    letters
        .iter()
        .filter_map(|l| match &l.origin {
            Some((t, p, o)) if t == origin => Some((*p, *o)),
            _ => None,
        })
        .collect()
}

/// What became of one kind of bad record in a case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct KindOutcome {
    /// The kind.
    pub kind: BadKind,
    /// Records of this kind produced.
    pub produced: u64,
    /// Of them, in the dead-letter topic.
    pub dead_lettered: u64,
    /// Of them, stored by the destination.
    pub stored: u64,
    /// The reason of the first dead letter of this kind.
    pub reason: Option<String>,
}

/// The dead-letter check of one case.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeadLetterCheck {
    /// The dead-letter topic.
    pub topic: String,
    /// Bad records produced.
    pub bad: u64,
    /// Bad records in the dead-letter topic (each counted once).
    pub dead_lettered: u64,
    /// Bad records the destination stores (its sink took them).
    pub stored: u64,
    /// Dead letters the broker holds.
    pub letters: u64,
    /// Dead letters beyond one per record: a batch replayed after its dead letters were
    /// produced and before its offset was committed.
    pub repeated: u64,
    /// Per kind.
    pub kinds: Vec<KindOutcome>,
    /// What is wrong (first few): a bad record neither dead-lettered nor stored, one refused
    /// and stored too, a good record dead-lettered, a letter without its origin headers or
    /// with another payload than was produced.
    pub problems: Vec<String>,
    /// How many problems there were.
    pub problem_count: u64,
}

impl DeadLetterCheck {
    /// Judges `letters` (read from `topic`) and what the destination `held` against the
    /// records produced to `origin`.
    pub(crate) fn of(
        (origin, topic): (&str, &str),
        produced: &Produced,
        bad: &BadRecords,
        letters: &[Letter],
        held: &Held,
    ) -> Self {
        let stored: BTreeSet<(u32, u64)> =
            held.rows.iter().map(|r| (r.partition, r.offset)).collect();
        let mut problems = Vec::new();
        let mut by_record: BTreeMap<(u32, u64), Vec<&Letter>> = BTreeMap::new();
        for l in letters {
            match &l.origin {
                None => problems.push(format!(
                    "dead letter at offset {} lacks pico.dlq.topic, partition or offset",
                    l.at
                )),
                Some((t, _, _)) if t != origin => problems.push(format!(
                    "dead letter at offset {} names topic {t}, not {origin}",
                    l.at
                )),
                Some((_, p, o)) => by_record.entry((*p, *o)).or_default().push(l),
            }
        }
        let mut repeated = 0;
        for (&(p, o), ls) in &by_record {
            repeated += ls.len() as u64 - 1;
            problems.extend(letter_problems((p, o), ls, produced, bad, &stored));
        }
        let mut kinds: BTreeMap<BadKind, KindOutcome> = BTreeMap::new();
        for (&(p, o), &kind) in bad {
            let k = kinds.entry(kind).or_insert(KindOutcome {
                kind,
                produced: 0,
                dead_lettered: 0,
                stored: 0,
                reason: None,
            });
            k.produced += 1;
            let lettered = by_record.get(&(p, o));
            if let Some(first) = lettered.and_then(|ls| ls.first()) {
                k.dead_lettered += 1;
                k.reason.get_or_insert_with(|| first.reason.clone());
            }
            if stored.contains(&(p, o)) {
                k.stored += 1;
            } else if lettered.is_none() {
                problems.push(format!(
                    "bad record {p}:{o} ({}) neither dead-lettered nor stored",
                    kind.id()
                ));
            }
        }
        let kinds: Vec<KindOutcome> = kinds.into_values().collect();
        Self {
            topic: topic.to_owned(),
            bad: bad.len() as u64,
            dead_lettered: kinds.iter().map(|k| k.dead_lettered).sum(),
            stored: kinds.iter().map(|k| k.stored).sum(),
            letters: letters.len() as u64,
            repeated,
            kinds,
            problem_count: problems.len() as u64,
            problems: problems.into_iter().take(5).collect(),
        }
    }

    /// Why the case fails for its dead letters, if it does. A repeated dead letter is counted
    /// and shown, not failed: the runtime produces a batch's dead letters before it commits the
    /// batch's offset, and a process killed between the two produces them again on replay.
    pub fn failure(&self) -> Option<String> {
        (self.problem_count > 0).then(|| {
            let more = self.problem_count - self.problems.len() as u64;
            let more = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            format!("dead letters: {}{more}", self.problems.join("; "))
        })
    }

    /// A few words for the summary table.
    pub fn headline(&self) -> String {
        let repeated = if self.repeated > 0 {
            format!(" ⚠ {} repeated", self.repeated)
        } else {
            String::new()
        };
        format!(
            "{}/{} dead-lettered{repeated}",
            self.dead_lettered, self.bad
        )
    }

    /// The check in words, for the notes.
    pub fn note(&self) -> String {
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|k| {
                let reason = k
                    .reason
                    .as_ref()
                    .map(|r| format!(", «{}»", r.chars().take(80).collect::<String>()))
                    .unwrap_or_default();
                format!(
                    "{} {}: {} dead-lettered, {} stored{reason}",
                    k.produced,
                    k.kind.id(),
                    k.dead_lettered,
                    k.stored
                )
            })
            .collect();
        format!(
            "dead letters: {} bad records ({}); {} letters read back from {}, {} beyond one per \
             record",
            self.bad,
            kinds.join("; "),
            self.letters,
            self.topic,
            self.repeated
        )
    }
}

/// What is wrong with the dead letters of record `(p, o)`.
fn letter_problems(
    (p, o): (u32, u64),
    letters: &[&Letter],
    produced: &Produced,
    bad: &BadRecords,
    stored: &BTreeSet<(u32, u64)>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(first) = letters.first() else {
        return problems;
    };
    if !bad.contains_key(&(p, o)) {
        problems.push(format!(
            "good record {p}:{o} dead-lettered: «{}»",
            first.reason
        ));
    }
    match produced.get(&(p, o)) {
        None => problems.push(format!("dead letter of {p}:{o}, which was never produced")),
        Some(sent) if letters.iter().any(|l| l.payload != *sent) => problems.push(format!(
            "dead letter of {p}:{o} holds another payload than was produced"
        )),
        Some(_) => {}
    }
    if letters.iter().any(|l| l.reason.is_empty()) {
        problems.push(format!("dead letter of {p}:{o} without pico.dlq.reason"));
    }
    if letters.iter().any(|l| l.may_be_stored == Some(false)) && stored.contains(&(p, o)) {
        problems.push(format!(
            "{p}:{o} dead-lettered as refused (may_be_stored false) and stored too"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::crash::destinations::HeldRow;

    const TOPIC: &str = "crash-x";

    fn letter(at: i64, p: u32, o: u64, payload: &[u8]) -> Letter {
        Letter {
            at,
            origin: Some((TOPIC.into(), p, o)),
            reason: "refused".into(),
            may_be_stored: Some(false),
            payload: payload_checksum(PayloadForm::Json, payload),
        }
    }

    /// Records 0..4 of partition 0; record 2 is bad (not JSON).
    fn stream() -> (Produced, BadRecords) {
        let mut produced = Produced::new();
        for o in 0..4 {
            let value = if o == 2 {
                b"no json".to_vec()
            } else {
                format!("{{\"i\":{o}}}").into_bytes()
            };
            produced.insert((0, o), payload_checksum(PayloadForm::Json, &value));
        }
        (produced, BadRecords::from([((0, 2), BadKind::NotJson)]))
    }

    fn held(offsets: &[u64]) -> Held {
        Held {
            rows: offsets
                .iter()
                .map(|&o| HeldRow {
                    partition: 0,
                    offset: o,
                    payload: 0,
                })
                .collect(),
            ..Held::default()
        }
    }

    fn check(letters: &[Letter], stored: &[u64]) -> DeadLetterCheck {
        let (produced, bad) = stream();
        DeadLetterCheck::of((TOPIC, "dlq"), &produced, &bad, letters, &held(stored))
    }

    #[test]
    fn the_stream_holds_every_kind_at_known_positions() {
        let bad: Vec<(u64, BadKind)> = (0..4_000)
            .filter_map(|i| BadKind::of(i).map(|k| (i, k)))
            .collect();
        assert_eq!(bad.len(), 8);
        assert_eq!(bad[0], (250, BadKind::NotJson));
        for kind in BadKind::ALL {
            assert!(bad.iter().any(|(_, k)| *k == kind), "{kind:?} missing");
        }
        assert!(BadKind::Oversized.payload(750).len() > 3 << 19);
        assert!(std::str::from_utf8(&BadKind::NotUtf8.payload(1)).is_err());
    }

    #[test]
    fn a_bad_record_dead_lettered_once_or_stored_passes() {
        let once = check(&[letter(0, 0, 2, b"no json")], &[0, 1, 3]);
        assert_eq!(once.failure(), None, "{once:?}");
        assert_eq!((once.dead_lettered, once.stored, once.repeated), (1, 0, 0));
        assert_eq!(once.headline(), "1/1 dead-lettered");
        let stored = check(&[], &[0, 1, 2, 3]);
        assert_eq!(stored.failure(), None);
        assert_eq!((stored.dead_lettered, stored.stored), (0, 1));
    }

    #[test]
    fn a_repeat_is_counted_and_shown() {
        let twice = check(
            &[letter(0, 0, 2, b"no json"), letter(1, 0, 2, b"no json")],
            &[0, 1, 3],
        );
        assert_eq!(twice.repeated, 1);
        assert!(twice.headline().contains("⚠ 1 repeated"));
        assert!(twice.note().contains("1 beyond one per record"));
    }

    #[test]
    fn every_way_of_getting_it_wrong_fails() {
        let neither = check(&[], &[0, 1, 3]);
        assert!(
            neither
                .failure()
                .unwrap()
                .contains("neither dead-lettered nor stored")
        );
        let both = check(&[letter(0, 0, 2, b"no json")], &[0, 1, 2, 3]);
        assert!(both.failure().unwrap().contains("and stored too"));
        let good = check(
            &[letter(0, 0, 2, b"no json"), letter(1, 0, 1, b"{\"i\":1}")],
            &[0, 3],
        );
        assert!(good.failure().unwrap().contains("good record 0:1"));
        let changed = check(&[letter(0, 0, 2, b"other")], &[0, 1, 3]);
        assert!(changed.failure().unwrap().contains("another payload"));
        let mut headless = letter(0, 0, 2, b"no json");
        headless.origin = None;
        let headless = check(&[headless], &[0, 1, 3]);
        assert!(headless.failure().unwrap().contains("lacks pico.dlq"));
        assert_eq!(headless.problem_count, 2, "{headless:?}");
    }
}
