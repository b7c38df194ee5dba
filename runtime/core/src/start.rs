//! What every runtime does before it reads a record: metrics and probes served from the start
//! (a destination down at start shows in `/ready`), the sink wrapped by the metrics and opened,
//! riding out a destination that is down.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pico_sink::Sink;

use crate::Exit;
use crate::endpoint::Endpoint;
use crate::health::Health;
use crate::metered::Metered;
use crate::metrics::Metrics;
use crate::outage::open_through_outage;
use crate::settings::{MetricsSettings, RetrySettings};

/// The `[metrics]` listener could not bind its address.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve /metrics on {address}: {source}; set [metrics] listen to a free address")]
pub struct MetricsUnavailable {
    /// The address of `[metrics] listen`.
    pub address: SocketAddr,
    /// Why it could not bind.
    pub source: std::io::Error,
}

/// A runtime started: its metrics, its probes and its sink, opened.
pub struct Started {
    /// The runtime's metrics, under its prefix.
    pub metrics: Arc<Metrics>,
    /// What `/health` and `/ready` answer.
    pub health: Arc<Health>,
    /// The sink, metered, opened.
    pub sink: Arc<dyn Sink>,
    /// The `/metrics` endpoint when `[metrics]` is set: served until this is dropped, so keep
    /// it until the run ends.
    pub endpoint: Option<Endpoint>,
}

/// Serves metrics (under `prefix`) and probes when `[metrics]` is set, meters the sink and
/// opens it through an outage. `Ok(Err(exit))` is how the run ends when the sink could not be
/// opened (`Fatal`, `GaveUp`) or `shutdown` came first (`Drained`).
pub async fn start<F: Future<Output = ()>>(
    prefix: &str,
    probes: Option<&MetricsSettings>,
    retry: &RetrySettings,
    sink: Arc<dyn Sink>,
    shutdown: Pin<&mut F>,
) -> Result<Result<Started, Exit>, MetricsUnavailable> {
    let metrics = Arc::new(Metrics::new(prefix));
    let limits = probes.cloned().unwrap_or_default();
    let health = Arc::new(Health::new(
        Duration::from_millis(limits.unready_after_ms),
        Duration::from_millis(limits.stalled_after_ms),
    ));
    let endpoint = match probes {
        Some(m) => Some(
            crate::endpoint::serve(m.listen, metrics.clone(), health.clone())
                .await
                .map_err(|source| MetricsUnavailable {
                    address: m.listen,
                    source,
                })?,
        ),
        None => None,
    };
    metrics.sink_described(&sink.describe());
    let sink: Arc<dyn Sink> = Arc::new(Metered::new(sink, metrics.clone(), health.clone()));
    let opened = open_through_outage(
        sink.clone(),
        retry.policy(),
        retry.max_retry_duration(),
        shutdown,
    )
    .await;
    if let Err(exit) = opened {
        return Ok(Err(exit));
    }
    health.opened();
    Ok(Ok(Started {
        metrics,
        health,
        sink,
        endpoint,
    }))
}
