//! Read-back helpers more than one destination uses: the pico envelope, as a document store,
//! a search index, a JSON-lines file or an HTTP body holds it, back into a row the judge counts.

use pico_sink::identity::Scope;
use pico_sink::kit::Envelope;

use pico_conformance::target::{PayloadForm, ReadRow, Readback, checksum, payload_checksum};

/// Reads a stored JSON document in [`pico_sink::kit::DocumentShape::Envelope`] (document stores
/// and search indexes, which normalize JSON) back into a row with a [`PayloadForm::Json`]
/// checksum.
pub(crate) fn row_from_document(document: serde_json::Value) -> Result<ReadRow, String> {
    let envelope: Envelope = serde_json::from_value(document.clone())
        .map_err(|e| format!("stored document is not an envelope ({e}): {document}"))?;
    let record = envelope
        .to_record(&Scope::default())
        .map_err(|e| format!("stored document is not a valid envelope: {e}"))?;
    Ok(ReadRow {
        id: record.id,
        checksum: payload_checksum(PayloadForm::Json, &record.value),
        value: record.value,
    })
}

/// Reads an envelope (stdout line, HTTP element) back into a row.
pub(crate) fn row_from_envelope(envelope: &Envelope) -> Result<ReadRow, String> {
    let record = envelope
        .to_record(&Scope::default())
        .map_err(|e| format!("stored element is not a valid envelope: {e}"))?;
    Ok(ReadRow {
        id: record.id,
        checksum: checksum(&record.value),
        value: record.value,
    })
}

/// The rows of an Elasticsearch-style search answer (`hits.hits[]._source`) holding envelope
/// documents.
pub(crate) fn rows_from_hits(answer: &serde_json::Value) -> Result<Readback, String> {
    let hits = answer["hits"]["hits"]
        .as_array()
        .ok_or_else(|| format!("unexpected search answer: {answer}"))?;
    let rows = hits
        .iter()
        .map(|h| row_from_document(h["_source"].clone()))
        .collect::<Result<_, _>>()?;
    Ok(Readback::of_rows(rows))
}
