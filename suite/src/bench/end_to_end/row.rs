//! What one end-to-end measurement reports, and its section of the Markdown page.

use std::fmt::Write as _;

use pico_conformance::target::ServerInfo;
use pico_kafka::config::{BatchLimits, PREFETCH_QUEUE_BYTES};
use serde::{Deserialize, Serialize};

use crate::bench::report::goals::{END_TO_END_PER_SLOWER, END_TO_END_SINKS};

/// One path's figures: medians over the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFigures {
    /// From its start (consumer created, process spawned, first batch handed to the sink) to
    /// the last record, milliseconds.
    pub total_ms: f64,
    /// Records per second in steady state (for the sink's own write, over its whole time).
    pub steady_per_s: f64,
}

/// A topic through `pico-kafka` into one destination, beside its two parts, in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndToEndRow {
    /// The destination, by its crash-suite id (`postgres`, `delta-s3`, …).
    pub sink: String,
    /// Its server.
    pub server: ServerInfo,
    /// The broker.
    pub broker: ServerInfo,
    /// Partitions of the topic.
    pub partitions: u32,
    /// Records on the topic.
    pub records: u64,
    /// Key and value bytes of each record.
    pub record_bytes: u64,
    /// The runtime's batch limits for this sink: records …
    pub max_records: u64,
    /// … payload bytes …
    pub max_bytes: u64,
    /// … and linger, milliseconds.
    pub linger_ms: u64,
    /// Repetitions of each path.
    pub reps: usize,
    /// A plain consumer of a fresh group reading the topic once.
    pub raw_consume: PathFigures,
    /// The sink alone writing the same records in the runtime's batch sizes, one writer.
    pub sink_write: PathFigures,
    /// `pico-kafka`, commit after confirm, from its spawn until every offset was committed.
    pub end_to_end: PathFigures,
    /// Lowest and highest [`EndToEndRow::per_slower`] of one repetition.
    pub per_slower_range: (f64, f64),
    /// The highest peak resident set of the runtime process over the runs, bytes.
    pub peak_rss_bytes: u64,
    /// Records the destination held, each once, after every sink write and every run (each
    /// was read back).
    pub verified_records: u64,
}

impl EndToEndRow {
    /// The slower part's rate: raw consume or the sink's own write, records per second.
    pub fn slower_per_s(&self) -> f64 {
        self.raw_consume
            .steady_per_s
            .min(self.sink_write.steady_per_s)
    }

    /// The runtime's payload bound for this row's batching over its partitions, bytes
    /// ([`BatchLimits::payload_bound`]).
    pub fn payload_bound_bytes(&self) -> u64 {
        BatchLimits {
            max_records: usize::try_from(self.max_records).unwrap_or(usize::MAX),
            max_bytes: usize::try_from(self.max_bytes).unwrap_or(usize::MAX),
            linger_ms: self.linger_ms,
        }
        .payload_bound(self.partitions as usize, PREFETCH_QUEUE_BYTES) as u64
    }

    /// pico-kafka's steady rate as a share of [`EndToEndRow::slower_per_s`].
    pub fn per_slower(&self) -> f64 {
        self.end_to_end.steady_per_s / self.slower_per_s()
    }

    /// The goal this row is judged by, when its sink has one.
    pub fn goal(&self) -> Option<String> {
        END_TO_END_SINKS.contains(&self.sink.as_str()).then(|| {
            format!(
                "{} end to end over {} partition(s) ≥ {END_TO_END_PER_SLOWER} × min(raw consume, the \
                 sink's own write), steady state",
                self.sink, self.partitions
            )
        })
    }
}

/// The end-to-end section of the Markdown page, when it ran.
pub fn render(md: &mut String, rows: &[EndToEndRow]) {
    let Some(first) = rows.first() else {
        return;
    };
    let _ = writeln!(
        md,
        "\n## End to end: broker → pico-kafka → destination\n\n{} records of {} bytes (key and \
         value) on {} {}, on a topic of 8 partitions and on one of 1, produced before the runs. \
         Three paths, {} repetitions each (medians), each path once unmeasured first, the order \
         rotating between repetitions: **raw consume**, a plain consumer of a fresh group; the \
         **sink's own write** of the same records in the runtime's batch sizes, the partitions \
         in turn, one writer; **pico-kafka** (its binary as a process, commit after confirm) \
         from its spawn until the group committed every offset, then a SIGTERM it must answer \
         by draining. Steady state starts once the group formed: at the first record received \
         (raw consume) or the first partition assigned (pico-kafka, from its log). Batch sizes \
         are the sink's commit policy's; a linger longer than {} ms is capped to it (Delta's \
         60 s would leave the topic's last partial batch waiting a minute: a latency setting, \
         not a rate). After every sink write and every pico-kafka run the destination was read \
         back and held exactly the records sent, each once. The payload bound beside the peak \
         resident set is the runtime's for the row's batching and partitions (pico-kafka's \
         README, \"Memory\"): the process and the sink's encoding come on top. \
         `scripts/profile.sh` samples pico-kafka's CPU in this benchmark: flame graphs, the \
         hottest frames and the machine's CPU by process are in [profile/](profile/).\n",
        first.records,
        first.record_bytes,
        first.broker.name,
        first.broker.version,
        first.reps,
        super::LINGER_CAP_MS
    );
    let _ = writeln!(
        md,
        "| sink | partitions | batch: records / bytes / linger | raw consume rec/s | sink's own \
         write rec/s | pico-kafka rec/s (steady) | pico-kafka / slower part (spread) | \
         pico-kafka total s (raw consume total s) | peak RSS MiB (payload bound) | verified |\n\
         |---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let _ = writeln!(
            md,
            "| {} ({} {}) | {} | {} / {} / {} ms | {:.0} | {:.0} | {:.0} | {:.2} ({:.2}–{:.2}) \
             | {:.1} ({:.1}) | {:.0} ({:.0}) | {} |",
            r.sink,
            r.server.name,
            r.server.version,
            r.partitions,
            r.max_records,
            r.max_bytes,
            r.linger_ms,
            r.raw_consume.steady_per_s,
            r.sink_write.steady_per_s,
            r.end_to_end.steady_per_s,
            r.per_slower(),
            r.per_slower_range.0,
            r.per_slower_range.1,
            r.end_to_end.total_ms / 1000.0,
            r.raw_consume.total_ms / 1000.0,
            r.peak_rss_bytes as f64 / (1024.0 * 1024.0),
            r.payload_bound_bytes() as f64 / (1024.0 * 1024.0),
            r.verified_records
        );
    }
    for r in rows.iter().filter(|r| r.per_slower() > 1.0) {
        let why = if r.partitions > 1 {
            "the sink's own write runs the partitions in turn with one writer; pico-kafka writes \
             them concurrently, one worker per partition, so the destination's time per write \
             overlaps"
                .to_owned()
        } else if r.per_slower_range.0 <= 1.0 {
            format!(
                "one writer on both paths; within the spread of the repetitions ({:.2}–{:.2})",
                r.per_slower_range.0, r.per_slower_range.1
            )
        } else {
            "one writer on both paths and every repetition above 1: unexplained, not to be \
             relied on"
                .to_owned()
        };
        let _ = writeln!(
            md,
            "\n- {} over {} partition(s): pico-kafka above its slower part ({:.2}): {why}.",
            r.sink,
            r.partitions,
            r.per_slower()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sink: &str, consume: f64, write: f64, e2e: f64) -> EndToEndRow {
        let path = |steady_per_s| PathFigures {
            total_ms: 1000.0,
            steady_per_s,
        };
        let info = |name: &str| ServerInfo {
            name: name.into(),
            version: "1".into(),
        };
        EndToEndRow {
            sink: sink.into(),
            server: info("server"),
            broker: info("broker"),
            partitions: 8,
            records: 1000,
            record_bytes: 1008,
            max_records: 500,
            max_bytes: 1 << 20,
            linger_ms: 200,
            reps: 5,
            raw_consume: path(consume),
            sink_write: path(write),
            end_to_end: path(e2e),
            per_slower_range: (0.5, 0.9),
            peak_rss_bytes: 64 << 20,
            verified_records: 1000,
        }
    }

    #[test]
    fn the_goal_judges_against_the_slower_part() {
        // The consume is the slower part here, the write there: the goal follows it.
        let consume_bound = row("postgres", 10_000.0, 50_000.0, 8_500.0);
        assert!((consume_bound.per_slower() - 0.85).abs() < 1e-9);
        let write_bound = row("delta-s3", 50_000.0, 10_000.0, 7_000.0);
        assert!((write_bound.per_slower() - 0.7).abs() < 1e-9);
        assert!(
            consume_bound
                .goal()
                .is_some_and(|g| g.contains("over 8 partition"))
        );
        // A destination outside the goal's list is reported, not judged.
        assert_eq!(row("stdout", 1.0, 1.0, 1.0).goal(), None);
    }

    #[test]
    fn the_section_shows_every_row_and_nothing_without_rows() {
        let mut md = String::new();
        render(&mut md, &[]);
        assert!(md.is_empty());
        render(
            &mut md,
            &[
                row("postgres", 10_000.0, 50_000.0, 8_500.0),
                row("s3", 10_000.0, 50_000.0, 2_000.0),
            ],
        );
        assert!(md.contains("| 0.85 (0.50–0.90) |"), "{md}");
        assert!(md.contains("| 0.20 (0.50–0.90) |"), "{md}");
        // Peak RSS beside the runtime's payload bound: 8 × 18 MiB + 64 MiB at the defaults.
        assert!(md.contains("| 64 (208) | 1000 |"), "{md}");
        assert!(!md.contains("above its slower part"), "{md}");
    }

    #[test]
    fn a_row_above_its_slower_part_says_why() {
        let mut md = String::new();
        let mut one = row("clickhouse", 50_000.0, 10_000.0, 11_000.0);
        one.partitions = 1;
        render(
            &mut md,
            &[row("clickhouse", 50_000.0, 10_000.0, 13_000.0), one.clone()],
        );
        assert!(md.contains("over 8 partition(s): pico-kafka above its slower part (1.30): the sink's own write runs the partitions in turn"), "{md}");
        assert!(md.contains("over 1 partition(s): pico-kafka above its slower part (1.10): one writer on both paths; within the spread"), "{md}");
        one.per_slower_range = (1.05, 1.2);
        let mut md = String::new();
        render(&mut md, &[one]);
        assert!(md.contains("unexplained, not to be relied on"), "{md}");
    }
}
