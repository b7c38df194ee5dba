//! The sink a pipeline runs: built from its `[sink]` section, then wrapped by the faults its
//! `[chaos]` section asks for (none in production).

use std::sync::Arc;
use std::time::Duration;

use pico_sink::Sink;

use crate::chaos::{HoldAfterWrite, PanicOnce};
use crate::settings::ChaosSettings;
use crate::sinks::SinkSettings;

/// Builds the sink of `[sink]` and wraps it as `[chaos]` says: a mutant sink (with the
/// `mutants` feature), a hold between the sink's confirmation and the commit, a panic inside
/// one delivery. The error says what to change in the `[sink]` section.
pub async fn build_sink(
    settings: &SinkSettings,
    chaos: &ChaosSettings,
) -> Result<Arc<dyn Sink>, String> {
    let sink = settings.build().await.map_err(|e| e.to_string())?;
    #[cfg(feature = "mutants")]
    let sink = mutant(sink, chaos);
    let sink: Arc<dyn Sink> = match &chaos.written_file {
        Some(file) => Arc::new(HoldAfterWrite::new(
            sink,
            file,
            Duration::from_millis(chaos.hold_after_write_ms),
        )),
        None => sink,
    };
    Ok(match &chaos.panic_once_file {
        Some(marker) => Arc::new(PanicOnce::new(
            sink,
            marker,
            Duration::from_millis(chaos.panic_hold_ms),
        )),
        None => sink,
    })
}

/// The sink as the `[chaos] mutant` breaks it, if it is one of the mutant sinks.
#[cfg(feature = "mutants")]
fn mutant(sink: Arc<dyn Sink>, chaos: &ChaosSettings) -> Arc<dyn Sink> {
    use crate::mutants::{AckBeforeDurable, Mutant, ReplaysAsWritten};
    if let Some(mutant) = chaos.mutant {
        tracing::warn!(
            ?mutant,
            "a mutant runtime: it breaks the at-least-once contract on purpose"
        );
    }
    match chaos.mutant {
        Some(Mutant::AckBeforeDurable) => Arc::new(AckBeforeDurable::new(sink)),
        Some(Mutant::ReplaysAsWritten) => Arc::new(ReplaysAsWritten::new(sink)),
        _ => sink,
    }
}
