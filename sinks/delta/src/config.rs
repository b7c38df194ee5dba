//! [`DeltaSinkConfig`].

use pico_sink::identity::Scope;
use serde::{Deserialize, Serialize};

/// Configuration of [`crate::DeltaSink`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeltaSinkConfig {
    /// Table location: a local path or a URL (`file:///…`).
    pub location: String,
    /// Create the table when missing.
    pub create_if_missing: bool,
    /// `delta.checkpointInterval` for tables the sink creates.
    pub checkpoint_interval: u32,
    /// Commit attempts per batch when other writers keep taking the next version.
    pub commit_attempts: u32,
    /// Namespace qualifying `pico_topic` and the application id.
    pub scope: Scope,
}

impl DeltaSinkConfig {
    /// Defaults: create if missing, a checkpoint every 10 commits, 32 commit attempts.
    pub fn new(location: impl Into<String>) -> Self {
        Self {
            location: location.into(),
            create_if_missing: true,
            checkpoint_interval: 10,
            commit_attempts: 32,
            scope: Scope::default(),
        }
    }
}
