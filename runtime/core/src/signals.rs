//! The signals that ask a runtime to drain and stop.

use tracing::info;

/// Completes at the first SIGTERM or SIGINT: a runtime then stops reading, delivers and
/// confirms what it holds, and returns [`crate::Exit::Drained`].
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    info!("signal received");
}
