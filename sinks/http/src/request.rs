//! Building request bodies and keys.

use pico_sink::kit::Envelope;
use pico_sink::{Batch, Record};

use crate::config::{BodyFormat, HttpSinkConfig};

/// The body for `records` in the configured format.
pub(crate) fn body(config: &HttpSinkConfig, records: &[Record]) -> Result<Vec<u8>, String> {
    let envelopes = records
        .iter()
        .map(|r| Envelope::from_record(&config.scope, r));
    let mut out = Vec::with_capacity(records.len() * 128);
    match config.format {
        BodyFormat::JsonArray => {
            let all: Vec<Envelope> = envelopes.collect();
            serde_json::to_writer(&mut out, &all).map_err(|e| e.to_string())?;
        }
        BodyFormat::Ndjson => {
            for envelope in envelopes {
                serde_json::to_writer(&mut out, &envelope).map_err(|e| e.to_string())?;
                out.push(b'\n');
            }
        }
    }
    Ok(out)
}

/// The `Idempotency-Key` header value (an RFC 8941 sf-string, quoted).
pub(crate) fn idempotency_key(config: &HttpSinkConfig, batch: &Batch) -> String {
    // The key content holds no `"` or `\` (escaped by the identity crate), so quoting is enough.
    format!(
        "\"{}\"",
        config.scope.idempotency_key(batch.id(), &config.key_style)
    )
}
