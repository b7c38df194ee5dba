//! What a sink does when a record's identity is already held with another payload.

use serde::{Deserialize, Serialize};

/// What happens when the destination already holds a record with the same identity
/// (`topic:partition:offset`). On a true replay the record is the one already there, and every
/// action leaves it as it is; they differ when the identity comes back with another payload
/// (a recreated topic, a second cluster without a namespace, a non-deterministic upstream):
/// [`Outcome::changed`](crate::Outcome::changed) counts those where the destination stores a
/// content digest ([`Record::content_digest`](crate::Record::content_digest)). In a
/// configuration file the setting is also accepted as `on_changed = "overwrite" | "keep" |
/// "reject"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConflictAction {
    /// Overwrite what is held with the record (`overwrite`).
    #[default]
    #[serde(alias = "overwrite")]
    Update,
    /// Keep what is held (`keep`).
    #[serde(alias = "keep")]
    Nothing,
    /// Keep what is held and reject the record with its offset and [`CHANGED_REASON`], for a
    /// dead-letter queue. Needs the stored digest, which tells a changed record from a replay.
    Reject,
}

/// Why [`ConflictAction::Reject`] refuses a record.
pub const CHANGED_REASON: &str = "identity reused with another payload: was the topic recreated?";

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
