//! Mapped columns: JSON payload fields written to named, typed columns of table destinations.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
