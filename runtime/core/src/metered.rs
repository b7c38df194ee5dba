//! The sink as the partitions' workers call it: every call timed and its outcome counted in
//! the [`Metrics`] (written, already present, changed, refused; failures by kind), and told to
//! the [`Health`] (a run of failures makes the process not ready).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use pico_sink::{Batch, CommitPolicy, Description, Outcome, Sink, SinkError};

use crate::health::Health;
use crate::metrics::{Metrics, error_kind};

/// A sink whose calls are counted.
pub struct Metered {
    sink: Arc<dyn Sink>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

impl Metered {
    /// `sink`, each call counted into `metrics` and its answer reported to `health`.
    pub fn new(sink: Arc<dyn Sink>, metrics: Arc<Metrics>, health: Arc<Health>) -> Self {
        Self {
            sink,
            metrics,
            health,
        }
    }
}

#[async_trait]
impl Sink for Metered {
    async fn open(&self) -> Result<(), SinkError> {
        self.sink.open().await
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let started = Instant::now();
        let result = self.sink.consume(batch).await;
        self.metrics.sink_called(batch, &result, started.elapsed());
        self.health
            .sink_answered(result.as_ref().err().map(error_kind));
        result
    }

    async fn close(&self) -> Result<(), SinkError> {
        self.sink.close().await
    }

    fn describe(&self) -> Description {
        self.sink.describe()
    }

    fn commit_policy(&self) -> Option<CommitPolicy> {
        self.sink.commit_policy()
    }
}
