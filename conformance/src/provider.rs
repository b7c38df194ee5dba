//! [`ProviderKind`]: where a destination comes from.
//!
//! `auto` tries, per target: `external` (a running server the environment names), `docker`
//! (a container through a Docker-compatible engine), `native` (a server binary found on the
//! machine, started on a free port with a temp data dir), `embedded` (in-process). A target
//! that no provider can serve is skipped with every provider's reason, and the skip is counted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a destination comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// A running server named by environment variables.
    External,
    /// A container started through a Docker-compatible engine.
    Docker,
    /// A server binary found on this machine.
    Native,
    /// In-process.
    Embedded,
}

impl ProviderKind {
    /// The order `auto` tries.
    pub const AUTO_ORDER: [ProviderKind; 4] = [
        ProviderKind::External,
        ProviderKind::Docker,
        ProviderKind::Native,
        ProviderKind::Embedded,
    ];
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderKind::External => "external",
            ProviderKind::Docker => "docker",
            ProviderKind::Native => "native",
            ProviderKind::Embedded => "embedded",
        })
    }
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::AUTO_ORDER
            .into_iter()
            .find(|k| k.to_string() == s)
            .ok_or_else(|| format!("{s:?} is not a provider: external, docker, native or embedded"))
    }
}
