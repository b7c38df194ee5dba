//! What every network sink says when it cannot reach its server: a closed port is `Retryable`
//! and names the host and port; a host name that does not resolve and TLS spoken to a port
//! that does not speak it are `Fatal`, with what to change. No destination server is needed:
//! the closed port is one nothing listens on, the plain-text port a listener that answers every
//! connection with an HTTP 400 and closes (what any non-TLS server does with a TLS hello).

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::io::{Read, Write};
use std::net::TcpListener;

use pico_sink::identity::RecordId;
use pico_sink::kit::error_chain;
use pico_sink::{Batch, Record, Sink, SinkError};

/// A sink built for a server at `host:port`, over TLS or not.
type Build = fn(host: &str, port: u16, tls: bool) -> Result<Box<dyn Sink>, SinkError>;

fn http(tls: bool) -> &'static str {
    if tls { "https" } else { "http" }
}

fn sinks() -> Vec<(&'static str, Build)> {
    vec![
        ("http", |h, p, tls| {
            let c = pico_sink_http::HttpSinkConfig::new(format!("{}://{h}:{p}/ingest", http(tls)));
            Ok(Box::new(pico_sink_http::HttpSink::new(c)?))
        }),
        ("elasticsearch", |h, p, tls| {
            let c = pico_sink_elasticsearch::ElasticsearchSinkConfig::new(
                format!("{}://{h}:{p}", http(tls)),
                "t",
            );
            Ok(Box::new(pico_sink_elasticsearch::ElasticsearchSink::new(
                c,
            )?))
        }),
        ("meilisearch", |h, p, tls| {
            let c = pico_sink_meilisearch::MeilisearchSinkConfig::new(
                format!("{}://{h}:{p}", http(tls)),
                "t",
            );
            Ok(Box::new(pico_sink_meilisearch::MeilisearchSink::new(c)?))
        }),
        ("quickwit", |h, p, tls| {
            let c = pico_sink_quickwit::QuickwitSinkConfig::new(
                format!("{}://{h}:{p}", http(tls)),
                "orders",
            );
            Ok(Box::new(pico_sink_quickwit::QuickwitSink::new(c)?))
        }),
        ("doris", |h, p, tls| {
            let c =
                pico_sink_doris::DorisSinkConfig::new(format!("{}://{h}:{p}", http(tls)), "d", "t");
            Ok(Box::new(pico_sink_doris::DorisSink::new(c)?))
        }),
        ("influxdb", |h, p, tls| {
            let c = pico_sink_influxdb::InfluxSinkConfig::v1(
                format!("{}://{h}:{p}", http(tls)),
                "d",
                pico_sink_influxdb::Payload::LineProtocol,
            );
            Ok(Box::new(pico_sink_influxdb::InfluxSink::new(c)?))
        }),
        ("clickhouse", |h, p, tls| {
            let c = pico_sink_clickhouse::ClickHouseSinkConfig::new(
                format!("{}://{h}:{p}", http(tls)),
                "d",
                "t",
            );
            Ok(Box::new(pico_sink_clickhouse::ClickHouseSink::new(c)?))
        }),
        ("s3", |h, p, tls| {
            let mut c =
                pico_sink_s3::S3SinkConfig::new("bucket", "p").with_credentials("key", "secret");
            c.endpoint = Some(format!("{}://{h}:{p}", http(tls)));
            Ok(Box::new(pico_sink_s3::S3Sink::new(c)?))
        }),
        ("mongodb", |h, p, tls| {
            let uri = format!("mongodb://{h}:{p}/?serverSelectionTimeoutMS=3000&tls={tls}");
            let c = pico_sink_mongodb::MongoSinkConfig::new(uri, "d", "t");
            Ok(Box::new(pico_sink_mongodb::MongoSink::new(c)))
        }),
        ("postgres", |h, p, tls| {
            let mode = if tls { "require" } else { "prefer" };
            let url = format!("postgres://app:hunter2@{h}:{p}/orders?sslmode={mode}");
            let c = pico_sink_postgres::PostgresSinkConfig::new(url, "t");
            Ok(Box::new(pico_sink_postgres::PostgresSink::new(c)?))
        }),
        ("redshift", |h, p, tls| {
            let mode = if tls { "require" } else { "prefer" };
            let url = format!("postgres://app:hunter2@{h}:{p}/orders?sslmode={mode}");
            let c = pico_sink_redshift::RedshiftSinkConfig::new(url, "t");
            Ok(Box::new(pico_sink_redshift::RedshiftSink::new(c)?))
        }),
    ]
}

/// The first error of opening the sink and writing one record through it.
async fn first_error(sink: Result<Box<dyn Sink>, SinkError>) -> SinkError {
    let sink = match sink {
        Ok(s) => s,
        Err(e) => return e,
    };
    let batch = Batch::new(vec![Record::new(RecordId::new("t", 0, 0), "{\"a\":1}")]).unwrap();
    let attempt = async {
        sink.open().await?;
        sink.consume(&batch).await
    };
    match tokio::time::timeout(std::time::Duration::from_secs(60), attempt).await {
        Ok(Ok(outcome)) => panic!("nothing listens there, yet the sink wrote: {outcome:?}"),
        Ok(Err(e)) => e,
        Err(_) => panic!("no answer within 60 s"),
    }
}

fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A port that answers every connection with a plain-text HTTP 400 and closes it.
fn plain_text_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello);
            let _ = stream.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[tokio::test]
async fn a_closed_port_is_retryable_and_names_the_server() {
    let port = closed_port();
    let mut wrong = Vec::new();
    for (name, build) in sinks() {
        let e = first_error(build("127.0.0.1", port, false)).await;
        let chain = error_chain(&e);
        println!("{name}: {chain}");
        if !e.is_retryable() || !chain.contains(&format!("127.0.0.1:{port}")) {
            wrong.push(name);
        }
        assert!(
            !chain.contains("hunter2"),
            "{name} shows the password: {chain}"
        );
    }
    assert!(
        wrong.is_empty(),
        "not Retryable, or not naming 127.0.0.1:{port}: {wrong:?}"
    );
}

#[tokio::test]
async fn a_host_name_that_does_not_resolve_is_fatal_and_says_so() {
    let host = "no-such-host.invalid";
    if std::net::ToSocketAddrs::to_socket_addrs(&(host, 80))
        .err()
        .is_some_and(|e| e.to_string().contains("Temporary failure"))
    {
        eprintln!("SKIPPED — no DNS resolver answers here, so an unknown name may yet resolve");
        return;
    }
    let mut wrong = Vec::new();
    for (name, build) in sinks() {
        let e = first_error(build(host, 9, false)).await;
        let chain = error_chain(&e);
        println!("{name}: {chain}");
        if !e.is_fatal() || !chain.contains("does not resolve") {
            wrong.push(name);
        }
    }
    assert!(wrong.is_empty(), "not Fatal with the advice: {wrong:?}");
}

#[tokio::test]
async fn tls_to_a_port_that_does_not_speak_it_is_fatal_and_says_so() {
    let port = plain_text_port();
    let mut wrong = Vec::new();
    // PostgreSQL asks for TLS in its own protocol: its refusal is tested against a real
    // server (pg_sinks.rs).
    for (name, build) in sinks()
        .into_iter()
        .filter(|(n, _)| !["postgres", "redshift"].contains(n))
    {
        let e = first_error(build("127.0.0.1", port, true)).await;
        let chain = error_chain(&e);
        println!("{name}: {chain}");
        if !e.is_fatal() || !chain.contains("does not speak TLS") {
            wrong.push(name);
        }
    }
    assert!(wrong.is_empty(), "not Fatal with the advice: {wrong:?}");
}
