//! Identifier and literal quoting, and schema-qualified table names.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `"name"` with embedded quotes doubled: safe for any identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded quotes doubled (standard_conforming_strings).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A table in a schema. In a configuration file either its name as [`QualifiedTable::parse`]
/// reads it (`table = "sales.orders"`) or both parts (`table = { schema = "sales", table =
/// "orders" }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "TableName")]
pub struct QualifiedTable {
    /// Schema name (`public` by default).
    pub schema: String,
    /// Table name.
    pub table: String,
}

impl QualifiedTable {
    /// `schema.table`.
    pub fn new(schema: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            schema: schema.into(),
            table: table.into(),
        }
    }

    /// A table named as a configuration names it: `orders` is `public.orders`, `sales.orders`
    /// is the table `orders` in the schema `sales`. Any other name with a dot is kept whole as
    /// the table's name, which [`QualifiedTable::check`] then refuses.
    pub fn parse(name: &str) -> Self {
        match name.split_once('.') {
            Some((schema, table))
                if !schema.is_empty() && !table.is_empty() && !table.contains('.') =>
            {
                Self::new(schema, table)
            }
            _ => Self::new("public", name),
        }
    }

    /// Refuses a table or schema name the sink would take literally against the user's intent:
    /// one that holds a dot (`my.schema.orders` would otherwise become a table of that name).
    pub fn check(&self) -> Result<(), pico_sink::SinkError> {
        if self.table.contains('.') || self.schema.contains('.') {
            return Err(pico_sink::SinkError::fatal(format!(
                "table {self} has a dot inside a name: a configured name is `table` or \
                 `schema.table`; name one schema and one table (QualifiedTable::new(schema, \
                 table) in code), without dots in either"
            )));
        }
        if self.table.is_empty() || self.schema.is_empty() {
            return Err(pico_sink::SinkError::fatal(format!(
                "table {self} has an empty schema or table name: name the table the sink writes"
            )));
        }
        Ok(())
    }
}

/// How a configuration file names a table.
#[derive(Deserialize)]
#[serde(untagged)]
enum TableName {
    Text(String),
    Parts { schema: String, table: String },
}

impl TryFrom<TableName> for QualifiedTable {
    type Error = String;
    fn try_from(name: TableName) -> Result<Self, Self::Error> {
        Ok(match name {
            TableName::Text(text) => Self::parse(&text),
            TableName::Parts { schema, table } => Self::new(schema, table),
        })
    }
}

impl fmt::Display for QualifiedTable {
    /// The quoted form, ready for SQL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}",
            quote_ident(&self.schema),
            quote_ident(&self.table)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_name_is_a_table_or_a_schema_and_a_table() {
        assert_eq!(
            QualifiedTable::parse("orders"),
            QualifiedTable::new("public", "orders")
        );
        assert_eq!(
            QualifiedTable::parse("sales.orders"),
            QualifiedTable::new("sales", "orders")
        );
        for odd in ["my.schema.orders", ".orders", "sales.", ""] {
            let e = QualifiedTable::parse(odd).check().expect_err(odd);
            assert!(e.is_fatal(), "{odd}: {e}");
            println!("{odd:?}: {e}");
        }
        assert!(
            QualifiedTable::parse("my.schema.orders")
                .check()
                .is_err_and(|e| e.to_string().contains("schema.table"))
        );
        assert!(QualifiedTable::parse("sales.orders").check().is_ok());
    }

    #[test]
    fn quoting_survives_hostile_names() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(
            QualifiedTable::new("pub lic", "t\"x").to_string(),
            "\"pub lic\".\"t\"\"x\""
        );
    }
}
