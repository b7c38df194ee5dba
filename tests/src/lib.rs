//! Workspace-level tests live in `tests/`; this library only locates the workspace root.

use std::path::PathBuf;

/// The workspace root (the folder holding the top-level `Cargo.toml`).
///
/// Read from `CARGO_MANIFEST_DIR` at run time (cargo and nextest set it): the compile-time value
/// would name whichever checkout last built the binary in a shared target directory.
pub fn workspace_root() -> PathBuf {
    let here = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// Names of every sink crate under `sinks/`: the `pico-sink-*` crates (the contract crate
/// `pico-sink` and support crates such as `pico-pg-common` are not sinks).
pub fn sink_crates() -> Vec<String> {
    let mut names = Vec::new();
    let Ok(dirs) = std::fs::read_dir(workspace_root().join("sinks")) else {
        return names;
    };
    for dir in dirs.flatten() {
        let Ok(manifest) = std::fs::read_to_string(dir.path().join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'));
        if let Some(name) = name.filter(|n| n.starts_with("pico-sink-")) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    names
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
