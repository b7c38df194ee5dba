//! S3 against a plain `PutObject` of the same JSON lines.

use std::time::Instant;

use aws_sdk_s3::primitives::ByteStream;
use pico_conformance::target::Readback;
use pico_sink_s3::{S3Sink, S3SinkConfig};

use super::read_objects;

use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Place, batch, compare};
use crate::provide::first_available;
use crate::serve::Server;
use crate::serve::s3::S3Server;

/// The S3 sink (one object per batch) beside a plain PUT of the same bytes.
pub async fn s3(size: BenchSize) -> Result<SinkBench, String> {
    let server = first_available(S3Server::provide).await?;
    let client = server.client();
    server.ensure_bucket("bench").await?;
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let b = batch(rep as u32, 0, records);
            let mut body = Vec::new();
            for r in b.records() {
                let envelope = pico_sink::kit::Envelope::from_record(&Default::default(), r);
                serde_json::to_writer(&mut body, &envelope).map_err(|e| e.to_string())?;
                body.push(b'\n');
            }
            let started = Instant::now();
            client
                .put_object()
                .bucket("bench")
                .key(format!("raw/{records}/{rep}.jsonl"))
                .body(ByteStream::from(body))
                .send()
                .await
                .map_err(|e| format!("{e:?}"))?;
            Ok(started.elapsed())
        },
        async |place: Place| {
            let mut config = S3SinkConfig::new("bench", format!("sink/{place}"));
            config.endpoint = Some(server.endpoint.clone());
            config.credentials =
                Some((server.access_key.clone(), server.secret_key.clone().into()));
            S3Sink::new(config).map_err(|e| e.to_string())
        },
        async |place: Place| {
            let (rows, _) = read_objects(&client, "bench", &format!("sink/{place}/")).await?;
            Ok(Readback::of_rows(rows))
        },
    )
    .await?;
    let info = server.info();
    server.stop().await?;
    Ok(SinkBench {
        sink: "s3".into(),
        server: format!("{} {}", info.name, info.version),
        raw_path: "plain PutObject of the same JSON lines".into(),
        rows,
        notes: Vec::new(),
    })
}
