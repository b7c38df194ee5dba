//! Column and field names shared by every table-shaped destination.
//!
//! A sink that writes rows stores the identity in these columns and keys (or orders) the table
//! on [`TOPIC`], [`PARTITION`], [`OFFSET`]. Where one field must hold the whole identity (a
//! document id, a primary key field) it is called [`ID`].

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
