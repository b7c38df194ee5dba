//! What already carries the sink's table name: a table the sink can write, another kind of
//! relation it must refuse, or a system catalog that would shadow it.

use pico_sink::SinkError;
use tokio_postgres::Client;

use crate::classify::classify;
use crate::ident::QualifiedTable;

/// The kinds of relation a name can denote (`pg_class.relkind`), as errors name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationKind {
    /// An ordinary or a partitioned table: the sink writes into it.
    Table,
    /// A view.
    View,
    /// A materialized view.
    MaterializedView,
    /// A sequence.
    Sequence,
    /// A foreign table (no `ON CONFLICT` through a foreign data wrapper).
    ForeignTable,
    /// An index.
    Index,
    /// A composite type or any other relation.
    Other,
}

impl RelationKind {
    /// The kind of a `pg_class.relkind` letter.
    pub fn of_relkind(relkind: &str) -> Self {
        match relkind {
            "r" | "p" => Self::Table,
            "v" => Self::View,
            "m" => Self::MaterializedView,
            "S" => Self::Sequence,
            "f" => Self::ForeignTable,
            "i" | "I" => Self::Index,
            _ => Self::Other,
        }
    }

    /// "a view", "a sequence", … for messages.
    pub fn described(self) -> &'static str {
        match self {
            Self::Table => "a table",
            Self::View => "a view",
            Self::MaterializedView => "a materialized view",
            Self::Sequence => "a sequence",
            Self::ForeignTable => "a foreign table",
            Self::Index => "an index",
            Self::Other => "a relation other than a table",
        }
    }
}

/// What carries the table's name, in its schema and in `pg_catalog`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NameUse {
    /// The relation of that name in the table's schema, if any.
    pub own: Option<RelationKind>,
    /// Whether `pg_catalog` has a relation of the same name (which unqualified queries find
    /// before the table, whatever the `search_path`).
    pub in_catalog: bool,
}

impl NameUse {
    /// Looks the name up in `pg_class`.
    pub async fn of(client: &Client, table: &QualifiedTable) -> Result<Self, SinkError> {
        let rows = client
            .query(
                "SELECT n.nspname::text, c.relkind::text FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relname = $2 AND n.nspname IN ($1, 'pg_catalog')",
                &[&table.schema, &table.table],
            )
            .await
            .map_err(|e| {
                classify(e, "looking the table's name up in pg_class").into_sink_error()
            })?;
        let mut out = Self::default();
        for row in rows {
            let (schema, kind): (String, String) = (row.get(0), row.get(1));
            if schema == table.schema {
                out.own = Some(RelationKind::of_relkind(&kind));
            }
            if schema == "pg_catalog" && table.schema != "pg_catalog" {
                out.in_catalog = true;
            }
        }
        Ok(out)
    }

    /// `Fatal` unless the sink can write `table`: absent (the sink may create it) or a table,
    /// and not a name a system catalog shadows. The message names what the object is and what
    /// to change.
    pub fn check(self, table: &QualifiedTable) -> Result<(), SinkError> {
        if self.in_catalog {
            return Err(SinkError::fatal(format!(
                "table {table}: {name} is also a system catalog (pg_catalog.{name}), which every \
                 query that names it without a schema reads instead: give the table another name",
                name = table.table
            )));
        }
        match self.own {
            None | Some(RelationKind::Table) => Ok(()),
            Some(kind) => Err(SinkError::fatal(format!(
                "{table} is {}, not a table: the sink writes rows into a table (it creates one when \
                 missing); name a table, or a name not yet taken",
                kind.described()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_relation_is_named_and_only_a_table_passes() {
        let t = QualifiedTable::new("public", "orders");
        assert!(NameUse::default().check(&t).is_ok());
        for letter in ["r", "p"] {
            let ok = NameUse {
                own: Some(RelationKind::of_relkind(letter)),
                in_catalog: false,
            };
            assert!(ok.check(&t).is_ok(), "{letter}");
        }
        for (letter, named) in [
            ("v", "a view"),
            ("m", "a materialized view"),
            ("S", "a sequence"),
            ("f", "a foreign table"),
            ("i", "an index"),
            ("c", "a relation other than a table"),
        ] {
            let e = NameUse {
                own: Some(RelationKind::of_relkind(letter)),
                in_catalog: false,
            }
            .check(&t)
            .expect_err(letter);
            assert!(e.is_fatal(), "{e}");
            assert!(e.to_string().contains(named), "{letter}: {e}");
        }
        let shadowed = NameUse {
            own: None,
            in_catalog: true,
        }
        .check(&QualifiedTable::new("public", "pg_class"))
        .expect_err("shadowed");
        assert!(
            shadowed.to_string().contains("pg_catalog.pg_class"),
            "{shadowed}"
        );
    }
}
