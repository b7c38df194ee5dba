//! Whether a runtime is alive and whether it is ready, for a supervisor's or an orchestrator's
//! probes (`/health` and `/ready` beside `/metrics`, [`crate::settings::MetricsSettings`]).
//!
//! * **Live** while the consumer loop keeps turning (it polls the broker, hands batches on and
//!   ticks at least every linger), or while a requested drain runs: a loop that has not turned
//!   for `stalled_after_ms` is stuck, and a restart resumes from the committed offsets.
//! * **Ready** when the sink is open, the process holds at least one partition, no drain is
//!   under way, and neither the sink's calls nor the offset commits have kept failing for longer
//!   than `unready_after_ms`. A destination outage is ridden out (the process stays live and
//!   keeps its partitions) but shows here.
//!
//! Every answer names its reason; none carries an error's text (which could hold an address or a
//! user name), only the kind of failure and for how long it has lasted.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::lock;

/// A run of failures: since when, how many, and the kind of the last one.
#[derive(Debug, Clone, Copy)]
struct Failing {
    since: Instant,
    count: u64,
    kind: &'static str,
}

/// The state the probes read, moved by the consumer loop, the workers, the sink's calls and the
/// rebalance callbacks.
#[derive(Debug)]
pub struct Health {
    started: Instant,
    unready_after: Duration,
    stalled_after: Duration,
    sink_open: AtomicBool,
    draining: AtomicBool,
    assigned: AtomicI64,
    /// Milliseconds from `started` to the consumer loop's last turn.
    last_turn_ms: AtomicU64,
    sink: Mutex<Option<Failing>>,
    commits: Mutex<Option<Failing>>,
}

/// Seconds, for a reason's text.
fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

impl Health {
    /// Nothing open, nothing held, the loop turning as of now.
    pub fn new(unready_after: Duration, stalled_after: Duration) -> Self {
        Self {
            started: Instant::now(),
            unready_after,
            stalled_after,
            sink_open: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            assigned: AtomicI64::new(0),
            last_turn_ms: AtomicU64::new(0),
            sink: Mutex::new(None),
            commits: Mutex::new(None),
        }
    }

    /// The consumer loop turned.
    pub fn turned(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.last_turn_ms.store(ms, Ordering::Relaxed);
    }

    /// The sink was opened.
    pub fn opened(&self) {
        self.sink_open.store(true, Ordering::SeqCst);
    }

    /// A drain was requested.
    pub fn draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// `n` partitions assigned (positive) or revoked (negative).
    pub fn assigned(&self, n: i64) {
        self.assigned.fetch_add(n, Ordering::SeqCst);
    }

    /// A sink call succeeded (`None`) or failed with an error of `kind`.
    pub fn sink_answered(&self, failed: Option<&'static str>) {
        Self::record(&self.sink, failed);
    }

    /// An offset commit was acknowledged (`None`) or refused (`Some("refused")`).
    pub fn commit_answered(&self, failed: Option<&'static str>) {
        Self::record(&self.commits, failed);
    }

    fn record(run: &Mutex<Option<Failing>>, failed: Option<&'static str>) {
        let mut run = lock(run);
        match failed {
            None => *run = None,
            Some(kind) => {
                let f = run.get_or_insert(Failing {
                    since: Instant::now(),
                    count: 0,
                    kind,
                });
                f.count += 1;
                f.kind = kind;
            }
        }
    }

    /// `Ok(reason)` while live, else `Err(reason)`.
    pub fn live(&self, now: Instant) -> Result<String, String> {
        if self.draining.load(Ordering::SeqCst) {
            return Ok("live: draining".into());
        }
        let last = self.started + Duration::from_millis(self.last_turn_ms.load(Ordering::Relaxed));
        let idle = now.saturating_duration_since(last);
        if idle > self.stalled_after {
            return Err(format!(
                "not live: the consumer loop has not turned for {} (limit {})",
                secs(idle),
                secs(self.stalled_after)
            ));
        }
        Ok("live".into())
    }

    /// `Ok(reason)` while ready, else `Err(reason)`.
    pub fn ready(&self, now: Instant) -> Result<String, String> {
        if self.draining.load(Ordering::SeqCst) {
            return Err("not ready: draining (shutdown requested)".into());
        }
        if !self.sink_open.load(Ordering::SeqCst) {
            return Err("not ready: the sink is not open yet (its destination may be down)".into());
        }
        let failing = |what: &str, run: &Mutex<Option<Failing>>| match *lock(run) {
            Some(f) if now.saturating_duration_since(f.since) > self.unready_after => Err(format!(
                "not ready: {what} for {} ({} failed, the last {}; limit {})",
                secs(now.saturating_duration_since(f.since)),
                f.count,
                f.kind,
                secs(self.unready_after)
            )),
            _ => Ok(()),
        };
        failing("the sink's calls have been failing", &self.sink)?;
        failing("offset commits have been refused", &self.commits)?;
        let held = self.assigned.load(Ordering::SeqCst);
        if held <= 0 {
            return Err(
                "not ready: holding no partition (joining the group, or more members than \
                 partitions)"
                    .into(),
            );
        }
        Ok(format!("ready: holding {held} partition(s)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_an_open_sink_a_partition_and_no_lasting_failure() {
        let h = Health::new(Duration::from_secs(10), Duration::from_secs(60));
        let now = Instant::now();
        assert!(h.ready(now).is_err_and(|r| r.contains("not open")));
        h.opened();
        assert!(h.ready(now).is_err_and(|r| r.contains("no partition")));
        h.assigned(3);
        assert_eq!(h.ready(now), Ok("ready: holding 3 partition(s)".into()));

        h.sink_answered(Some("retryable"));
        h.sink_answered(Some("throttled"));
        assert!(h.ready(now).is_ok(), "a failure shorter than the limit");
        let later = now + Duration::from_secs(11);
        let why = h.ready(later).unwrap_err();
        assert!(
            why.contains("sink's calls have been failing")
                && why.contains("2 failed, the last throttled"),
            "{why}"
        );
        h.sink_answered(None);
        assert!(h.ready(later).is_ok(), "a success ends the run of failures");

        h.commit_answered(Some("refused"));
        assert!(
            h.ready(later + Duration::from_secs(11))
                .is_err_and(|r| r.contains("commits"))
        );
        h.commit_answered(None);
        h.assigned(-3);
        assert!(h.ready(later).is_err_and(|r| r.contains("no partition")));
        h.assigned(1);
        h.draining();
        assert!(h.ready(later).is_err_and(|r| r.contains("draining")));
    }

    #[test]
    fn live_while_the_loop_turns_or_drains() {
        let h = Health::new(Duration::from_secs(10), Duration::from_secs(60));
        h.turned();
        let now = Instant::now();
        assert!(h.live(now).is_ok());
        let stuck = now + Duration::from_secs(61);
        assert!(h.live(stuck).is_err_and(|r| r.contains("has not turned")));
        h.draining();
        assert!(h.live(stuck).is_ok());
    }
}
