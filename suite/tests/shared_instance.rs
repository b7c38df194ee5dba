//! One sink instance serving every partition of a process, as a runtime embeds it: 16
//! partitions consumed concurrently, each with its own driver around the same `Arc` of a sink,
//! against real servers. Postgres runs on one pool of at most 4 connections. Nothing may be lost
//! or appear twice. Where a server cannot be provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::BTreeMap;
use std::sync::Arc;

use pico_conformance::scenarios::sample_batch;
use pico_sink::Sink;
use pico_sink::driver::{Driver, MemoryHooks};
use pico_sink_clickhouse::{ClickHouseSink, ClickHouseSinkConfig};
use pico_sink_postgres::{PostgresSink, PostgresSinkConfig};
use pico_sink_s3::{S3Sink, S3SinkConfig};
use pico_suite::destinations::clickhouse::server::ClickHouseServer;
use pico_suite::destinations::postgres::server::{PgServer, connect};
use pico_suite::provide::first_available;
use pico_suite::serve::Server;
use pico_suite::serve::s3::S3Server;

const PARTITIONS: u32 = 16;
const BATCHES: u64 = 5;
const BATCH: u64 = 40;

/// Delivers `BATCHES` batches of `BATCH` records to each of `PARTITIONS` partitions at once,
/// every partition through its own driver around `sink`; each batch is delivered twice (a
/// replay) to show the shared instance keeps partitions apart.
async fn deliver_concurrently(sink: Arc<dyn Sink>) {
    let mut tasks = Vec::new();
    for partition in 0..PARTITIONS {
        let sink = Arc::clone(&sink);
        tasks.push(tokio::spawn(async move {
            let mut driver = Driver::new(sink);
            let mut hooks = MemoryHooks::default();
            for b in 0..BATCHES {
                let batch = sample_batch("shared", partition, b * BATCH..=b * BATCH + BATCH - 1);
                driver.deliver(&batch, &mut hooks).await.unwrap();
                let replay = driver.deliver(&batch, &mut hooks).await.unwrap();
                assert_eq!(replay.outcome.written, 0, "a replay writes nothing");
            }
            hooks.committed.len()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 2 * BATCHES as usize);
    }
}

/// Every (partition, offset) exactly once.
fn assert_exactly_once(rows: &[(u32, u64)]) {
    let mut copies: BTreeMap<(u32, u64), usize> = BTreeMap::new();
    for r in rows {
        *copies.entry(*r).or_default() += 1;
    }
    assert_eq!(
        copies.len() as u64,
        u64::from(PARTITIONS) * BATCHES * BATCH,
        "every record arrived"
    );
    assert!(copies.values().all(|n| *n == 1), "no record twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_postgres_sink_on_a_pool_of_four_serves_sixteen_partitions() {
    let pg = match first_available(PgServer::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no PostgreSQL could be provided: {reasons}");
            return;
        }
    };
    let mut config = PostgresSinkConfig::new(pg.url(), "shared_sixteen");
    config.connection.pool_size = 4;
    let sink = Arc::new(PostgresSink::new(config).unwrap());
    deliver_concurrently(sink.clone()).await;
    let status = sink.pool().status();
    assert!(
        status.max_size == 4 && status.size <= 4,
        "one pool of at most 4 connections: {status:?}"
    );
    let c = connect(pg.url()).await.unwrap();
    let rows: Vec<(u32, u64)> = c
        .query(
            "SELECT pico_partition, pico_offset FROM shared_sixteen",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, i32>(0) as u32, r.get::<_, i64>(1) as u64))
        .collect();
    assert_exactly_once(&rows);
    pg.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_clickhouse_sink_serves_sixteen_partitions() {
    let server = match first_available(ClickHouseServer::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no ClickHouse could be provided: {reasons}");
            return;
        }
    };
    let config = ClickHouseSinkConfig::new(server.url(), "pico_test", "shared_sixteen");
    deliver_concurrently(Arc::new(ClickHouseSink::new(config).unwrap())).await;
    let text = server
        .query(
            "SELECT pico_partition, pico_offset FROM pico_test.shared_sixteen FINAL FORMAT TabSeparated",
        )
        .await
        .unwrap();
    let rows: Vec<(u32, u64)> = String::from_utf8_lossy(&text)
        .lines()
        .map(|l| {
            let (p, o) = l.split_once('\t').unwrap();
            (p.parse().unwrap(), o.parse().unwrap())
        })
        .collect();
    assert_exactly_once(&rows);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_s3_sink_serves_sixteen_partitions() {
    let server = match first_available(S3Server::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no S3 server could be provided: {reasons}");
            return;
        }
    };
    server.ensure_bucket("shared-sixteen").await.unwrap();
    let mut config = S3SinkConfig::new("shared-sixteen", "events")
        .with_credentials(server.access_key.clone(), server.secret_key.clone());
    config.endpoint = Some(server.endpoint.clone());
    let sink = S3Sink::new(config).unwrap();
    deliver_concurrently(Arc::new(sink)).await;
    // One object per batch: the keys name partition and range.
    let listed = server
        .client()
        .list_objects_v2()
        .bucket("shared-sixteen")
        .prefix("events/")
        .max_keys(1000)
        .send()
        .await
        .unwrap();
    let keys: Vec<String> = listed
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    assert_eq!(
        keys.len() as u64,
        u64::from(PARTITIONS) * BATCHES,
        "{keys:?}"
    );
    let mut rows = Vec::new();
    for key in &keys {
        let body = server
            .client()
            .get_object()
            .bucket("shared-sixteen")
            .key(key)
            .send()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        for line in String::from_utf8_lossy(&body).lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            rows.push((
                v["pico_partition"].as_u64().unwrap() as u32,
                v["pico_offset"].as_u64().unwrap(),
            ));
        }
    }
    assert_exactly_once(&rows);
    server.stop().await.unwrap();
}
