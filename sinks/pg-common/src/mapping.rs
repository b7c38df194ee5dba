//! Conflict actions, and mapped columns with PostgreSQL's text rule (no NUL).

use pico_sink::MappedColumn;
use serde::{Deserialize, Serialize};

/// What happens when a row with the same `(pico_topic, pico_partition, pico_offset)` exists.
/// On a true replay the record is the row already there, and every action leaves it as it is;
/// they differ when the identity comes back with another payload (`Outcome::changed` counts
/// those where the table has `pico_digest`). In a configuration file the setting is also
/// accepted as `on_changed = "overwrite" | "keep" | "reject"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictAction {
    /// Overwrite the row with the record (`overwrite`).
    #[default]
    #[serde(alias = "overwrite")]
    Update,
    /// Keep the row already there (`keep`).
    #[serde(alias = "keep")]
    Nothing,
    /// Keep the row already there and reject the record with its offset and
    /// [`CHANGED_REASON`], for a dead-letter queue. Needs the `pico_digest` column, which tells
    /// a changed record from a replay.
    Reject,
}

/// Why [`ConflictAction::Reject`] refuses a record.
pub const CHANGED_REASON: &str = "identity reused with another payload: was the topic recreated?";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_action_reads_as_its_name_or_as_on_changed_words() {
        for (text, action) in [
            ("update", ConflictAction::Update),
            ("overwrite", ConflictAction::Update),
            ("nothing", ConflictAction::Nothing),
            ("keep", ConflictAction::Nothing),
            ("reject", ConflictAction::Reject),
        ] {
            let read: ConflictAction = serde_json::from_str(&format!("\"{text}\"")).unwrap();
            assert_eq!(read, action, "{text}");
        }
        assert!(serde_json::from_str::<ConflictAction>("\"ignore\"").is_err());
    }
}
