//! [`IcebergSinkConfig`].

use pico_sink::CommitPolicy;
use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::IcebergSink`]. Read from a file with serde: `table_namespace` and
/// `table` are required, the rest defaults as [`IcebergSinkConfig::new`] says; an unknown key is
/// refused with its name. In a file the table's namespace levels are `table_namespace`, so that
/// `namespace` names the identity's namespace as in every other sink.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct IcebergSinkConfig {
    /// Namespace levels of the table (`["pico"]`; in a file `table_namespace`).
    #[serde(rename = "table_namespace")]
    pub namespace: Vec<String>,
    /// Table name.
    pub table: String,
    /// Identity namespace, qualifying `pico_topic` and the watermark keys (in a file
    /// `namespace = "cluster-a"`; default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// Create the namespace and table when missing (default `true`).
    #[serde(default = "create_table")]
    pub create_table: bool,
    /// Commit conflicts tolerated within one `consume` before `Retryable` (default 50).
    #[serde(default = "max_conflicts")]
    pub max_conflicts: u32,
    /// Table upkeep: snapshots kept when the sink expires old ones (default 100). Once the
    /// table holds twice as many, the commit that got there is followed by an expiry that keeps
    /// the newest `keep_snapshots` (the newest is always the sink's own and carries every
    /// partition's watermark), so the metadata every commit rewrites stays bounded. `None`
    /// (in a file `keep_snapshots = 0`): the sink never expires snapshots (run your own
    /// maintenance).
    #[serde(with = "keep_snapshots", default = "default_keep_snapshots")]
    pub keep_snapshots: Option<usize>,
    /// How many records a runtime gathers into one batch, that is into one snapshot
    /// ([`pico_sink::Sink::commit_policy`]); default 500 000 records, 64 MiB or 60 s (in a file
    /// `[commit]` with `max_records`, `max_bytes`, `max_latency_ms`). Every commit writes a data
    /// file, a manifest, a manifest list and a metadata file, so batches of a few hundred
    /// records leave many small files.
    #[serde(default)]
    pub commit: CommitPolicy,
}

/// The default of [`IcebergSinkConfig::create_table`].
fn create_table() -> bool {
    true
}

/// The default of [`IcebergSinkConfig::max_conflicts`].
fn max_conflicts() -> u32 {
    50
}

/// The default of [`IcebergSinkConfig::keep_snapshots`].
fn default_keep_snapshots() -> Option<usize> {
    Some(100)
}

/// [`IcebergSinkConfig::keep_snapshots`] in a file: a count, 0 for "never expire".
mod keep_snapshots {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        keep: &Option<usize>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(keep.map_or(0, |k| k as u64))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<usize>, D::Error> {
        usize::deserialize(deserializer).map(|k| (k > 0).then_some(k))
    }
}

impl IcebergSinkConfig {
    /// Defaults: create when missing, up to 50 conflicts per batch, keep 100 snapshots,
    /// commits of up to 500 000 records, 64 MiB or 60 s ([`CommitPolicy::default`]).
    pub fn new(namespace: impl Into<String>, table: impl Into<String>) -> Self {
        Self {
            namespace: vec![namespace.into()],
            table: table.into(),
            scope: Scope::default(),
            create_table: create_table(),
            max_conflicts: max_conflicts(),
            keep_snapshots: default_keep_snapshots(),
            commit: CommitPolicy::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::config::checks::file_form;

    #[test]
    fn reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let text = "table_namespace = [\"pico\"]\ntable = \"events\"\n";
        let full = format!(
            "{text}namespace = \"east\"\ncreate_table = false\nmax_conflicts = 3\n\
             keep_snapshots = 0\n[commit]\nmax_records = 1000\n"
        );
        let new = IcebergSinkConfig::new("pico", "events");
        let typo = format!("{text}keep_snapshot = 5\n");
        let read = file_form(text, &new, &full, &[(&typo, "keep_snapshot")]);
        assert_eq!(read.namespace, ["pico"]);
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert!(!read.create_table);
        assert_eq!(read.max_conflicts, 3);
        assert_eq!(read.keep_snapshots, None);
        assert_eq!(read.commit.max_records, 1000);
        assert_eq!(read.commit.max_bytes, CommitPolicy::default().max_bytes);
    }
}
