//! Conflict actions, and mapped columns with PostgreSQL's text rule (no NUL).

use pico_sink::MappedColumn;
use serde::{Deserialize, Serialize};

/// What happens when a row with the same `(pico_topic, pico_partition, pico_offset)` exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictAction {
    /// Overwrite the row with the replayed record (identical on a true replay).
    #[default]
    Update,
    /// Keep the row already there.
    Nothing,
}

/// [`pico_sink::extract_mapped`], refusing NUL characters, which text columns cannot store.
pub fn extract_mapped(
    value: &serde_json::Value,
    columns: &[MappedColumn],
) -> Result<Vec<Option<String>>, String> {
    let fields = pico_sink::extract_mapped(value, columns)?;
    if let Some(i) = fields
        .iter()
        .position(|f| f.as_deref().is_some_and(|t| t.contains('\0')))
    {
        return Err(format!("field {} holds a NUL character", columns[i].field));
    }
    Ok(fields)
}
