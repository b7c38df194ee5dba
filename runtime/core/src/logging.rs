//! How a runtime logs: human-readable text or one JSON object per line, to stderr, as the
//! pipeline file's `[log]` section says ([`crate::settings::LogSettings`]). Every line logged
//! while a batch is delivered (the driver's retries, the sink's own lines, the commit, the dead
//! letters) carries the batch's topic, partition and first..last offsets: each delivery runs
//! inside a [`batch_span`].

use pico_sink::Batch;
use tracing::Span;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::settings::{LogFormat, LogSettings};

/// The span a batch's delivery runs in: its topic, partition and first and last offsets.
pub fn batch_span(batch: &Batch) -> Span {
    tracing::info_span!(
        "batch",
        topic = %batch.topic(),
        partition = batch.partition(),
        first = batch.id().first,
        last = batch.id().last
    )
}

/// The filter: `RUST_LOG` when set, else the file's level.
fn filter(settings: &LogSettings) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&settings.level))
}

/// Installs the process's subscriber, writing to stderr. Fails if one is installed already.
pub fn init(settings: &LogSettings) -> Result<(), String> {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    install(settings, std::io::stderr, ansi)
}

/// Installs a subscriber writing through `writer` (text with colours if `ansi`).
fn install<W>(settings: &LogSettings, writer: W, ansi: bool) -> Result<(), String>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(settings))
        .with_writer(writer);
    let installed = match settings.format {
        LogFormat::Text => builder.with_ansi(ansi).try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    installed.map_err(|e| format!("installing the log subscriber: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use pico_sink::Record;
    use pico_sink::identity::RecordId;
    use std::io::Write;

    use tracing::Instrument;

    use super::*;

    /// A writer into a shared buffer, for tests.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Captured {
        /// Everything written so far, as text.
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
        }
    }

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;

        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    /// In JSON, a line logged inside a batch's delivery carries the batch's topic, partition
    /// and offsets; a line outside carries none.
    #[tokio::test]
    async fn json_lines_of_a_batch_carry_its_topic_partition_and_offsets() {
        let batch = Batch::new(
            (40..45)
                .map(|o| Record::new(RecordId::new("orders", 3, o), "{}"))
                .collect(),
        )
        .unwrap();
        let captured = Captured::default();
        let settings = LogSettings {
            format: LogFormat::Json,
            level: "info".into(),
        };
        install(&settings, captured.clone(), false).unwrap();
        async { tracing::warn!(attempt = 2, "consume failed") }
            .instrument(batch_span(&batch))
            .await;
        tracing::info!("outside any batch");
        eprintln!("{}", captured.text());
        let lines: Vec<serde_json::Value> = captured
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let span = &lines[0]["span"];
        assert_eq!(span["topic"], "orders", "{}", lines[0]);
        assert_eq!(span["partition"], 3);
        assert_eq!(
            (span["first"].as_u64(), span["last"].as_u64()),
            (Some(40), Some(44))
        );
        assert_eq!(lines[0]["fields"]["message"], "consume failed");
        assert_eq!(lines[0]["level"], "WARN");
        assert!(lines[1].get("span").is_none(), "{}", lines[1]);
    }
}
