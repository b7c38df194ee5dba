//! stdout against a captured writer: the writer is the destination, and faults are injected in
//! it (a write that lands but reports failure is a lost acknowledgement).

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use pico_sink::identity::Scope;
use pico_sink::kit::Envelope;
use pico_sink_stdout::StdoutSink;

use pico_conformance::fault::{FaultMode, FaultState};
use pico_conformance::horizon::{Horizon, Upkeep};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::{Destination, Readback, ServerInfo, SinkUnderTest, Target};

use crate::destinations::read::row_from_envelope;

/// The stdout sink, printing into a captured writer.
pub struct StdoutTarget;

#[async_trait]
impl Target for StdoutTarget {
    fn name(&self) -> &'static str {
        "stdout"
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-stdout"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Embedded]
    }
    async fn provision(&self, _: ProviderKind) -> Result<Box<dyn Destination>, String> {
        Ok(Box::new(Terminal::default()))
    }
}

type Outputs = Arc<Mutex<HashMap<String, Vec<u8>>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Default)]
struct Terminal {
    outputs: Outputs,
}

/// Faults of a captured writer: a refused write fails before anything lands; a lost
/// acknowledgement lets the write land and fails the flush that follows.
struct CapturedWriter {
    isolation: String,
    outputs: Outputs,
    faults: Arc<FaultState>,
    /// The last write landed but its acknowledgement is to be lost (at the flush).
    armed: AtomicBool,
}

impl Write for CapturedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.faults.take_request_cut() {
            return Err(io::Error::other("write cut"));
        }
        let lose_ack = match self.faults.mode() {
            FaultMode::Refuse => {
                self.faults.count(|s| s.refused += 1);
                return Err(io::Error::other("output device unavailable"));
            }
            FaultMode::Flaky(flaky) if flaky.cut_request() => {
                self.faults.count(|s| s.requests_cut += 1);
                return Err(io::Error::other("write cut"));
            }
            FaultMode::Flaky(flaky) => flaky.cut_answer(),
            FaultMode::LoseNextAck { .. } => self
                .faults
                .with_mode(|m| std::mem::replace(m, FaultMode::Pass) != FaultMode::Pass),
            FaultMode::Latency { millis } => {
                std::thread::sleep(std::time::Duration::from_millis(millis));
                false
            }
            _ => false,
        };
        if lose_ack {
            self.armed.store(true, Ordering::SeqCst);
        }
        self.faults.count(|s| s.requests_sent += 1);
        lock(&self.outputs)
            .entry(self.isolation.clone())
            .or_default()
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.faults.count(|s| s.acks_lost += 1);
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "written, but the acknowledgement was lost",
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl Destination for Terminal {
    fn server(&self) -> ServerInfo {
        ServerInfo {
            name: "captured writer".into(),
            version: "in-process io::Write".into(),
        }
    }

    async fn sink(&self, isolation: &str) -> Result<SinkUnderTest, String> {
        let faults = Arc::new(FaultState::default());
        let writer = CapturedWriter {
            isolation: isolation.to_owned(),
            outputs: self.outputs.clone(),
            faults: faults.clone(),
            armed: AtomicBool::new(false),
        };
        Ok(SinkUnderTest {
            sink: Arc::new(StdoutSink::to_writer(writer, Scope::default())),
            faults: Some(faults),
        })
    }

    /// A stream of lines keeps no record of what it printed: nothing to pass.
    async fn pass_horizon(&self, _isolation: &str) -> Result<Upkeep, String> {
        Ok(Upkeep::of(Horizon::NoDedupe))
    }

    async fn read_back(&self, isolation: &str) -> Result<Readback, String> {
        let outputs = lock(&self.outputs);
        let text = outputs
            .get(isolation)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let text = std::str::from_utf8(text).map_err(|e| format!("output is not UTF-8: {e}"))?;
        let rows = text
            .lines()
            .map(|line| {
                serde_json::from_str::<Envelope>(line)
                    .map_err(|e| format!("line is not an envelope: {e}"))
                    .and_then(|env| row_from_envelope(&env))
            })
            .collect::<Result<_, _>>()?;
        Ok(Readback::of_rows(rows))
    }

    async fn shutdown(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
