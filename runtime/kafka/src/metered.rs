//! The sink as the partitions' workers call it: every call timed and its outcome counted in
//! the [`Metrics`] (written, already present, changed, refused; failures by kind).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use pico_sink::{Batch, CommitPolicy, Description, Outcome, Sink, SinkError};

use crate::metrics::Metrics;

/// A sink whose calls are counted.
pub(crate) struct Metered {
    sink: Arc<dyn Sink>,
    metrics: Arc<Metrics>,
}

impl Metered {
    pub(crate) fn new(sink: Arc<dyn Sink>, metrics: Arc<Metrics>) -> Self {
        Self { sink, metrics }
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
