//! The table the sink writes: its columns, and the checks that refuse a table on which a replay
//! would become a duplicate (or a record would vanish), naming what the table is and what to
//! change.

use pico_sink::SinkError;
use pico_sink::identity::columns;
use pico_sink::kit::MappedColumn;

/// The columns the sink writes ([`columns::RECORD`]), with the types it creates them with.
pub(crate) const COLUMNS: [(&str, &str); 7] = [
    (columns::TOPIC, "String"),
    (columns::PARTITION, "UInt32"),
    (columns::OFFSET, "UInt64"),
    (columns::RECORD_KEY, "String"),
    (columns::VALUE, "String"),
    (columns::HEADERS, "String"),
    (columns::TIMESTAMP, "Nullable(Int64)"),
];

/// The sorting key replays collapse on: one row per identity ([`columns::KEY`]).
pub(crate) const SORTING_KEY: &str = "pico_topic, pico_partition, pico_offset";

/// `table`'s missing columns as the `ALTER TABLE` that adds them, or `None` when none is
/// missing.
pub(crate) fn missing_columns(
    table: &str,
    described: &[String],
    mapped: &[MappedColumn],
) -> Option<SinkError> {
    let wanted = COLUMNS
        .iter()
        .map(|(c, t)| ((*c).to_owned(), (*t).to_owned()))
        .chain(
            mapped
                .iter()
                .map(|m| (m.column.clone(), format!("Nullable({})", m.sql_type))),
        );
    let missing: Vec<(String, String)> = wanted
        .filter(|(c, _)| !described.iter().any(|d| d == c))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let names: Vec<&str> = missing.iter().map(|(c, _)| c.as_str()).collect();
    let adds: Vec<String> = missing
        .iter()
        .map(|(c, t)| format!("ADD COLUMN {} {t}", crate::config::ident(c)))
        .collect();
    Some(SinkError::fatal(format!(
        "table {table} lacks the columns {}. To change: ALTER TABLE {table} {}; or name a table \
         of the sink's own, which it creates",
        names.join(", "),
        adds.join(", ")
    )))
}

/// Refuses a table whose engine would keep a replay as another row, drop records, or not take
/// inserts: only a ReplacingMergeTree (any replicated or shared variant) sorted by
/// [`SORTING_KEY`] collapses replays into one row per identity. `sorting_key` is `None` where
/// the server does not report it.
pub(crate) fn check_engine(
    table: &str,
    engine: &str,
    sorting_key: Option<&str>,
) -> Result<(), SinkError> {
    let wanted = format!("ReplacingMergeTree ORDER BY ({SORTING_KEY})");
    let instead = format!(
        "create it as ENGINE = {wanted}, or name a table not yet taken, which the sink creates so"
    );
    let refuse = |what: String| Err(SinkError::fatal(format!("table {table} {what}: {instead}")));
    if engine.ends_with("ReplacingMergeTree") {
        return match sorting_key {
            Some(key) if normalise(key) != normalise(SORTING_KEY) => refuse(format!(
                "is sorted by ({key}): ReplacingMergeTree keeps one row per sorting key, so \
                 records would replace each other (loss) or replays stay apart"
            )),
            _ => Ok(()),
        };
    }
    match engine {
        "View" | "MaterializedView" | "LiveView" | "WindowView" => refuse(format!(
            "is a {engine}, not a table the sink can write rows into"
        )),
        "Null" => refuse("has the Null engine: every record written would be discarded".into()),
        "Distributed" | "Buffer" | "Merge" => {
            tracing::warn!(
                table,
                engine,
                "the sink writes through a {engine} table: replays collapse only if the tables \
                 under it are ReplacingMergeTree ORDER BY ({SORTING_KEY})"
            );
            Ok(())
        }
        _ => refuse(format!(
            "has the engine {engine}, which keeps every replay as another row"
        )),
    }
}

/// A sorting key without its spaces, to compare.
fn normalise(key: &str) -> String {
    key.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_columns_are_the_shared_schema() {
        assert_eq!(SORTING_KEY, columns::KEY.join(", "));
        let names: Vec<&str> = COLUMNS.iter().map(|(c, _)| *c).collect();
        assert_eq!(names, columns::RECORD);
    }

    #[test]
    fn only_a_replacing_table_on_the_identity_is_taken() {
        let ok = |engine, key| check_engine("`d`.`t`", engine, key).is_ok();
        assert!(ok("ReplacingMergeTree", Some(SORTING_KEY)));
        assert!(ok(
            "ReplicatedReplacingMergeTree",
            Some("pico_topic,pico_partition,pico_offset")
        ));
        assert!(ok("ReplacingMergeTree", None));
        assert!(ok("Distributed", None));
        for (engine, key, says) in [
            (
                "MergeTree",
                Some(SORTING_KEY),
                "has the engine MergeTree, which keeps every replay",
            ),
            ("Log", None, "has the engine Log"),
            ("View", None, "is a View, not a table"),
            ("Null", None, "would be discarded"),
            (
                "ReplacingMergeTree",
                Some("pico_topic"),
                "is sorted by (pico_topic)",
            ),
        ] {
            let e = check_engine("`d`.`t`", engine, key).unwrap_err();
            let text = e.to_string();
            assert!(e.is_fatal(), "{text}");
            assert!(text.contains(says), "{engine}: {text}");
            assert!(
                text.contains(
                    "ENGINE = ReplacingMergeTree ORDER BY (pico_topic, pico_partition, pico_offset)"
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn missing_columns_come_with_the_alter_that_adds_them() {
        let described: Vec<String> = [
            "pico_topic",
            "pico_partition",
            "pico_offset",
            "key",
            "value",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let mapped = [MappedColumn {
            column: "reading".into(),
            field: "reading".into(),
            sql_type: "Int64".into(),
        }];
        let text = missing_columns("`d`.`t`", &described, &mapped)
            .unwrap()
            .to_string();
        assert!(
            text.contains(
                "ALTER TABLE `d`.`t` ADD COLUMN `headers` String, ADD COLUMN `ts` Nullable(Int64), \
                 ADD COLUMN `reading` Nullable(Int64)"
            ),
            "{text}"
        );
        let all: Vec<String> = COLUMNS.iter().map(|(c, _)| (*c).to_owned()).collect();
        assert!(missing_columns("`d`.`t`", &all, &[]).is_none());
    }
}
