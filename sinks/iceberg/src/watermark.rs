//! The watermark map carried in snapshot summaries.

use std::collections::BTreeMap;

use iceberg::spec::TableMetadata;

/// The snapshot-summary property holding the JSON map `[ns/]topic:partition` → last offset.
pub const WATERMARK_PROPERTY: &str = "pico.watermarks";

/// The watermark map: that of the newest snapshot that carries one, walking back from the
/// current snapshot through parents, else the table property of the same name (written with
/// every commit of the sink, so it survives when another engine's snapshots sit on top and the
/// sink's own have been expired); empty for a table this sink never wrote. `Err` for a value
/// that is not the map (written by something else under our name).
pub fn watermarks(metadata: &TableMetadata) -> Result<BTreeMap<String, u64>, String> {
    let mut next = metadata.current_snapshot().map(|s| s.snapshot_id());
    while let Some(id) = next {
        let Some(snapshot) = metadata.snapshot_by_id(id) else {
            // Expired ancestor: nothing older is reachable.
            break;
        };
        if let Some(text) = snapshot
            .summary()
            .additional_properties
            .get(WATERMARK_PROPERTY)
        {
            return parse(text, &format!("snapshot {id}"));
        }
        next = snapshot.parent_snapshot_id();
    }
    match metadata.properties().get(WATERMARK_PROPERTY) {
        Some(text) => parse(text, "the table"),
        None => Ok(BTreeMap::new()),
    }
}

/// A watermark map from its JSON text, found in `holder`.
fn parse(text: &str, holder: &str) -> Result<BTreeMap<String, u64>, String> {
    serde_json::from_str(text).map_err(|e| {
        format!("{holder} has a {WATERMARK_PROPERTY} property that is not a map of offsets: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_round_trips_any_topic() {
        let mut map = BTreeMap::new();
        map.insert("ns/orders:eu\"x:3".to_owned(), u64::MAX);
        map.insert("t:0".to_owned(), 7);
        let text = serde_json::to_string(&map).unwrap();
        let back: BTreeMap<String, u64> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, map);
    }
}
