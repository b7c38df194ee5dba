//! Mapped columns: JSON payload fields written to named, typed columns of table destinations.

use serde::{Deserialize, Serialize};

use crate::SinkError;

/// One payload field written to its own column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappedColumn {
    /// Column name in the table.
    pub column: String,
    /// A top-level field name, or a JSON pointer (`/reading/value`).
    pub field: String,
    /// The column's type in the destination's SQL dialect (`bigint`, `Int64`, ...). The value
    /// travels as text and the destination converts it; a value that does not convert rejects
    /// its record.
    pub sql_type: String,
}

/// The text of each mapped field of a JSON object payload; `None` for a missing or null field.
/// Strings are taken as they are, other values as their JSON text.
pub fn extract_mapped(
    value: &serde_json::Value,
    columns: &[MappedColumn],
) -> Result<Vec<Option<String>>, String> {
    if !value.is_object() {
        return Err("mapped columns need a JSON object payload".into());
    }
    Ok(columns
        .iter()
        .map(|c| {
            let found = if c.field.starts_with('/') {
                value.pointer(&c.field)
            } else {
                value.get(&c.field)
            };
            match found {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            }
        })
        .collect())
}

/// `Fatal`, saying what to rename, when a mapped column takes a name the sink writes itself
/// ([`pico_identity::columns::check_user_column`]) or the name of another mapped column.
pub fn check_mapped_columns(columns: &[MappedColumn]) -> Result<(), SinkError> {
    for (i, c) in columns.iter().enumerate() {
        pico_identity::columns::check_user_column(&c.column).map_err(SinkError::fatal)?;
        if columns[..i]
            .iter()
            .any(|earlier| earlier.column == c.column)
        {
            return Err(SinkError::fatal(format!(
                "mapped column {:?} is configured twice (fields {:?} and {:?}): give each its \
                 own column",
                c.column,
                columns[..i]
                    .iter()
                    .find(|earlier| earlier.column == c.column)
                    .map_or("", |earlier| earlier.field.as_str()),
                c.field
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_columns_may_not_take_the_sinks_names_or_each_others() {
        let named = |column: &str, field: &str| MappedColumn {
            column: column.into(),
            field: field.into(),
            sql_type: "text".into(),
        };
        assert!(check_mapped_columns(&[named("a", "/a"), named("b", "/b")]).is_ok());
        let err = check_mapped_columns(&[named("ts", "/t")]).unwrap_err();
        assert!(
            err.is_fatal() && err.to_string().contains("\"ts\" collides"),
            "{err}"
        );
        let err = check_mapped_columns(&[named("a", "/a"), named("a", "/b")]).unwrap_err();
        assert!(
            err.is_fatal() && err.to_string().contains("\"/a\" and \"/b\""),
            "{err}"
        );
    }

    fn col(field: &str) -> MappedColumn {
        MappedColumn {
            column: "c".into(),
            field: field.into(),
            sql_type: "text".into(),
        }
    }

    #[test]
    fn fields_pointers_and_nulls() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a":"x","n":3,"o":{"p":[1,2]},"z":null}"#).unwrap();
        let got = extract_mapped(
            &v,
            &[col("a"), col("n"), col("/o/p/1"), col("z"), col("missing")],
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Some("x".into()),
                Some("3".into()),
                Some("2".into()),
                None,
                None
            ]
        );
        assert!(extract_mapped(&serde_json::json!([1]), &[col("a")]).is_err());
    }
}
