//! The HTTP listener an operator's Prometheus scrapes: `GET /metrics` answers the
//! [`Metrics`] in the OpenMetrics text format. It runs only when the pipeline file has a
//! `[metrics]` section, on loopback unless the section names another address, and stops when
//! [`crate::run`] returns.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::metrics::{CONTENT_TYPE, Metrics};

/// The running listener; dropping it stops it.
pub(crate) struct Endpoint {
    task: JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `address` and serves `metrics` there until the returned [`Endpoint`] is dropped.
pub(crate) async fn serve(
    address: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<Endpoint, std::io::Error> {
    let listener = TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(scrape))
        .with_state(metrics);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            warn!(error = %e, "the metrics listener stopped");
        }
    });
    // The port the system chose, where the file asked for port 0.
    info!(%address, "serving /metrics");
    Ok(Endpoint { task })
}

async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.encode() {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding the metrics failed: {e}"),
        )
            .into_response(),
    }
}
