//! The column schema shared by every table-shaped destination.
//!
//! A sink that writes rows stores the identity in [`TOPIC`], [`PARTITION`], [`OFFSET`] and keys
//! (or orders) the table on them ([`KEY`]); the record itself goes to [`RECORD_KEY`], [`VALUE`],
//! [`HEADERS`] and [`TIMESTAMP`] ([`RECORD`] lists all seven in table order). Sinks that answer
//! a replay from content digests add [`DIGEST`]. Where one field must hold the whole identity (a
//! document id, a primary key field) it is called [`ID`].
//!
//! Each destination picks its own types; the names are the same everywhere, so a query written
//! against one sink's table reads another's. Columns a user adds (payload fields mapped to their
//! own columns) may not take one of these names: [`check_user_column`].

/// Topic of the record, qualified with the namespace (`ns/topic`) when one is configured.
pub const TOPIC: &str = "pico_topic";
/// Partition of the record.
pub const PARTITION: &str = "pico_partition";
/// Offset of the record.
pub const OFFSET: &str = "pico_offset";
/// The whole identity in one field, in the destination's encoding.
pub const ID: &str = "pico_id";
/// The three key columns, in key order.
pub const KEY: [&str; 3] = [TOPIC, PARTITION, OFFSET];
/// The record's key (the broker's message key, not the table's key), when it has one.
pub const RECORD_KEY: &str = "key";
/// The record's payload.
pub const VALUE: &str = "value";
/// The record's headers (the destination's JSON or text form), when it has any.
pub const HEADERS: &str = "headers";
/// The record's timestamp: a timestamp type where the destination has one with millisecond
/// precision, else milliseconds since the Unix epoch.
pub const TIMESTAMP: &str = "ts";
/// A digest of the record's content, which lets a sink answer an exact replay by reading the
/// range's digests instead of writing it again.
pub const DIGEST: &str = "pico_digest";
/// Every column a table sink writes for a record, in table order.
pub const RECORD: [&str; 7] = [
    TOPIC, PARTITION, OFFSET, RECORD_KEY, VALUE, HEADERS, TIMESTAMP,
];
/// Prefix of every name the sinks keep for themselves (identity, digests, staging tables).
pub const RESERVED_PREFIX: &str = "pico_";

/// Whether a sink writes a column called `name` itself (one of [`RECORD`], or a name starting
/// with [`RESERVED_PREFIX`]).
pub fn is_reserved(name: &str) -> bool {
    RECORD.contains(&name) || name.starts_with(RESERVED_PREFIX)
}

/// `Err` with what to change when a column a user configured (a mapped payload field) would
/// take a name the sink writes itself.
pub fn check_user_column(name: &str) -> Result<(), String> {
    if is_reserved(name) {
        return Err(format!(
            "mapped column {name:?} collides with a column the sink writes itself ({} or a name \
             starting with {RESERVED_PREFIX:?}): rename it",
            RECORD.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sinks_own_names_are_refused_for_user_columns_and_others_pass() {
        for name in RECORD.iter().chain([&DIGEST, &ID, &"pico_stage"]) {
            let err = check_user_column(name).unwrap_err();
            assert!(err.contains(name) && err.contains("rename"), "{err}");
        }
        for name in ["amount", "Value", "tsx", "pico", "my_pico_x"] {
            assert!(check_user_column(name).is_ok(), "{name}");
        }
    }
}
