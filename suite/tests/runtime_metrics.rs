//! pico-kafka's `/metrics` scraped over HTTP while it moves a topic into a real PostgreSQL
//! through a real Kafka-protocol broker (tansu started natively, Kafka through docker, or
//! `PICO_KAFKA_BROKERS`): what it says it read, wrote, found already present and
//! dead-lettered must be what the broker and the table hold. A second group replays the
//! whole topic into the same table: every good record must be counted as already present and
//! none as written, and the table must not grow. A real Prometheus (Debian's package, started
//! natively) scrapes the same endpoint every second: what it reads must be what the test read.
//! Where no broker or no PostgreSQL can be provided, the test prints a loud SKIPPED line; where
//! no Prometheus is installed, a SKIPPED line for that part.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use pico_kafka::runtime::Exit;
use pico_suite::crash::{PARTITIONS, committed};
use pico_suite::destinations::postgres::server::{PgServer, connect};
use pico_suite::provide::{first_available, free_port};
use pico_suite::serve::Server;
use pico_suite::serve::prometheus::Prometheus;

/// Records per partition.
const PER_PARTITION: u64 = 300;
/// Every this-many-th record (from the fifth) is not JSON: the table refuses it.
const BAD_EVERY: u64 = 50;

fn is_bad(i: u64) -> bool {
    i % BAD_EVERY == 5
}

/// A scrape: each sample's name and labels (as written) with its value.
struct Scrape(Vec<(String, String, f64)>);

impl Scrape {
    fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').unwrap();
                let (name, labels) = match series.split_once('{') {
                    Some((n, rest)) => (n, rest.trim_end_matches('}')),
                    None => (series, ""),
                };
                (name.to_owned(), labels.to_owned(), value.parse().unwrap())
            })
            .collect();
        Self(samples)
    }

    /// The sum of `name` over every label set.
    fn sum(&self, name: &str) -> f64 {
        self.0
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, _, v)| v)
            .sum()
    }

    /// `name` per partition (its `partition` label).
    fn per_partition(&self, name: &str) -> BTreeMap<u32, f64> {
        self.0
            .iter()
            .filter(|(n, _, _)| n == name)
            .filter_map(|(_, labels, v)| {
                let p = labels
                    .split(',')
                    .find_map(|l| l.strip_prefix("partition=\""))?;
                Some((p.trim_end_matches('"').parse().ok()?, *v))
            })
            .collect()
    }
}

async fn scrape(port: u16) -> Result<Scrape, String> {
    let response = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .map_err(|e| e.to_string())?;
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = response.text().await.map_err(|e| e.to_string())?;
    assert!(text.ends_with("# EOF\n"), "not OpenMetrics text: {text}");
    Ok(Scrape::parse(&text))
}

/// What a real Prometheus read, beside what the test read: (query, the test's sum, Prometheus's).
type Compared = Vec<(&'static str, f64, Option<f64>)>;

/// The sums a real Prometheus must read as the test does.
const COMPARED: [&str; 5] = [
    "pico_kafka_records_read_total",
    "pico_kafka_records_written_total",
    "pico_kafka_records_already_present_total",
    "pico_kafka_records_dead_lettered_total",
    "pico_kafka_consumer_lag",
];

/// Runs a group over the topic with metrics on `port`; once the group committed every record
/// and the lag and in-flight bytes read 0, scrapes once more and, with a `prometheus` scraping
/// `port`, waits (up to 15 s) until it reads the same sums; then drains and returns the scrape
/// and the comparison.
async fn run_group(
    (brokers, topic, group): (&str, &str, &str),
    pg: &PgServer,
    table: &str,
    port: u16,
    prometheus: Option<&Prometheus>,
) -> (Scrape, Compared) {
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{brokers}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\n\
         [batch]\nmax_records = 100\nlinger_ms = 50\n\n\
         [dead_letter]\ntopic = \"{topic}-dlq\"\n\n\
         [metrics]\nlisten = \"127.0.0.1:{port}\"\nlag_interval_ms = 200\n\n\
         [sink]\nkind = \"postgres\"\ntable = \"{table}\"\n[sink.connection]\nurl = \"{}\"\n",
        pg.url()
    ))
    .unwrap();
    let sink = pipeline.sink.build().await.unwrap();
    let (brokers, group, topic) = (brokers.to_owned(), group.to_owned(), topic.to_owned());
    let (seen, mut last) = tokio::sync::oneshot::channel();
    let settled = async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = committed(&brokers, &group, &topic)
                .await
                .unwrap_or_default();
            if now.len() < PARTITIONS as usize || now.values().any(|c| *c < PER_PARTITION) {
                continue;
            }
            let Ok(s) = scrape(port).await else { continue };
            let lags = s.per_partition("pico_kafka_consumer_lag");
            if lags.len() == PARTITIONS as usize
                && lags.values().all(|l| *l == 0.0)
                && s.sum("pico_kafka_in_flight_bytes") == 0.0
            {
                let mut compared = Vec::new();
                if let Some(p) = prometheus {
                    for name in COMPARED {
                        let read = p
                            .wait_for(
                                &format!("sum({name})"),
                                s.sum(name),
                                Duration::from_secs(15),
                            )
                            .await
                            .unwrap();
                        compared.push((name, s.sum(name), read));
                    }
                }
                let _ = seen.send((s, compared));
                break;
            }
        }
    };
    let exit = tokio::time::timeout(
        Duration::from_secs(120),
        pico_kafka::run(&pipeline, sink, settled),
    )
    .await
    .expect("the topic was not moved, or the lag never read 0, within 120 s")
    .unwrap();
    assert_eq!(exit, Exit::Drained);
    let mut gone = false;
    for _ in 0..40 {
        if reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .is_err()
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the listener outlived the run by 2 s");
    last.try_recv().unwrap()
}

#[tokio::test]
async fn metrics_agree_with_the_broker_the_table_and_prometheus_and_count_a_replay_as_already_present()
 {
    let Some((broker, topic, group)) = common::fresh_topic("metrics", 0).await else {
        return;
    };
    let pg = match first_available(PgServer::provide).await {
        Ok(pg) => pg,
        Err(reasons) => {
            eprintln!("SKIPPED — no PostgreSQL could be provided: {reasons}");
            return;
        }
    };
    broker
        .create_topic(&format!("{topic}-dlq"), 1)
        .await
        .unwrap();
    common::produce_values(&broker.brokers, &topic, PER_PARTITION, |i| {
        if is_bad(i) {
            format!("reading {i} is not json")
        } else {
            format!("{{\"i\":{i}}}")
        }
    })
    .await;
    let table = format!("metrics_{}", fastrand::u32(..));
    let total = PER_PARTITION * PARTITIONS as u64;
    let bad = (0..PER_PARTITION).filter(|i| is_bad(*i)).count() as u64 * PARTITIONS as u64;
    let good = total - bad;
    let port = free_port().unwrap();
    let prometheus = match Prometheus::start(&[format!("127.0.0.1:{port}")]).await {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("SKIPPED (the Prometheus part) — no Prometheus could be started: {e}");
            None
        }
    };
    let agree = |compared: &Compared| {
        eprintln!("Prometheus read (query, the test's sum, Prometheus's): {compared:?}");
        for (name, ours, theirs) in compared {
            assert_eq!(
                Some(*ours),
                *theirs,
                "{name}: Prometheus read another value"
            );
        }
    };

    let replayed = format!("{group}-replay");
    // A group moves the topic into the table; what Prometheus read must be what the test read.
    let moved = async |group: &str| {
        let (scrape, compared) = run_group(
            (&broker.brokers, &topic, group),
            &pg,
            &table,
            port,
            prometheus.as_ref(),
        )
        .await;
        agree(&compared);
        let rows: i64 = connect(pg.url())
            .await
            .unwrap()
            .query_one(&format!("SELECT count(*) FROM public.\"{table}\""), &[])
            .await
            .unwrap()
            .get(0);
        (scrape, rows)
    };
    let (first, rows) = moved(&group).await;
    eprintln!(
        "first group: read {}, written {}, already present {}, rejected {}, dead-lettered {}; \
         table {rows} rows of {good} good records ({bad} bad)",
        first.sum("pico_kafka_records_read_total"),
        first.sum("pico_kafka_records_written_total"),
        first.sum("pico_kafka_records_already_present_total"),
        first.sum("pico_kafka_records_rejected_total"),
        first.sum("pico_kafka_records_dead_lettered_total"),
    );
    assert_eq!(
        rows as u64, good,
        "the table must hold every good record once"
    );
    assert_eq!(first.sum("pico_kafka_records_read_total"), total as f64);
    assert_eq!(first.sum("pico_kafka_records_written_total"), good as f64);
    assert_eq!(first.sum("pico_kafka_records_already_present_total"), 0.0);
    assert_eq!(first.sum("pico_kafka_records_rejected_total"), bad as f64);
    assert_eq!(
        first.sum("pico_kafka_records_dead_lettered_total"),
        bad as f64
    );
    let offsets = first.per_partition("pico_kafka_committed_offset");
    assert_eq!(offsets.len(), PARTITIONS as usize);
    assert!(
        offsets.values().all(|o| *o == PER_PARTITION as f64),
        "{offsets:?}"
    );
    assert!(first.sum("pico_kafka_rebalances_total") >= 1.0);
    assert_eq!(
        first.sum("pico_kafka_batch_records_count"),
        first.sum("pico_kafka_sink_consume_seconds_count"),
        "every sink call succeeded, one per batch"
    );

    // Another group replays the whole topic into the same table.
    let (replay, rows_after) = moved(&replayed).await;
    eprintln!(
        "replaying group: read {}, written {}, already present {}, rejected {}; table {rows_after} rows",
        replay.sum("pico_kafka_records_read_total"),
        replay.sum("pico_kafka_records_written_total"),
        replay.sum("pico_kafka_records_already_present_total"),
        replay.sum("pico_kafka_records_rejected_total"),
    );
    assert_eq!(rows_after, rows, "the replay must not add a row");
    assert_eq!(replay.sum("pico_kafka_records_read_total"), total as f64);
    assert_eq!(replay.sum("pico_kafka_records_written_total"), 0.0);
    assert_eq!(
        replay.sum("pico_kafka_records_already_present_total"),
        good as f64
    );
    if let Some(p) = prometheus {
        p.stop().await.unwrap();
    }
    broker.stop().await.unwrap();
}
