//! [`Horizon`]: how far back a destination still recognises a replay, and [`Upkeep`]: what the
//! suite did to a destination to go past it (scenario `replay-after-horizon`).
//!
//! Every dedupe mechanism remembers for a while: an insert-dedupe window holds the last N
//! blocks, an HTTP endpoint keeps idempotency keys for a retention time, a lakehouse's
//! transaction markers age out with its log, while a key on the identity lasts as long as the
//! row. The destination under test says which it is and carries out its own upkeep; the
//! scenario then replays an old batch and measures what the replay becomes.

use serde::{Deserialize, Serialize};

use crate::evidence::FaultCount;

/// How far back a destination recognises a replay of what it already holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Horizon {
    /// No horizon: a replay is recognised as long as the destination holds what it replays.
    Unbounded {
        /// What keeps it (a key on the identity, a watermark carried forward).
        by: String,
    },
    /// The last `count` writes of some kind are recognised, older ones are not.
    Writes {
        /// How many.
        count: u64,
        /// Of what ("insert blocks per table").
        of: String,
    },
    /// A replay is recognised for `seconds` after the first write.
    Duration {
        /// How long.
        seconds: u64,
        /// What ages out ("idempotency keys").
        of: String,
    },
    /// Nothing recognises a replay at any age: every replay is stored again.
    NoDedupe,
    /// The destination under test names no horizon (its suite adapter has not said yet).
    Unstated,
}

impl Horizon {
    /// No horizon, kept by `by`.
    pub fn unbounded(by: impl Into<String>) -> Self {
        Horizon::Unbounded { by: by.into() }
    }

    /// Whether replays older than the horizon go unrecognised (a count or a duration).
    pub fn is_bounded(&self) -> bool {
        matches!(self, Horizon::Writes { .. } | Horizon::Duration { .. })
    }

    /// The horizon in a few characters, for the summary: "none", "1000 writes", "24 h",
    /// "no dedupe", "not stated".
    pub fn short(&self) -> String {
        match self {
            Horizon::Unbounded { .. } => "none".into(),
            Horizon::Writes { count, .. } => format!("{count} writes"),
            Horizon::Duration { seconds, .. } => duration_words(*seconds),
            Horizon::NoDedupe => "no dedupe".into(),
            Horizon::Unstated => "not stated".into(),
        }
    }

    /// The horizon in words: "none: unbounded (…)", "1000 insert blocks", "24 h of keys".
    pub fn words(&self) -> String {
        match self {
            Horizon::Unbounded { by } => format!("none: unbounded ({by})"),
            Horizon::Writes { count, of } => format!("{count} {of}"),
            Horizon::Duration { seconds, of } => format!("{} of {of}", duration_words(*seconds)),
            Horizon::NoDedupe => "no dedupe: every replay repeats".into(),
            Horizon::Unstated => "not stated".into(),
        }
    }
}

/// Seconds in the largest whole unit, days from two on: "24 h", "7 d", "90 min", "45 s".
fn duration_words(seconds: u64) -> String {
    match seconds {
        s if s >= 2 * 86_400 && s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s >= 3_600 && s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// What a destination did to go past its horizon ([`crate::target::Destination::pass_horizon`]);
/// the report carries it with the cell of `replay-after-horizon`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upkeep {
    /// The horizon it went past (or found none to pass).
    pub horizon: Horizon,
    /// Each step of upkeep and how much it did ("idempotency keys aged past the retention": 41;
    /// "VACUUM FULL runs": 1). A step that did nothing leaves the cell not exercised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub done: Vec<FaultCount>,
}

impl Upkeep {
    /// No upkeep, and no horizon named: the scenario shows only what later traffic does.
    pub fn unstated() -> Self {
        Self {
            horizon: Horizon::Unstated,
            done: Vec::new(),
        }
    }

    /// `horizon`, with no upkeep carried out yet.
    pub fn of(horizon: Horizon) -> Self {
        Self {
            horizon,
            done: Vec::new(),
        }
    }

    /// The steps in words ("1 checkpoints written, 45 log files removed by log cleanup"), or
    /// that the destination has none to run on demand.
    pub fn steps_words(&self) -> String {
        if self.done.is_empty() {
            return "none on demand".to_owned();
        }
        let steps: Vec<String> = self.done.iter().map(FaultCount::words).collect();
        steps.join(", ")
    }

    /// The same, with one more step that happened `count` times.
    pub fn did(mut self, step: impl Into<String>, count: u64) -> Self {
        self.done.push(FaultCount::new(step, count));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horizons_read_in_their_largest_unit() {
        let keys = |seconds| Horizon::Duration {
            seconds,
            of: "idempotency keys".into(),
        };
        assert_eq!(keys(86_400).words(), "24 h of idempotency keys");
        assert_eq!(keys(7 * 86_400).words(), "7 d of idempotency keys");
        assert_eq!(keys(7_200).words(), "2 h of idempotency keys");
        assert_eq!(keys(5_400).words(), "90 min of idempotency keys");
        assert_eq!(keys(45).words(), "45 s of idempotency keys");
        let window = Horizon::Writes {
            count: 1000,
            of: "insert blocks per table".into(),
        };
        assert_eq!(window.words(), "1000 insert blocks per table");
        assert_eq!(
            Horizon::unbounded("primary key").words(),
            "none: unbounded (primary key)"
        );
        let shorts: Vec<String> = [
            keys(86_400),
            window,
            Horizon::unbounded("key"),
            Horizon::NoDedupe,
            Horizon::Unstated,
        ]
        .iter()
        .map(Horizon::short)
        .collect();
        assert_eq!(
            shorts,
            ["24 h", "1000 writes", "none", "no dedupe", "not stated"]
        );
    }

    #[test]
    fn the_horizon_is_data_in_the_report() {
        let upkeep = Upkeep::of(Horizon::Duration {
            seconds: 86_400,
            of: "idempotency keys".into(),
        })
        .did("keys aged", 41);
        let json = serde_json::to_value(&upkeep).unwrap_or_default();
        assert_eq!(json["horizon"]["kind"], "duration");
        assert_eq!(json["horizon"]["seconds"], 86_400);
        let back: Upkeep = serde_json::from_value(json).unwrap_or_else(|_| Upkeep::unstated());
        assert_eq!(back, upkeep);
    }

    #[test]
    fn upkeep_counts_each_step() {
        let upkeep = Upkeep::of(Horizon::unbounded("key"))
            .did("VACUUM FULL runs", 1)
            .did("idempotency keys aged", 0);
        assert_eq!(upkeep.done.len(), 2);
        assert_eq!(
            crate::evidence::unexercised(&upkeep.done).as_deref(),
            Some("0 idempotency keys aged")
        );
    }
}
