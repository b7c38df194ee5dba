//! Quickwit against a plain ingest of the same documents.

use std::time::Instant;

use pico_sink::Sink;
use pico_sink_quickwit::{QuickwitSink, QuickwitSinkConfig};

use super::{read_index, start};
use crate::measure::{BenchSize, SinkBench};
use crate::measure::{Place, batch, compare};
use crate::provide::first_available;
use crate::serve::Server;

/// The Quickwit sink (a watermark search, then ingest above it) beside
/// `QuickwitSink::ingest_unguarded`: the same documents in one plain `ingest` request, into an
/// index of the same configuration; both with `commit=wait_for` and a 1 s commit timeout.
pub async fn quickwit(size: BenchSize) -> Result<SinkBench, String> {
    let (hosted, info) = first_available(start).await?;
    let sink_for = |index: String| {
        let mut config = QuickwitSinkConfig::new(hosted.url.as_str(), index);
        config.commit_timeout_secs = 1;
        QuickwitSink::new(config).map_err(|e| e.to_string())
    };
    let index = |place: Place| format!("sink-{place}").replace('_', "-");
    let rows = compare(
        size,
        async |records: u64, rep: usize| {
            let plain = sink_for(format!("raw-{records}-{rep}"))?;
            plain.open().await.map_err(|e| e.to_string())?;
            let b = batch(rep as u32, 0, records);
            let started = Instant::now();
            plain
                .ingest_unguarded(&b)
                .await
                .map_err(|e| e.to_string())?;
            Ok(started.elapsed())
        },
        async |place: Place| sink_for(index(place)),
        async |place: Place| read_index(&hosted.url, &index(place)).await,
    )
    .await?;
    hosted.stop().await?;
    Ok(SinkBench {
        sink: "quickwit".into(),
        server: format!("{} {}", info.name, info.version),
        raw_path: "plain ingest of the same documents (commit=wait_for)".into(),
        rows,
        notes: Vec::new(),
    })
}
