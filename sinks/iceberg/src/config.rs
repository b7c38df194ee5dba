//! [`IcebergSinkConfig`].

use pico_sink::identity::Scope;

/// Configuration of [`crate::IcebergSink`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IcebergSinkConfig {
    /// Namespace levels of the table (`["pico"]`).
    pub namespace: Vec<String>,
    /// Table name.
    pub table: String,
    /// Identity namespace (qualifies `pico_topic` and the watermark keys).
    pub scope: Scope,
    /// Create the namespace and table when missing.
    pub create_table: bool,
    /// Commit conflicts tolerated within one `consume` before `Retryable`.
    pub max_conflicts: u32,
}

impl IcebergSinkConfig {
    /// Defaults: create when missing, up to 50 conflicts per batch.
    pub fn new(namespace: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            namespace: vec![namespace.into()],
            table: table.into(),
            scope: Scope::default(),
            create_table: true,
            max_conflicts: 50,
        }
    }
}
