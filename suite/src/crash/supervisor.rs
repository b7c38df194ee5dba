//! [`Supervisor`]: keeps `pico-kafka` processes running as a process supervisor would —
//! restarting each one whenever it exits — and lets the crash suite kill them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

/// What happened to the processes.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct ProcessStats {
    /// Processes started (first starts and restarts).
    pub starts: u32,
    /// SIGKILLs sent by the suite.
    pub kills: u32,
    /// How processes ended, by exit code (`killed` for a signal, `abort` for SIGABRT).
    pub exits: BTreeMap<String, u32>,
}

#[derive(Default)]
struct Slot {
    pid: Option<u32>,
    /// Restart no earlier than this (a process kept down on purpose).
    hold_until: Option<std::time::Instant>,
}

/// A process that ended while the suite runs (not at [`Supervisor::stop`]): its successor
/// starts once `measured` is sent or dropped, or after [`MEASURE_WAIT`], so what the process
/// left can be measured while it is down.
pub struct Ended {
    /// The process slot.
    pub slot: usize,
    /// How it ended, as in [`ProcessStats::exits`].
    pub how: String,
    /// Sent when the measurement is done.
    pub measured: tokio::sync::oneshot::Sender<()>,
}

/// Where a supervisor reports the processes that ended.
pub type EndedTx = tokio::sync::mpsc::UnboundedSender<Ended>;

/// The longest a restart waits for the measurement of what its predecessor left.
pub const MEASURE_WAIT: Duration = Duration::from_secs(20);

struct Inner {
    slots: Vec<Mutex<Slot>>,
    ended: Option<EndedTx>,
    stats: Mutex<ProcessStats>,
    stopping: std::sync::atomic::AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A set of supervised runtime processes, each slot with its pipeline file.
pub struct Supervisor {
    inner: Arc<Inner>,
    loops: Vec<JoinHandle<()>>,
}

/// The `pico-kafka` binary: `PICO_KAFKA_BIN`, else beside this executable.
pub fn runtime_binary() -> Result<PathBuf, String> {
    runtime_binary_named("pico-kafka")
}

/// A runtime's binary (`pico-kafka`, `pico-iggy`): `PICO_KAFKA_BIN`, `PICO_IGGY_BIN`, …, else
/// beside this executable.
pub fn runtime_binary_named(name: &str) -> Result<PathBuf, String> {
    let var = format!("{}_BIN", name.to_ascii_uppercase().replace('-', "_"));
    if let Some(p) = std::env::var_os(&var) {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let beside = exe
        .parent()
        .map(|d| {
            // Test binaries live in deps/, the binaries one level up.
            if d.ends_with("deps") {
                d.join("..").join(name)
            } else {
                d.join(name)
            }
        })
        .ok_or("no directory for the runtime binary")?;
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!(
            "no {name} binary at {}: build it (cargo build -p {name} --features \
             postgres,clickhouse,s3,delta) or set {var}",
            beside.display()
        ))
    }
}

fn exit_word(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(9)) => "killed".into(),
        (None, Some(6)) => "abort".into(),
        (None, Some(s)) => format!("signal {s}"),
        (None, None) => "unknown".into(),
    }
}

impl Supervisor {
    /// Starts a process per pipeline file, slot by slot (`pipelines[slot]`), logs in `logs`;
    /// each process that ends before [`Supervisor::stop`] is reported to `ended`, if given,
    /// before its restart.
    pub fn start(bin: &Path, pipelines: &[PathBuf], logs: &Path, ended: Option<EndedTx>) -> Self {
        let inner = Arc::new(Inner {
            slots: pipelines
                .iter()
                .map(|_| Mutex::new(Slot::default()))
                .collect(),
            ended,
            stats: Mutex::new(ProcessStats::default()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        });
        let loops = pipelines
            .iter()
            .enumerate()
            .map(|(slot, pipeline)| {
                let inner = inner.clone();
                let bin = bin.to_owned();
                let pipeline = pipeline.clone();
                let log = logs.join(format!("runtime-{slot}.log"));
                tokio::spawn(async move { keep_running(inner, slot, bin, pipeline, log).await })
            })
            .collect();
        Self { inner, loops }
    }

    /// SIGKILLs the process in `slot` (the supervisor restarts it). Whether one was running.
    pub async fn kill(&self, slot: usize) -> bool {
        let pid = lock(&self.inner.slots[slot]).pid;
        let Some(pid) = pid else { return false };
        let sent = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .await
            .is_ok_and(|s| s.success());
        if sent {
            lock(&self.inner.stats).kills += 1;
        }
        sent
    }

    /// SIGKILLs the process in `slot` and keeps it down for `hold` before the restart.
    pub async fn kill_and_hold(&self, slot: usize, hold: Duration) -> bool {
        lock(&self.inner.slots[slot]).hold_until = Some(std::time::Instant::now() + hold);
        self.kill(slot).await
    }

    /// The counters so far.
    pub fn stats(&self) -> ProcessStats {
        lock(&self.inner.stats).clone()
    }

    /// Stops supervising: SIGTERM to every process (they drain and commit), SIGKILL after
    /// `grace`.
    pub async fn stop(self, grace: Duration) -> ProcessStats {
        self.inner
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for slot in &self.inner.slots {
            let pid = lock(slot).pid;
            if let Some(pid) = pid {
                let _ = Command::new("kill")
                    .args(["-TERM", &pid.to_string()])
                    .status()
                    .await;
            }
        }
        for l in self.loops {
            let abort = l.abort_handle();
            if tokio::time::timeout(grace, l).await.is_err() {
                abort.abort();
            }
        }
        lock(&self.inner.stats).clone()
    }
}

async fn keep_running(
    inner: Arc<Inner>,
    slot: usize,
    bin: PathBuf,
    pipeline: PathBuf,
    log: PathBuf,
) {
    use std::sync::atomic::Ordering;
    while !inner.stopping.load(Ordering::SeqCst) {
        let child = spawn(&bin, &pipeline, &log);
        let mut child: Child = match child {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(slot, error = %e, "cannot start the runtime");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        lock(&inner.slots[slot]).pid = child.id();
        lock(&inner.stats).starts += 1;
        let status = child.wait().await;
        lock(&inner.slots[slot]).pid = None;
        let word = status.map(exit_word).unwrap_or_else(|e| e.to_string());
        *lock(&inner.stats).exits.entry(word.clone()).or_default() += 1;
        if !inner.stopping.load(Ordering::SeqCst) {
            report_end(&inner, slot, word).await;
            // A supervisor's restart delay, or the hold the suite asked for.
            let hold = lock(&inner.slots[slot])
                .hold_until
                .take()
                .and_then(|t| t.checked_duration_since(std::time::Instant::now()));
            tokio::time::sleep(hold.unwrap_or(Duration::from_millis(200))).await;
        }
    }
}

/// Reports the end of `slot`'s process and waits (at most [`MEASURE_WAIT`]) for its
/// measurement.
async fn report_end(inner: &Inner, slot: usize, how: String) {
    let Some(tx) = &inner.ended else { return };
    let (measured, done) = tokio::sync::oneshot::channel();
    if tx
        .send(Ended {
            slot,
            how,
            measured,
        })
        .is_ok()
        && tokio::time::timeout(MEASURE_WAIT, done).await.is_err()
    {
        tracing::warn!(slot, "restarting before what the process left was measured");
    }
}

/// Starts `bin run <pipeline>`, its standard output and error appended to `log`, killed if
/// dropped.
pub(crate) fn spawn(bin: &Path, pipeline: &Path, log: &Path) -> Result<Child, String> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    Command::new(bin)
        .arg("run")
        .arg(pipeline)
        .env("RUST_LOG", "info,rdkafka=warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_process_that_ended_restarts_only_once_it_was_measured() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("ends");
        std::fs::write(&bin, "#!/bin/sh\nexit 2\n").unwrap();
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let supervisor = Supervisor::start(&bin, std::slice::from_ref(&bin), dir.path(), Some(tx));
        let end = rx.recv().await.unwrap();
        assert_eq!((end.slot, end.how.as_str()), (0, "exit 2"));
        // While the measurement goes on, the successor waits.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(supervisor.stats().starts, 1);
        end.measured.send(()).unwrap();
        let next = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(supervisor.stats().starts, 2);
        drop(next);
        let stats = supervisor.stop(Duration::from_secs(5)).await;
        assert!(
            stats.exits.get("exit 2").copied().unwrap_or(0) >= 2,
            "{stats:?}"
        );
    }
}
