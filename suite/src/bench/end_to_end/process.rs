//! One `pico-kafka` process moving a topic into a destination: from its spawn until the group
//! committed every offset, then a SIGTERM (it drains and exits 0). Its progress is read from
//! the group's committed offsets, its memory from `/proc/<pid>/status`, the moment the group
//! formed from its log (the first partition assigned).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use tokio::process::{Child, Command};

use super::topic::{Moved, Topic, steady};
use crate::crash::supervisor::spawn;

/// How often the group's progress and the process's memory are sampled.
const SAMPLE: Duration = Duration::from_millis(100);
/// A run whose committed offsets do not move for this long has stalled.
const STALL: Duration = Duration::from_secs(120);

/// What one run of the runtime measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct RuntimeRun {
    /// How it moved the topic (steady state: from the first partition assigned to the last
    /// offset committed).
    pub moved: Moved,
    /// The process's peak resident set (`VmHWM`), bytes.
    pub peak_rss: u64,
}

/// The group's committed offsets, read through one client for the whole run.
struct Committed {
    consumer: Arc<BaseConsumer>,
    topic: Topic,
}

impl Committed {
    fn new(brokers: &str, group: &str, topic: &Topic) -> Result<Self, String> {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            consumer: Arc::new(consumer),
            topic: topic.clone(),
        })
    }

    /// Records committed over every partition (a partition without a commit counts 0).
    async fn total(&self) -> Result<u64, String> {
        let (consumer, topic) = (self.consumer.clone(), self.topic.clone());
        tokio::task::spawn_blocking(move || {
            let mut tpl = TopicPartitionList::new();
            for p in 0..topic.partitions {
                tpl.add_partition(&topic.name, p as i32);
            }
            let committed = consumer
                .committed_offsets(tpl, Duration::from_secs(5))
                .map_err(|e| e.to_string())?;
            Ok(committed
                .elements()
                .iter()
                .map(|e| match e.offset() {
                    Offset::Offset(o) => o.max(0) as u64,
                    _ => 0,
                })
                .sum())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// The peak resident set of process `pid` so far, bytes (0 when it cannot be read).
fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// The last lines of the log at `path`, for an error.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Runs `bin` on the pipeline file `pipeline` (group `group`, reading `topic` from the start)
/// until the group committed every record of `topic`, then stops it with SIGTERM; it must
/// exit 0 (drained). Its output goes to `log`.
pub(super) async fn run_runtime(
    bin: &Path,
    pipeline: &Path,
    log: &Path,
    brokers: &str,
    group: &str,
    topic: &Topic,
) -> Result<RuntimeRun, String> {
    let committed = Committed::new(brokers, group, topic)?;
    let (started, spawned) = (Instant::now(), SystemTime::now());
    let mut child = spawn(bin, pipeline, log)?;
    let pid = child.id().ok_or("the runtime exited at once")?;
    let n = topic.records();
    let mut peak = 0;
    let (mut last_total, mut last_move) = (0u64, Instant::now());
    let end = loop {
        tokio::time::sleep(SAMPLE).await;
        peak = peak.max(peak_rss(pid));
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!(
                "the runtime ended ({status}) before committing every record; its log:\n{}",
                tail(log)
            ));
        }
        let total = committed.total().await?;
        let now = Instant::now();
        if total >= n {
            break now;
        }
        if total != last_total {
            (last_total, last_move) = (total, now);
        } else if last_move.elapsed() > STALL {
            return Err(format!(
                "the runtime committed {total} of {n} records and nothing more for {STALL:?}; \
                 its log:\n{}",
                tail(log)
            ));
        }
    };
    stop(&mut child, pid, log).await?;
    let formed = group_formed(log, spawned)?;
    let moved = Moved {
        total: end - started,
        steady_per_s: steady(n, end.saturating_duration_since(started + formed)),
    };
    Ok(RuntimeRun {
        moved,
        peak_rss: peak,
    })
}

/// How long after `spawned` the runtime logged its first partition assigned (the group had
/// formed), from the timestamp of that line in its `log`.
fn group_formed(log: &Path, spawned: SystemTime) -> Result<Duration, String> {
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let line = text
        .lines()
        .find(|l| l.contains("partition assigned"))
        .ok_or_else(|| {
            format!(
                "the runtime's log has no partition assigned:\n{}",
                tail(log)
            )
        })?;
    let stamp = line.split_whitespace().next().unwrap_or_default();
    let at = time::OffsetDateTime::parse(stamp, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("the runtime's log line {line:?} starts with no time: {e}"))?;
    Ok(SystemTime::from(at)
        .duration_since(spawned)
        .unwrap_or_default())
}

/// SIGTERM, then the exit: it must drain and exit 0 within a minute.
async fn stop(child: &mut Child, pid: u32, log: &Path) -> Result<(), String> {
    let sent = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .map_err(|e| e.to_string())?;
    if !sent.success() {
        return Err(format!("kill -TERM {pid} failed"));
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .map_err(|_| {
            format!(
                "the runtime did not drain within a minute; its log:\n{}",
                tail(log)
            )
        })?
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!(
            "the runtime ended with {status} after the SIGTERM, not drained; its log:\n{}",
            tail(log)
        ));
    }
    Ok(())
}
