//! [`DeltaSinkConfig`].

use pico_sink::CommitPolicy;
use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::DeltaSink`]. `Debug` redacts secret storage options. Read from a
/// file with serde: `location` is required, the rest defaults as [`DeltaSinkConfig::new`] says;
/// an unknown key is refused with its name.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DeltaSinkConfig {
    /// Table location: a local path or a URL (`file:///…`, or `s3://bucket/path` with the
    /// crate's `s3` feature).
    pub location: String,
    /// Object-store options (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`, …). On S3 a commit is a conditional PUT of the next log
    /// entry (`If-None-Match: *`), so the store must honour it (AWS S3, MinIO, SeaweedFS do);
    /// no lock table is needed. Default: none.
    #[serde(default)]
    pub storage_options: std::collections::HashMap<String, String>,
    /// Create the table when missing (default `true`).
    #[serde(default = "create_if_missing")]
    pub create_if_missing: bool,
    /// `delta.checkpointInterval` for tables the sink creates (default 10).
    #[serde(default = "checkpoint_interval")]
    pub checkpoint_interval: u32,
    /// Commit attempts per batch when other writers keep taking the next version (default 32).
    #[serde(default = "commit_attempts")]
    pub commit_attempts: u32,
    /// Namespace qualifying `pico_topic` and the application id (`namespace = "cluster-a"`;
    /// default: none).
    #[serde(
        rename = "namespace",
        with = "namespace",
        default,
        skip_serializing_if = "namespace::is_unset"
    )]
    pub scope: Scope,
    /// How many records a runtime gathers into one batch, that is into one table commit
    /// ([`pico_sink::Sink::commit_policy`]); default 500 000 records, 64 MiB or 60 s. Every
    /// commit adds a log entry and at least one data file, so batches of a few hundred
    /// records leave many small files and a long log.
    #[serde(default)]
    pub commit: CommitPolicy,
}

/// The default of [`DeltaSinkConfig::create_if_missing`].
fn create_if_missing() -> bool {
    true
}

/// The default of [`DeltaSinkConfig::checkpoint_interval`].
fn checkpoint_interval() -> u32 {
    10
}

/// The default of [`DeltaSinkConfig::commit_attempts`].
fn commit_attempts() -> u32 {
    32
}

impl std::fmt::Debug for DeltaSinkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut options = pico_sink::kit::redact_options(self.storage_options.iter());
        options.sort();
        f.debug_struct("DeltaSinkConfig")
            .field("location", &pico_sink::kit::redact_url(&self.location))
            .field("storage_options", &options)
            .field("create_if_missing", &self.create_if_missing)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("commit_attempts", &self.commit_attempts)
            .field("scope", &self.scope)
            .field("commit", &self.commit)
            .finish()
    }
}

impl DeltaSinkConfig {
    /// Defaults: create if missing, a checkpoint every 10 commits, 32 commit attempts, commits
    /// of up to 500 000 records, 64 MiB or 60 s ([`CommitPolicy::default`]).
    pub fn new(location: impl Into<String>) -> Self {
        Self {
            location: location.into(),
            storage_options: std::collections::HashMap::new(),
            create_if_missing: create_if_missing(),
            checkpoint_interval: checkpoint_interval(),
            commit_attempts: commit_attempts(),
            scope: Scope::default(),
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
        let text = "location = \"s3://b/t\"\n";
        let full = format!(
            "{text}create_if_missing = false\ncheckpoint_interval = 5\ncommit_attempts = 3\n\
             namespace = \"east\"\n[storage_options]\nAWS_SECRET_ACCESS_KEY = \"s3cr3t\"\n\
             [commit]\nmax_latency_ms = 1000\n"
        );
        let new = DeltaSinkConfig::new("s3://b/t");
        let typo = format!("{text}checkpoint = 1\n");
        let read = file_form(text, &new, &full, &[(&typo, "checkpoint")]);
        assert!(!read.create_if_missing);
        assert_eq!((read.checkpoint_interval, read.commit_attempts), (5, 3));
        assert_eq!(read.scope.namespace().unwrap().as_str(), "east");
        assert_eq!(read.storage_options["AWS_SECRET_ACCESS_KEY"], "s3cr3t");
        assert_eq!(read.commit.max_latency_ms, 1000);
        assert!(!format!("{read:?}").contains("s3cr3t"), "Debug must redact");
    }

    #[test]
    fn debug_redacts_secret_storage_options() {
        let mut c = DeltaSinkConfig::new("s3://bucket/table");
        c.storage_options
            .insert("AWS_SECRET_ACCESS_KEY".into(), "wJalrXUtnFEMI".into());
        c.storage_options
            .insert("AWS_ACCESS_KEY_ID".into(), "AKIA".into());
        let text = format!("{c:?}");
        assert!(
            text.contains("AKIA") && !text.contains("wJalrXUtnFEMI"),
            "{text}"
        );
    }
}
