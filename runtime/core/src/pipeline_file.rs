//! Reading a runtime's pipeline file: TOML into the runtime's own pipeline type, then the
//! checks that refuse a file that cannot run, each saying what to change.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::settings::{ChaosSettings, LogSettings};
use crate::sinks::SinkSettings;

/// Why a pipeline file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable file.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not a pipeline.
    #[error("{path} is not a valid pipeline file: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        source: toml::de::Error,
    },
    /// Parsed, but not usable.
    #[error("{0}")]
    Invalid(String),
}

/// A runtime's pipeline file: its broker's section beside the shared ones, and its checks.
pub trait PipelineFile: DeserializeOwned {
    /// Refuses a parsed pipeline that cannot run, with a message that says what to change.
    fn check(&self) -> Result<(), ConfigError>;
    /// The `[log]` section: how the process logs.
    fn log(&self) -> &LogSettings;
    /// The `[sink]` section.
    fn sink(&self) -> &SinkSettings;
    /// The `[chaos]` section (the crash suites' faults; empty in production).
    fn chaos(&self) -> &ChaosSettings;
    /// What the pipeline consumes as, for `check`'s answer: `group orders-sink`,
    /// `durable orders-sink`.
    fn consumer(&self) -> String;
}

/// Reads a pipeline file and checks it.
pub fn read<P: PipelineFile>(path: &Path) -> Result<P, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses a pipeline from TOML text and checks it; `name` names the text in errors.
pub fn parse<P: PipelineFile>(text: &str, name: &str) -> Result<P, ConfigError> {
    let pipeline: P = toml::from_str(text).map_err(|source| ConfigError::Parse {
        path: name.to_owned(),
        source,
    })?;
    pipeline.check()?;
    Ok(pipeline)
}
