//! The pipeline file's `namespace`, end to end through pico-kafka into a real PostgreSQL: two
//! pipelines read the same topic, as two clusters with the same topic names would, each under
//! its own namespace, into one table; every record is there once per namespace, under
//! `<namespace>/<topic>`. A third pipeline under a namespace already used writes nothing new:
//! its records are the same identities, so the control shows the namespace is what kept the
//! first two apart. Where no broker or no PostgreSQL can be provided, the test prints a loud
//! SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pico_kafka::runtime::Exit;
use pico_suite::crash::{PARTITIONS, committed};
use pico_suite::destinations::postgres::server::{PgServer, connect};
use pico_suite::provide::first_available;
use pico_suite::serve::Server;
use pico_suite::serve::kafka::Broker;

/// Records produced to each partition.
const PER_PARTITION: u64 = 30;

/// Runs a pipeline reading `topic` as `group` into `sink` until every partition is committed to
/// its end, then drains it.
async fn run_to_the_end(broker: &Broker, topic: &str, group: &str, sink: &str) {
    let pipeline = pico_kafka::Pipeline::from_toml(&format!(
        "[kafka]\nbrokers = \"{}\"\ngroup = \"{group}\"\ntopics = [\"{topic}\"]\n\n\
         [batch]\nmax_records = 25\nlinger_ms = 50\n\n{sink}",
        broker.brokers
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let built = pipeline.sink.build().await.unwrap();
    let shutdown = {
        let (brokers, group, topic) = (broker.brokers.clone(), group.to_owned(), topic.to_owned());
        async move {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(90) {
                let offsets = committed(&brokers, &group, &topic).await.unwrap();
                if offsets.len() == PARTITIONS as usize
                    && offsets.values().all(|o| *o == PER_PARTITION)
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let exit = tokio::time::timeout(
        Duration::from_secs(120),
        pico_kafka::run(&pipeline, built, shutdown),
    )
    .await
    .expect("run did not end within 120 s")
    .unwrap();
    assert!(matches!(exit, Exit::Drained), "{exit:?}");
    let offsets = committed(&broker.brokers, group, topic).await.unwrap();
    assert!(
        offsets.values().all(|o| *o == PER_PARTITION),
        "{group}: {offsets:?}"
    );
}

/// Rows of `table` per `pico_topic`, and the distinct identities among them.
async fn rows(pg: &PgServer, table: &str) -> (BTreeMap<String, i64>, i64) {
    let c = connect(pg.url()).await.unwrap();
    let per_topic = c
        .query(
            &format!("SELECT pico_topic, count(*) FROM public.\"{table}\" GROUP BY 1"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .collect();
    let distinct = c
        .query_one(
            &format!(
                "SELECT count(*) FROM (SELECT DISTINCT pico_topic, pico_partition, pico_offset \
                 FROM public.\"{table}\") d"
            ),
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    (per_topic, distinct)
}

#[tokio::test]
async fn each_namespace_keeps_its_own_copy_and_a_namespace_used_again_adds_nothing() {
    let Some((broker, topic, group)) = common::fresh_topic("namespace", PER_PARTITION).await else {
        return;
    };
    let pg = match first_available(PgServer::provide).await {
        Ok(pg) => pg,
        Err(reasons) => {
            eprintln!("SKIPPED — no PostgreSQL could be provided: {reasons}");
            broker.stop().await.unwrap();
            return;
        }
    };
    let table = format!("namespaces_{}", fastrand::u32(..));
    let section = |namespace: &str| {
        format!(
            "[sink]\nkind = \"postgres\"\ntable = \"{table}\"\nnamespace = \"{namespace}\"\n\
             [sink.connection]\nurl = \"{}\"\n",
            pg.url()
        )
    };
    let all = i64::try_from(PER_PARTITION).unwrap() * i64::from(PARTITIONS);
    let (east, west) = (format!("east/{topic}"), format!("west/{topic}"));

    run_to_the_end(&broker, &topic, &format!("{group}-east"), &section("east")).await;
    let (after_east, _) = rows(&pg, &table).await;
    assert_eq!(after_east, BTreeMap::from([(east.clone(), all)]));

    run_to_the_end(&broker, &topic, &format!("{group}-west"), &section("west")).await;
    let (after_west, _) = rows(&pg, &table).await;
    assert_eq!(
        after_west,
        BTreeMap::from([(east.clone(), all), (west.clone(), all)])
    );

    // The control: the same records under a namespace already used are the same identities.
    run_to_the_end(&broker, &topic, &format!("{group}-again"), &section("east")).await;
    let (after_again, distinct) = rows(&pg, &table).await;
    eprintln!(
        "{all} records per namespace; rows per pico_topic after east {after_east:?}, after west \
         {after_west:?}, after east again {after_again:?}; {distinct} distinct identities"
    );
    assert_eq!(after_again, after_west);
    assert_eq!(distinct, 2 * all);
    pg.stop().await.unwrap();
    broker.stop().await.unwrap();
}
