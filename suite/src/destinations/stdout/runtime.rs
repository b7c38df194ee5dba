//! stdout under pico-kafka: the smoke test's `stdout` sink section, and its destination, the
//! output of the case's runtime processes (the supervisor appends each process's standard
//! output and error to `runtime-<slot>.log`, across restarts). The JSON lines of the sink are
//! read back from those files; tracing's lines and a line a kill cut short are not envelopes
//! and are counted in the note.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use pico_conformance::target::ServerInfo;
use pico_sink::kit::Envelope;

use crate::destinations::read::row_from_envelope;
use crate::destinations::runtime::{Runtime, RuntimeDestination, Stored, boxed};

/// Its entry in the crash suite: not keyed (a replay prints again), smoke test.
pub const RUNTIME: Runtime = Runtime {
    id: "stdout",
    serde_name: "stdout",
    keyed: false,
    replays_told_per_record: false,
    smoke: true,
    provide: || boxed(provide),
};

/// The output files of each isolation's runtime processes.
#[derive(Default)]
struct StdoutRuntime {
    dirs: Mutex<HashMap<String, PathBuf>>,
}

async fn provide() -> Result<StdoutRuntime, String> {
    Ok(StdoutRuntime::default())
}

impl StdoutRuntime {
    fn dir(&self, isolation: &str) -> Result<PathBuf, String> {
        let dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.get(isolation)
            .cloned()
            .ok_or_else(|| format!("no output directory for {isolation}"))
    }
}

/// The output files of a case: `runtime-<slot>.log`.
fn output_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("runtime-") && n.ends_with(".log"))
        })
        .collect();
    files.sort();
    Ok(files)
}

#[async_trait]
impl RuntimeDestination for StdoutRuntime {
    async fn info(&self) -> ServerInfo {
        ServerInfo {
            name: "process output".into(),
            version: "each runtime process's standard output, appended to a file across restarts"
                .into(),
        }
    }

    /// The stdout sink connects to nothing: the proxy stands in front of a closed port, unused.
    fn upstream(&self) -> Result<String, String> {
        Ok("tcp://127.0.0.1:9".into())
    }

    async fn sink_toml(&self, _isolation: &str, _via: SocketAddr) -> Result<String, String> {
        Ok("[sink]\nkind = \"stdout\"\n".into())
    }

    fn output_in(&self, isolation: &str, dir: &Path) {
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        dirs.insert(isolation.to_owned(), dir.to_owned());
    }

    async fn read(&self, isolation: &str, topic: &str) -> Result<Stored, String> {
        let mut rows = Vec::new();
        let mut cut = 0u64;
        for file in output_files(&self.dir(isolation)?)? {
            let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            for line in bytes.split(|b| *b == b'\n') {
                if !line.starts_with(b"{") {
                    continue;
                }
                match serde_json::from_slice::<Envelope>(line) {
                    Ok(envelope) => {
                        let row = row_from_envelope(&envelope)?;
                        if &*row.id.topic == topic {
                            rows.push(row);
                        }
                    }
                    Err(_) => cut += 1,
                }
            }
        }
        Ok(Stored {
            rows,
            physical: None,
            note: (cut > 0).then(|| format!("{cut} output lines cut short, not envelopes")),
        })
    }

    async fn stop(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
