//! The generator, the 2 400 readings and the delivery function of the reference workload.

use serde::{Deserialize, Serialize};

const SEED: u64 = 20_260_218;
const M32: u64 = 0xFFFF_FFFF;

/// The twelve periods, `2026-01` to `2026-12`.
pub const PERIODS: [&str; 12] = [
    "2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06", "2026-07", "2026-08",
    "2026-09", "2026-10", "2026-11", "2026-12",
];
const REGION: [&str; 5] = ["east", "west", "north", "south", "central"];
const TYPE: [&str; 2] = ["residential", "commercial"];

/// The module's seeded generator: a hashed seed, then a 32-bit LCG scaled to [0, 1).
struct Rng(u64);

impl Rng {
    fn new(t: u64) -> Self {
        let x = ((t ^ (t >> 16)).wrapping_mul(2_246_822_507)) & M32;
        let x = ((x ^ (x >> 13)).wrapping_mul(3_266_489_909)) & M32;
        Self((x ^ (x >> 16)) & M32)
    }

    fn next(&mut self) -> f64 {
        self.0 = (self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223)) & M32;
        self.0 as f64 / 4_294_967_296.0
    }

    /// `int(r() * n)` for positive n.
    fn below(&mut self, n: u64) -> u64 {
        (self.next() * n as f64) as u64
    }
}

/// One meter reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    /// `A001` … `A200`.
    pub subscriber: String,
    /// `2026-01` … `2026-12`.
    pub period: String,
    /// Region of the subscriber.
    pub region: String,
    /// `residential` or `commercial`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Cumulative meter index.
    pub index: i64,
    /// Always `m3`.
    pub unit: String,
}

/// The 2 400 readings in source order (subscriber-major, then period).
pub fn generate_source() -> Vec<Reading> {
    let mut out = Vec::with_capacity(2400);
    for i in 0..200u64 {
        let mut r = Rng::new(SEED + 37 * i);
        let region = REGION[r.below(5) as usize];
        let kind = TYPE[r.below(2) as usize];
        let start = 10_000 + r.below(60_000) as i64;
        let mut e = start;
        for (p, period) in PERIODS.iter().enumerate() {
            let mut r = Rng::new(SEED + 101 * i + 7 * p as u64);
            e += 4 + r.below(46) as i64;
            out.push(Reading {
                subscriber: format!("A{:03}", i + 1),
                period: (*period).to_owned(),
                region: region.to_owned(),
                kind: kind.to_owned(),
                index: e,
                unit: "m3".to_owned(),
            });
        }
    }
    out
}

/// How the reference delivery function treats 10 % of period 2026-07.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryMode {
    /// Acknowledge before writing: those rows are lost.
    AtMostOnce,
    /// Write, fail to acknowledge, write again: those rows arrive twice.
    AtLeastOnce,
    /// The module's "exactly once": a keyed write, so a redelivery of a seen key is dropped.
    Keyed,
}

impl DeliveryMode {
    /// Every mode, in the module's order.
    pub const ALL: [DeliveryMode; 3] = [
        DeliveryMode::AtMostOnce,
        DeliveryMode::AtLeastOnce,
        DeliveryMode::Keyed,
    ];

    /// Our name for the mode.
    pub fn id(self) -> &'static str {
        match self {
            DeliveryMode::AtMostOnce => "at-most-once",
            DeliveryMode::AtLeastOnce => "at-least-once",
            DeliveryMode::Keyed => "keyed",
        }
    }
}

/// What the delivery function did.
#[derive(Debug, Clone, Default)]
pub struct Delivered {
    /// The delivered rows, in order, duplicates included.
    pub records: Vec<Reading>,
    /// Source positions (= offsets) that were dropped.
    pub lost: Vec<usize>,
    /// Source positions that were delivered twice.
    pub duplicated: Vec<usize>,
}

/// The module's `deliver(records, mode)` for period 2026-07 and a 10 % share.
pub fn deliver(records: &[Reading], mode: DeliveryMode) -> Delivered {
    let mut r = Rng::new(SEED + 7);
    let mut out = Delivered::default();
    let mut seen = std::collections::HashSet::new();
    for (pos, k) in records.iter().enumerate() {
        if k.period != "2026-07" {
            out.records.push(k.clone());
            continue;
        }
        match mode {
            DeliveryMode::AtMostOnce => {
                if r.next() < 0.10 {
                    out.lost.push(pos);
                    continue;
                }
                out.records.push(k.clone());
            }
            DeliveryMode::AtLeastOnce => {
                out.records.push(k.clone());
                if r.next() < 0.10 {
                    out.records.push(k.clone());
                    out.duplicated.push(pos);
                }
            }
            DeliveryMode::Keyed => {
                let key = (k.subscriber.clone(), k.period.clone());
                // The module draws before testing the key, so the draw always happens.
                let drawn = r.next() < 0.10;
                if drawn && seen.contains(&key) {
                    continue;
                }
                seen.insert(key);
                out.records.push(k.clone());
            }
        }
    }
    out
}
