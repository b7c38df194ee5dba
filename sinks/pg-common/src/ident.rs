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

/// A table in a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    fn quoting_survives_hostile_names() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(
            QualifiedTable::new("pub lic", "t\"x").to_string(),
            "\"pub lic\".\"t\"\"x\""
        );
    }
}
