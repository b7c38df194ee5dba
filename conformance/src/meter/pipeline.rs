//! The five-stage pipeline of the reference workload: screen, dedupe, consumption, summary,
//! serve.

use std::collections::{HashMap, HashSet};

use super::round2;
use super::source::{PERIODS, Reading};

/// Whether stage 2 (dedupe) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// All five stages.
    WithDedupe,
    /// Dedupe switched off: what a destination's duplicates do downstream.
    WithoutDedupe,
}

/// What the pipeline produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Rows out of stage 3.
    pub consumption_rows: usize,
    /// Total consumption per (region, period), in first-seen order.
    pub summary: Vec<((String, String), i64)>,
    /// Mean per region over the periods, rounded to 2 decimals, in first-seen order.
    pub serving: Vec<(String, f64)>,
}

impl Figures {
    /// Summary cells that differ from `base` (missing on either side counts).
    pub fn polluted_cells(&self, base: &Figures) -> usize {
        let mine: HashMap<&(String, String), i64> =
            self.summary.iter().map(|(k, v)| (k, *v)).collect();
        let theirs: HashMap<&(String, String), i64> =
            base.summary.iter().map(|(k, v)| (k, *v)).collect();
        let keys: HashSet<&(String, String)> = mine.keys().chain(theirs.keys()).copied().collect();
        keys.into_iter()
            .filter(|k| mine.get(k) != theirs.get(k))
            .count()
    }
}

/// Runs the pipeline on rows in the order given.
pub fn run_pipeline(records: &[Reading], pipeline: Pipeline) -> Figures {
    // s1 screen: every reading carries the required fields by construction; rows read back
    // that lack one never become a Reading (the scenario counts them as screened out).
    let mut rows: Vec<&Reading> = records.iter().collect();
    if pipeline == Pipeline::WithDedupe {
        let mut seen = HashSet::new();
        rows.retain(|k| seen.insert((k.subscriber.as_str(), k.period.as_str())));
    }
    // s3 consumption: the later of two rows with one key wins the lookup, as in a dict.
    let table: HashMap<(&str, &str), &Reading> = rows
        .iter()
        .map(|k| ((k.subscriber.as_str(), k.period.as_str()), *k))
        .collect();
    let mut consumption: Vec<(&Reading, i64)> = Vec::new();
    for k in &rows {
        let Some(i) = PERIODS.iter().position(|p| *p == k.period) else {
            continue;
        };
        if i == 0 {
            continue;
        }
        if let Some(prev) = table.get(&(k.subscriber.as_str(), PERIODS[i - 1])) {
            consumption.push((k, k.index - prev.index));
        }
    }
    // s4 summary.
    let mut summary: Vec<((String, String), i64)> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    for (k, m3) in &consumption {
        let key = (k.region.clone(), k.period.clone());
        match at.get(&key) {
            Some(&i) => summary[i].1 += m3,
            None => {
                at.insert(key.clone(), summary.len());
                summary.push((key, *m3));
            }
        }
    }
    // s5 serve.
    let mut per_region: Vec<(String, Vec<i64>)> = Vec::new();
    for ((region, _), v) in &summary {
        match per_region.iter_mut().find(|(r, _)| r == region) {
            Some((_, vs)) => vs.push(*v),
            None => per_region.push((region.clone(), vec![*v])),
        }
    }
    let serving = per_region
        .into_iter()
        .map(|(r, vs)| {
            let mean = vs.iter().sum::<i64>() as f64 / vs.len() as f64;
            (r, round2(mean))
        })
        .collect();
    Figures {
        consumption_rows: consumption.len(),
        summary,
        serving,
    }
}
