//! ClickHouse sink behaviour against a real ClickHouse (external, docker or the native server
//! installed here). Where none can be provided, the test prints a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_sink::identity::RecordId;
use pico_sink::kit::MappedColumn;
use pico_sink::{Batch, Record, Sink};
use pico_sink_clickhouse::{ClickHouseSink, ClickHouseSinkConfig};
use pico_suite::destinations::clickhouse::server::ClickHouseServer;
use pico_suite::provide::first_available;
use pico_suite::serve::Server;

#[tokio::test]
async fn mapped_columns_are_parsed_and_a_value_that_does_not_parse_is_rejected() {
    let server = match first_available(ClickHouseServer::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no ClickHouse could be provided: {reasons}");
            return;
        }
    };
    let mut config = ClickHouseSinkConfig::new(server.url(), "pico_test", "mapped");
    config.mapped_columns = vec![
        MappedColumn {
            column: "reading".into(),
            field: "reading".into(),
            sql_type: "Int64".into(),
        },
        MappedColumn {
            column: "unit".into(),
            field: "/meta/unit".into(),
            sql_type: "String".into(),
        },
    ];
    let sink = ClickHouseSink::new(config).unwrap();
    sink.open().await.unwrap();
    let batch = Batch::new(
        [
            r#"{"reading":10,"meta":{"unit":"m3"}}"#,
            r#"{"reading":"not a number"}"#,
            r#"{"reading":32}"#,
            r#"[1,2]"#,
        ]
        .iter()
        .enumerate()
        .map(|(o, v)| Record::new(RecordId::new("t", 0, o as u64), *v))
        .collect(),
    )
    .unwrap();
    let Ok(pico_sink::Outcome {
        rejected: records,
        written,
        ..
    }) = sink.consume(&batch).await
    else {
        panic!("expected rejections");
    };
    let offsets: Vec<u64> = records.iter().map(|r| r.id.offset).collect();
    assert_eq!(offsets, vec![1, 3], "{records:?}");
    assert!(
        records[1].reason.contains("JSON object"),
        "{}",
        records[1].reason
    );
    assert_eq!(written, 2);
    let sum = server
        .query("SELECT sum(reading), count(unit) FROM pico_test.mapped FINAL FORMAT TabSeparated")
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&sum).trim(), "42\t1");
    // A replay inserts nothing new (the watermark is offset 2); the record it could not take
    // above the watermark is rejected again, never silently dropped.
    let Ok(pico_sink::Outcome {
        rejected: records,
        written,
        already_present,
        ..
    }) = sink.consume(&batch).await
    else {
        panic!("expected the bad record again");
    };
    assert_eq!(
        records.iter().map(|r| r.id.offset).collect::<Vec<_>>(),
        vec![3]
    );
    assert_eq!((written, already_present), (0, 3));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_sink_on_the_callers_own_client_writes_once_and_answers_replays() {
    let server = match first_available(ClickHouseServer::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no ClickHouse could be provided: {reasons}");
            return;
        }
    };
    // The caller's client, from the clickhouse crate the sink re-exports.
    let client = pico_sink_clickhouse::clickhouse::Client::default().with_url(server.url());
    let sink = ClickHouseSink::with_client(
        client,
        ClickHouseSinkConfig::for_table("pico_test", "own_client"),
    )
    .unwrap();
    sink.open().await.unwrap();
    let batch = Batch::new(
        (0..50)
            .map(|o| Record::new(RecordId::new("t", 0, o), format!(r#"{{"n":{o}}}"#)))
            .collect(),
    )
    .unwrap();
    let first = sink.consume(&batch).await.unwrap();
    let replay = sink.consume(&batch).await.unwrap();
    assert_eq!((first.written, replay.already_present), (50, 50));
    // Physical rows, not a merged view.
    let rows = server
        .query("SELECT count() FROM pico_test.own_client FORMAT TabSeparated")
        .await
        .unwrap();
    println!(
        "rows through the caller's client: {}",
        String::from_utf8_lossy(&rows).trim()
    );
    assert_eq!(String::from_utf8_lossy(&rows).trim(), "50");
    server.stop().await.unwrap();
}

#[test]
fn a_url_or_credentials_beside_the_callers_client_are_refused() {
    let client = pico_sink_clickhouse::clickhouse::Client::default();
    let refused = |config: ClickHouseSinkConfig| {
        ClickHouseSink::with_client(client.clone(), config)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let msg = refused(ClickHouseSinkConfig::new(
        "http://default:hunter2@ch:8123",
        "db",
        "t",
    ));
    println!("{msg}");
    assert!(
        msg.contains("ClickHouseSinkConfig::for_table(database, table)"),
        "{msg}"
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    let mut config = ClickHouseSinkConfig::for_table("db", "t");
    config.credentials = Some(("ingest".into(), pico_sink::kit::Secret::new("hunter2")));
    let msg = refused(config);
    assert!(
        msg.contains("credentials") && !msg.contains("hunter2"),
        "{msg}"
    );
    let msg = ClickHouseSink::new(ClickHouseSinkConfig::for_table("db", "t"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("url is empty") && msg.contains("with_client"),
        "{msg}"
    );
}

/// A table on which a replay would stay a second row, or that takes no rows, is refused at
/// `open` for what it is; a table lacking columns gets the `ALTER TABLE` that adds them.
#[tokio::test]
async fn a_table_of_another_engine_or_shape_is_refused_for_what_it_is() {
    let server = match first_available(ClickHouseServer::provide).await {
        Ok(s) => s,
        Err(reasons) => {
            eprintln!("SKIPPED — no ClickHouse could be provided: {reasons}");
            return;
        }
    };
    let columns = "pico_topic String, pico_partition UInt32, pico_offset UInt64, key String, \
                   value String, headers String, ts Nullable(Int64)";
    for sql in [
        "CREATE DATABASE IF NOT EXISTS shapes".to_owned(),
        format!(
            "CREATE TABLE shapes.plain ({columns}) ENGINE = MergeTree \
             ORDER BY (pico_topic, pico_partition, pico_offset)"
        ),
        format!("CREATE TABLE shapes.by_topic ({columns}) ENGINE = ReplacingMergeTree ORDER BY pico_topic"),
        format!("CREATE TABLE shapes.logged ({columns}) ENGINE = Log"),
        "CREATE VIEW shapes.a_view AS SELECT * FROM shapes.plain".to_owned(),
        "CREATE TABLE shapes.narrow (pico_topic String, pico_partition UInt32, pico_offset UInt64, \
         key String, value String) ENGINE = ReplacingMergeTree \
         ORDER BY (pico_topic, pico_partition, pico_offset)"
            .to_owned(),
    ] {
        server.query(&sql).await.unwrap();
    }
    let key_reported = server
        .query(
            "SELECT count() FROM system.columns WHERE database = 'system' AND table = 'tables' \
             AND name = 'sorting_key' FORMAT TabSeparated",
        )
        .await
        .unwrap();
    let key_reported = String::from_utf8_lossy(&key_reported).trim() == "1";
    println!("this server reports sorting keys: {key_reported}");
    let mut cases = vec![
        (
            "plain",
            "has the engine MergeTree, which keeps every replay as another row",
        ),
        ("logged", "has the engine Log"),
        ("a_view", "is a View, not a table"),
        (
            "narrow",
            "lacks the columns headers, ts. To change: ALTER TABLE `shapes`.`narrow` ADD COLUMN \
             `headers` String, ADD COLUMN `ts` Nullable(Int64)",
        ),
    ];
    if key_reported {
        cases.push(("by_topic", "is sorted by (pico_topic)"));
    }
    for (table, says) in cases {
        let sink =
            ClickHouseSink::new(ClickHouseSinkConfig::new(server.url(), "shapes", table)).unwrap();
        let e = sink.open().await.err().unwrap();
        let text = e.to_string();
        println!("{table}: {text}");
        assert!(e.is_fatal(), "{table}: {text}");
        assert!(text.contains(says), "{table}: {text}");
    }
    // The sink's own table passes.
    let sink =
        ClickHouseSink::new(ClickHouseSinkConfig::new(server.url(), "shapes", "own")).unwrap();
    sink.open().await.unwrap();
    server.stop().await.unwrap();
}
