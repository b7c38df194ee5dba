//! What a real Prometheus scraped from a crash case's `pico-kafka` processes, set against what
//! the case measured in the destination and the dead-letter topic ([`MetricsCheck`]).
//!
//! Every process slot serves `/metrics` on its own loopback port (a `[metrics]` section in its
//! own pipeline file); a Prometheus started for the case scrapes every slot four times a
//! second. A
//! counter starts again from 0 in each process life, and what a life counted after its last
//! scrape is gone when it is killed; so the figures are the sums over every life Prometheus saw
//! of its last scraped value, lives told apart by `pico_kafka_start_time_seconds`. Where no
//! life ended before the drain (every process ran from its start to the end) and the last
//! scrape followed the drain, the sums are exact and the check asks for equality; otherwise for
//! the inequalities a lost tail still keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::provide::free_port;
use crate::serve::prometheus::{Prometheus, Series};

/// How often each process reports its consumer lag (librdkafka's statistics), ms.
const LAG_INTERVAL_MS: u64 = 1_000;

/// How often Prometheus scrapes each process: well under the shortest process life of a case
/// (a first life killed about a second after its first write was missed at 1 s), and what a
/// killed life counted after its last scrape is lost, so the less the better.
const SCRAPE_EVERY: Duration = Duration::from_millis(250);

/// How long after the drain the lag of every partition may take to read 0.
const LAG_PATIENCE: Duration = Duration::from_secs(20);

/// The counters compared, by their names without the `pico_kafka_` prefix.
const COUNTERS: [&str; 6] = [
    "records_read_total",
    "records_written_total",
    "records_already_present_total",
    "records_changed_total",
    "records_rejected_total",
    "records_dead_lettered_total",
];

/// A Prometheus scraping the slots of one case, each slot on its own port.
pub(crate) struct Scraper {
    prometheus: Prometheus,
    ports: Vec<u16>,
}

impl Scraper {
    /// Picks a port per slot and starts a Prometheus scraping them ([`SCRAPE_EVERY`]).
    pub(crate) async fn start(slots: usize) -> Result<Self, String> {
        let ports = (0..slots)
            .map(|_| free_port().map_err(|e| format!("no free port for /metrics: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let targets: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let prometheus = Prometheus::scraping_every(&targets, SCRAPE_EVERY).await?;
        // Prometheus begins scraping some seconds after it is ready (its target discovery
        // publishes at most every 5 s): a first process life shorter than that would go unseen.
        let scraping = prometheus
            .wait_for("count(up)", slots as f64, Duration::from_secs(30))
            .await?;
        if scraping != Some(slots as f64) {
            return Err(format!(
                "Prometheus scraped {scraping:?} of {slots} targets 30 s after it started"
            ));
        }
        Ok(Self { prometheus, ports })
    }

    /// One pipeline file per slot: `base` and the slot's `[metrics]` section, written beside
    /// `base` as `pipeline-<slot>.toml`.
    pub(crate) fn pipelines(&self, base: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
        self.ports
            .iter()
            .enumerate()
            .map(|(slot, port)| {
                let file = dir.join(format!("pipeline-{slot}.toml"));
                let text = format!(
                    "{base}\n[metrics]\nlisten = \"127.0.0.1:{port}\"\nlag_interval_ms = \
                     {LAG_INTERVAL_MS}\n"
                );
                std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
                Ok(file)
            })
            .collect()
    }

    /// Once the group committed every partition's end and while the processes still run: waits
    /// until every partition of `topic` reports a lag of 0 (at most [`LAG_PATIENCE`]) and for
    /// two more scrapes, then reads every life's counters from the case's `span`.
    pub(crate) async fn after_drain(
        &self,
        prefix: &str,
        topic: &str,
        partitions: u32,
        span: Duration,
    ) -> Result<Scraped, String> {
        let at_zero = format!("count({prefix}_consumer_lag{{topic=\"{topic}\"}} == 0)");
        let zero = self
            .prometheus
            .wait_for(&at_zero, f64::from(partitions), LAG_PATIENCE)
            .await?;
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        let lag = self
            .prometheus
            .series(&format!("{prefix}_consumer_lag{{topic=\"{topic}\"}}"), span)
            .await?;
        let starts = self
            .prometheus
            .series(&format!("{prefix}_start_time_seconds"), span)
            .await?;
        let lives = Lives::of(&starts);
        let info = self
            .prometheus
            .series(&format!("{prefix}_sink_info"), span)
            .await?;
        let mut counters = BTreeMap::new();
        for name in COUNTERS {
            let series = self
                .prometheus
                .series(&format!("{prefix}_{name}{{topic=\"{topic}\"}}"), span)
                .await?;
            counters.insert(name, lives.sum(&series));
        }
        let count = |name: &str| counters.get(name).copied().unwrap_or_default();
        Ok(Scraped {
            lives: lives.count(),
            read: count("records_read_total"),
            written: count("records_written_total"),
            already_present: count("records_already_present_total"),
            changed: count("records_changed_total"),
            rejected: count("records_rejected_total"),
            dead_lettered: count("records_dead_lettered_total"),
            lag_zero: zero.unwrap_or_default() as u32,
            lag_last: last_lag(&lag),
            tells_already_present: info
                .first()
                .map(|s| s.label("tells_already_present") == "true"),
        })
    }

    /// Waits (at most `patience`) until Prometheus has seen `starts` process lives in the last
    /// `span`, polling; whether it did. A kill that follows it cannot end a life no scrape saw.
    pub(crate) async fn wait_for_lives(
        &self,
        prefix: &str,
        starts: u32,
        span: Duration,
        patience: Duration,
    ) -> bool {
        let waiting = std::time::Instant::now();
        loop {
            match self
                .prometheus
                .series(&format!("{prefix}_start_time_seconds"), span)
                .await
            {
                Ok(series) if Lives::of(&series).count() >= starts => return true,
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "reading the process lives scraped"),
            }
            if waiting.elapsed() > patience {
                return false;
            }
            tokio::time::sleep(SCRAPE_EVERY / 2).await;
        }
    }

    /// Stops the Prometheus.
    pub(crate) async fn stop(self) {
        if let Err(e) = self.prometheus.stop().await {
            tracing::warn!(error = %e, "stopping the crash case's Prometheus");
        }
    }
}

/// What Prometheus scraped from one case's processes, summed over their lives.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Scraped {
    /// Process lives seen (distinct start times per slot).
    pub lives: u32,
    /// `pico_kafka_records_read_total`.
    pub read: u64,
    /// `pico_kafka_records_written_total`.
    pub written: u64,
    /// `pico_kafka_records_already_present_total`: replays the sink absorbed.
    pub already_present: u64,
    /// `pico_kafka_records_changed_total`.
    pub changed: u64,
    /// `pico_kafka_records_rejected_total`.
    pub rejected: u64,
    /// `pico_kafka_records_dead_lettered_total`.
    pub dead_lettered: u64,
    /// Partitions whose `pico_kafka_consumer_lag` read 0 after the drain.
    pub lag_zero: u32,
    /// The last lag scraped per partition (`p<n>=<lag>`), for the report.
    pub lag_last: Vec<String>,
    /// What `pico_kafka_sink_info` said; `None` where it was not scraped.
    pub tells_already_present: Option<bool>,
}

/// The process lives Prometheus saw: per instance, the `pico_kafka_start_time_seconds` each
/// scrape read, in scrape order (a start time, in ms, names a life).
pub(crate) struct Lives(BTreeMap<String, Vec<(f64, u64)>>);

impl Lives {
    /// The lives in the range vectors of `pico_kafka_start_time_seconds`.
    pub(crate) fn of(starts: &[Series]) -> Self {
        let mut by_instance: BTreeMap<String, Vec<(f64, u64)>> = BTreeMap::new();
        for s in starts {
            by_instance
                .entry(s.label("instance").to_owned())
                .or_default()
                .extend(
                    s.samples
                        .iter()
                        .map(|&(at, start)| (at, (start * 1_000.0) as u64)),
                );
        }
        for scrapes in by_instance.values_mut() {
            scrapes.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        Self(by_instance)
    }

    /// How many: distinct start times per instance.
    pub(crate) fn count(&self) -> u32 {
        self.0
            .values()
            .map(|scrapes| {
                scrapes
                    .iter()
                    .map(|(_, life)| *life)
                    .collect::<BTreeSet<_>>()
                    .len() as u32
            })
            .sum()
    }

    /// The life of `instance` at `at`: the start time its scrape at `at` (or the latest before)
    /// read; 0 where none did.
    fn at(&self, instance: &str, at: f64) -> u64 {
        let Some(scrapes) = self.0.get(instance) else {
            return 0;
        };
        let seen = scrapes.partition_point(|(t, _)| *t <= at);
        seen.checked_sub(1).map_or(0, |i| scrapes[i].1)
    }

    /// Sums, over every series and every life, the last value the life's series was scraped
    /// at: a counter's total across restarts, less what each killed life counted after its
    /// last scrape.
    pub(crate) fn sum(&self, series: &[Series]) -> u64 {
        let total: f64 = series
            .iter()
            .map(|s| {
                let instance = s.label("instance");
                let mut last: BTreeMap<u64, f64> = BTreeMap::new();
                for &(at, value) in &s.samples {
                    let top = last.entry(self.at(instance, at)).or_insert(0.0);
                    *top = top.max(value);
                }
                last.values().sum::<f64>()
            })
            .sum();
        total as u64
    }
}

/// The last lag of each partition's series that is still scraped (the latest sample of all).
fn last_lag(lag: &[Series]) -> Vec<String> {
    let newest = lag
        .iter()
        .filter_map(|s| s.samples.last().map(|(t, _)| *t))
        .fold(f64::MIN, f64::max);
    let mut out: Vec<(i64, i64)> = lag
        .iter()
        .filter_map(|s| {
            let (t, v) = s.samples.last()?;
            (*t >= newest - 1.5).then(|| (s.label("partition").parse().unwrap_or(-1), *v as i64))
        })
        .collect();
    out.sort();
    out.iter().map(|(p, v)| format!("p{p}={v}")).collect()
}

/// What the case measured, to set the scrape against.
pub(crate) struct Measured {
    /// Records produced.
    pub produced: u64,
    /// Rows the destination holds for the topic.
    pub held: u64,
    /// Dead letters the broker holds for the topic.
    pub letters: u64,
    /// Bad records found among them, each counted once.
    pub lettered: u64,
    /// Whether the broker itself was stopped: a dead letter produced as it went down may land
    /// without its acknowledgement (not counted, the batch delivered again, the letter twice).
    pub broker_interrupted: bool,
    /// Partitions of the topic.
    pub partitions: u32,
    /// Processes started, and slots.
    pub starts: u32,
    pub slots: u32,
    /// How the processes ended, as the supervisor counts them: a life that never served
    /// `/metrics` (its port refused) shows here.
    pub exits: BTreeMap<String, u32>,
    /// Effective kills (the kill case): each left a written batch for the next life to replay.
    pub effective_kills: u32,
    /// Whether the sink keeps one row per record (then rows held are records written once).
    pub keyed: bool,
    /// Whether the sink tells every replayed record as already present whatever the replay's
    /// batch boundaries: then a replay after a kill must show ([`crate::destinations::runtime::Runtime`]).
    pub replays_told_per_record: bool,
}

/// The scrape of one case against what it measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MetricsCheck {
    /// What was scraped; `None` where it could not be (then `problems` says why).
    pub scraped: Option<Scraped>,
    /// Whether every process ran from its start to the drain, so the sums are exact.
    pub exact: bool,
    /// Where the scrape disagrees with the measurement.
    pub problems: Vec<String>,
}

impl MetricsCheck {
    /// A case whose processes could not be scraped, and why.
    pub(crate) fn unscraped(why: String) -> Self {
        Self {
            scraped: None,
            exact: false,
            problems: vec![format!("metrics not scraped: {why}")],
        }
    }

    /// Sets `s` against `m`.
    pub(crate) fn of(s: Scraped, m: &Measured) -> Self {
        let exact = m.starts == m.slots;
        let mut problems = Vec::new();
        let mut want = |ok: bool, what: String| {
            if !ok {
                problems.push(what);
            }
        };
        want(
            s.lag_zero == m.partitions,
            format!(
                "{} of {} partitions read a consumer lag of 0 after the drain ({})",
                s.lag_zero,
                m.partitions,
                s.lag_last.join(" ")
            ),
        );
        want(
            s.lives == m.starts,
            format!(
                "{} process lives scraped, {} started (a life must outlast a scrape; exits: {:?})",
                s.lives, m.starts, m.exits
            ),
        );
        want(
            s.dead_lettered <= m.letters,
            format!(
                "dead-lettered {} > {} letters in the dead-letter topic",
                s.dead_lettered, m.letters
            ),
        );
        // Each letter follows its record's refusal in the same process life.
        want(
            s.dead_lettered <= s.rejected,
            format!(
                "dead-lettered {} > rejected {}",
                s.dead_lettered, s.rejected
            ),
        );
        let tells = s.tells_already_present == Some(true);
        if m.keyed && tells {
            want(
                s.written <= m.held,
                format!("written {} > {} rows held", s.written, m.held),
            );
        }
        if exact {
            want(
                s.dead_lettered >= m.lettered,
                format!(
                    "dead-lettered {} < {} bad records in the dead-letter topic (no process \
                     ended before the drain)",
                    s.dead_lettered, m.lettered
                ),
            );
            if !m.broker_interrupted {
                want(
                    s.dead_lettered == m.letters && s.rejected == s.dead_lettered,
                    format!(
                        "dead-lettered {} ≠ {} letters or ≠ rejected {} (no process ended \
                         before the drain, the broker stayed up)",
                        s.dead_lettered, m.letters, s.rejected
                    ),
                );
            }
            want(
                s.read >= m.produced,
                format!("read {} < {} produced", s.read, m.produced),
            );
            let answered = s.written + s.already_present + s.changed + s.rejected;
            want(
                answered >= m.produced,
                format!(
                    "written + already present + changed + rejected = {answered} < {} produced",
                    m.produced
                ),
            );
            if !m.keyed {
                // An append-only destination holds a row per delivery the sink counted.
                want(
                    m.held <= s.written + s.changed,
                    format!(
                        "{} rows held > written {} + changed {} (an append-only destination)",
                        m.held, s.written, s.changed
                    ),
                );
            }
            if m.keyed && tells {
                want(
                    m.held <= s.written + s.already_present + s.changed,
                    format!(
                        "{} rows held > written {} + already present {} + changed {}",
                        m.held, s.written, s.already_present, s.changed
                    ),
                );
            }
        }
        if tells && m.replays_told_per_record && m.effective_kills > 0 {
            want(
                s.already_present > 0,
                format!(
                    "no record already present after {} effective kills (each left a written \
                     batch to replay)",
                    m.effective_kills
                ),
            );
        }
        Self {
            scraped: Some(s),
            exact,
            problems,
        }
    }

    /// Why the case fails by its metrics, if it does.
    pub fn failure(&self) -> Option<String> {
        (!self.problems.is_empty()).then(|| format!("metrics: {}", self.problems.join("; ")))
    }

    /// One line for the report's notes.
    pub fn note(&self) -> String {
        let Some(s) = &self.scraped else {
            return self.problems.join("; ");
        };
        format!(
            "scraped by Prometheus ({}, {} lives): read {}, written {}, already present {}, \
             changed {}, rejected {}, dead-lettered {}, lag 0 on {} partitions after the drain",
            if self.exact {
                "exact"
            } else {
                "last scrape of each life"
            },
            s.lives,
            s.read,
            s.written,
            s.already_present,
            s.changed,
            s.rejected,
            s.dead_lettered,
            s.lag_zero
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn series(instance: &str, partition: &str, samples: &[(f64, f64)]) -> Series {
        Series {
            labels: [
                ("instance".to_owned(), instance.to_owned()),
                ("partition".to_owned(), partition.to_owned()),
            ]
            .into(),
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn each_life_counts_its_last_scraped_value_even_past_the_previous_one() {
        // Slot a: a life started at 100 reaching 40, killed; the next (start 105) reaches 70
        // without ever reading less than 40 (no drop to tell the restart by). Slot b: one life.
        let starts = [
            series(
                "a",
                "",
                &[
                    (101.0, 100.0),
                    (104.0, 100.0),
                    (106.0, 105.0),
                    (109.0, 105.0),
                ],
            ),
            series("b", "", &[(101.0, 100.0), (109.0, 100.0)]),
        ];
        let read = [
            series(
                "a",
                "0",
                &[(101.0, 10.0), (104.0, 40.0), (106.0, 45.0), (109.0, 70.0)],
            ),
            series("b", "1", &[(101.0, 5.0), (109.0, 9.0)]),
        ];
        let lives = Lives::of(&starts);
        assert_eq!(lives.sum(&read), 40 + 70 + 9);
        assert_eq!(lives.count(), 3);
    }

    fn measured() -> Measured {
        Measured {
            produced: 100,
            held: 98,
            letters: 2,
            lettered: 2,
            broker_interrupted: false,
            partitions: 4,
            starts: 1,
            slots: 1,
            exits: BTreeMap::new(),
            effective_kills: 0,
            keyed: true,
            replays_told_per_record: true,
        }
    }

    fn scraped() -> Scraped {
        Scraped {
            lives: 1,
            read: 100,
            written: 98,
            already_present: 0,
            changed: 0,
            rejected: 2,
            dead_lettered: 2,
            lag_zero: 4,
            lag_last: vec![],
            tells_already_present: Some(true),
        }
    }

    #[test]
    fn an_exact_case_agrees_and_each_disagreement_fails_it() {
        assert_eq!(MetricsCheck::of(scraped(), &measured()).failure(), None);
        type Break = (&'static str, fn(&mut Scraped));
        let breaks: [Break; 6] = [
            ("lag", |s| s.lag_zero = 3),
            ("dead letter lost from the count", |s| s.dead_lettered = 1),
            ("a write not counted", |s| s.written = 97),
            ("more written than held", |s| s.written = 99),
            ("a life not scraped", |s| s.lives = 0),
            ("a refusal not counted", |s| s.rejected = 1),
        ];
        for (what, break_it) in breaks {
            let mut s = scraped();
            break_it(&mut s);
            assert!(
                MetricsCheck::of(s, &measured()).failure().is_some(),
                "{what} passed"
            );
        }
    }

    #[test]
    fn an_append_only_destination_holds_no_row_the_sink_did_not_count() {
        // The endpoint case: 4 276 rows held, the 277 replayed ones among them.
        let append = Measured {
            held: 4_276,
            keyed: false,
            produced: 4_000,
            letters: 1,
            lettered: 1,
            ..measured()
        };
        let counted = Scraped {
            read: 4_277,
            written: 4_276,
            rejected: 1,
            dead_lettered: 1,
            tells_already_present: Some(false),
            ..scraped()
        };
        assert_eq!(MetricsCheck::of(counted.clone(), &append).failure(), None);
        let replays_uncounted = Scraped {
            written: 3_999,
            ..counted
        };
        assert!(
            MetricsCheck::of(replays_uncounted, &append)
                .failure()
                .is_some()
        );
    }

    #[test]
    fn a_letter_landed_unacknowledged_while_the_broker_went_down_is_not_a_disagreement() {
        // Seen in the broker case: 8 letters (one twice), 8 refusals, 7 acknowledged.
        let broker = Measured {
            letters: 3,
            broker_interrupted: true,
            ..measured()
        };
        let twice = Scraped {
            rejected: 3,
            ..scraped()
        };
        assert_eq!(MetricsCheck::of(twice.clone(), &broker).failure(), None);
        let lost = Scraped {
            dead_lettered: 1,
            ..twice.clone()
        };
        assert!(MetricsCheck::of(lost, &broker).failure().is_some());
        let unbroken = Measured {
            broker_interrupted: false,
            ..broker
        };
        assert!(MetricsCheck::of(twice, &unbroken).failure().is_some());
    }

    #[test]
    fn after_kills_a_lost_tail_passes_but_no_replay_counted_fails() {
        let killed = Measured {
            starts: 4,
            effective_kills: 3,
            ..measured()
        };
        let tail_lost = Scraped {
            lives: 4,
            written: 90,
            already_present: 12,
            dead_lettered: 1,
            ..scraped()
        };
        assert_eq!(MetricsCheck::of(tail_lost.clone(), &killed).failure(), None);
        let no_replay = Scraped {
            already_present: 0,
            ..tail_lost
        };
        let why = MetricsCheck::of(no_replay, &killed).failure().unwrap();
        assert!(why.contains("no record already present"), "{why}");
        // A sink that tells only a replay of the same batch may count a replay cut otherwise
        // as written.
        let whole_batches = Measured {
            replays_told_per_record: false,
            ..killed
        };
        let recut = Scraped {
            lives: 4,
            already_present: 0,
            ..scraped()
        };
        assert_eq!(MetricsCheck::of(recut, &whole_batches).failure(), None);
    }
}
