//! [`StdoutSettings`]: the `stdout` kind, which has no crate configuration of its own.

use pico_sink::config::namespace;
use pico_sink::identity::Scope;
use serde::Deserialize;

/// `kind = "stdout"`: JSON lines on standard output, for trying a pipeline out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StdoutSettings {
    /// Identity namespace of every line (`namespace = "cluster-a"`; default: none).
    #[serde(rename = "namespace", with = "namespace", default)]
    pub scope: Scope,
}
