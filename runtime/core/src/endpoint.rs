//! The HTTP listener an operator's Prometheus and orchestrator reach: `GET /metrics` answers
//! the [`Metrics`] in the OpenMetrics text format, `GET /health` and `GET /ready` the
//! [`Health`] probes (200 or 503, the reason in the body). It runs only when the pipeline file
//! has a `[metrics]` section, on loopback unless the section names another address, and stops
//! when the runtime's run returns (the [`Endpoint`] is dropped).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::health::Health;
use crate::metrics::{CONTENT_TYPE, Metrics};

/// What the listener answers from.
#[derive(Clone)]
struct Served {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

/// The running listener; dropping it stops it.
pub struct Endpoint {
    task: JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `address` and serves `metrics` and `health` there until the returned [`Endpoint`] is
/// dropped.
pub async fn serve(
    address: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<Endpoint, std::io::Error> {
    let listener = TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(scrape))
        .route("/health", get(live))
        .route("/ready", get(ready))
        .with_state(Served { metrics, health });
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            warn!(error = %e, "the metrics listener stopped");
        }
    });
    // The port the system chose, where the file asked for port 0.
    info!(%address, "serving /metrics, /health and /ready");
    Ok(Endpoint { task })
}

async fn scrape(State(served): State<Served>) -> Response {
    match served.metrics.encode() {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the metrics failed: {e}"),
        )
            .into_response(),
    }
}

async fn live(State(served): State<Served>) -> Response {
    probe(served.health.live(Instant::now()))
}

async fn ready(State(served): State<Served>) -> Response {
    probe(served.health.ready(Instant::now()))
}

/// 200 with the reason, or 503 with it.
fn probe(answer: Result<String, String>) -> Response {
    match answer {
        Ok(reason) => (StatusCode::OK, reason + "\n").into_response(),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason + "\n").into_response(),
    }
}
