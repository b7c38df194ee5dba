//! The kill case's kills, timed by progress: each lands while the runtime holds a batch the
//! sink wrote and the group has not committed, and each is checked afterwards against what the
//! destination holds and what the group committed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::scraped::Scraper;
use super::source::Supply;
use super::supervisor::Supervisor;
use super::{Case, Place, Size, held_partitions, partition_ends};

/// How long a kill waits for the restarted process to write before it takes the group for
/// stalled: it kills then, and keeps the process down past the session timeout, so the dead
/// member leaves the group before its successor joins (tansu 0.6.0 otherwise may leave
/// partitions with nobody; see the drain's stall restarts).
const WRITE_WAIT: Duration = Duration::from_secs(20);
/// Stalled waits after which the kills stop.
const MAX_STALLS: u32 = 3;
/// The killed process stays down this long, so what it left is measured before its successor
/// writes (the successor waits out the dead member's session anyway).
const MEASURE_HOLD: Duration = Duration::from_secs(2);
/// Seconds a kill takes, about: the successor joins once the dead member's session expired
/// (about 5 s), then the group commits past what the kill left in flight (about 4 s, measured
/// in a reduced http-honouring run: 53.7 s of commit waits over 13 kills).
const SECONDS_PER_KILL: u64 = 9;
/// How long a kill waits, before it waits for new batches, for the group to commit past
/// what the previous kill left in flight: a kill before that would find the same records in
/// flight again, and the case's duplicate bound would count them twice.
pub(crate) const COMMIT_WAIT: Duration = Duration::from_secs(10);
/// Pause between two reads of the group's committed offsets while a kill waits for them.
const COMMIT_POLL: Duration = Duration::from_millis(250);
/// How long a kill waits for the process it will end to start and be scraped: the successor
/// of a stalled kill starts after the session timeout and the measurement of what its
/// predecessor left ([`super::supervisor::MEASURE_WAIT`] at most).
const LIFE_PATIENCE: Duration = Duration::from_secs(45);

/// What the kills did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KillTally {
    /// SIGKILLs sent.
    pub kills: u32,
    /// Kills after which the destination held records beyond the committed offset of a
    /// partition the killed process owned.
    pub effective: u32,
    /// Effective kills the case needs.
    pub required: u32,
    /// The first kills, per owned partition: `p<partition> held <end> committed <offset>`, the
    /// end being the destination's highest offset + 1.
    pub first: Vec<String>,
    /// Kills sent because no batch was written for a while (the process then kept down past
    /// the session timeout).
    #[serde(default)]
    pub stalled: u32,
    /// Why the kills stopped early, if they did.
    pub stopped: Option<String>,
    /// Kills sent before the group committed past what the previous kill left in flight
    /// (after waiting 10 s for it): their records in flight may overlap the previous kill's.
    #[serde(default)]
    pub overlapping: u32,
    /// Seconds the kills waited, in all, for the group to commit past the previous kill.
    #[serde(default)]
    pub commit_wait_secs: f64,
    /// Seconds the producer waited, in all, for a kill to release the next share of the
    /// records (the producer keeps pace with the kills, one share per kill); `None` in runs
    /// from before it did.
    #[serde(default)]
    pub producer_held_secs: Option<f64>,
    /// Kills sent although Prometheus had not seen the life they ended (after waiting
    /// 45 s for it): that life's counters are missing from the metrics check.
    #[serde(default)]
    pub unscraped: u32,
    /// Whether each share of the records was sized to the effective kills still needed (half
    /// of what was left kept back for kills that miss); `false` in runs from before, whose
    /// shares were equal, one per required kill.
    #[serde(default)]
    pub shares_to_need: bool,
}

impl KillTally {
    /// The report's note.
    pub fn note(&self) -> String {
        let mut note = format!(
            "{} of {} kills effective (destination ahead of the committed offset of a partition \
             the killed process owned; {} required)",
            self.effective, self.kills, self.required
        );
        if !self.first.is_empty() {
            note.push_str(&format!("; first: {}", self.first.join(" / ")));
        }
        if self.stalled > 0 {
            note.push_str(&format!(
                "; {} of them after {} s without a write, held down past the session timeout",
                self.stalled,
                WRITE_WAIT.as_secs()
            ));
        }
        note.push_str(&format!(
            "; each kill waited for the group to commit past the previous one's records in \
             flight ({:.1} s in all)",
            self.commit_wait_secs
        ));
        if self.overlapping > 0 {
            note.push_str(&format!(
                ", {} of them in vain for {} s (their records in flight may overlap)",
                self.overlapping,
                COMMIT_WAIT.as_secs()
            ));
        }
        if let Some(held) = self.producer_held_secs {
            note.push_str(&format!(
                "; the producer waited {held:.1} s in all for the kills to release the next \
                 share of the records"
            ));
        }
        if self.unscraped > 0 {
            note.push_str(&format!(
                "; {} of them ended a process life Prometheus had not seen within {} s",
                self.unscraped,
                LIFE_PATIENCE.as_secs()
            ));
        }
        if let Some(why) = &self.stopped {
            note.push_str(&format!("; stopped: {why}"));
        }
        note
    }
}

/// Where the kills look.
pub(crate) struct KillWatch<'a> {
    /// The case's topic, group and destination.
    pub place: &'a Place<'a>,
    /// The runtime's logs (which partitions it holds).
    pub dir: &'a Path,
    /// The file the runtime appends each written batch to ([chaos] written_file).
    pub written: &'a Path,
    /// Whether the producer has finished: from then on no new records come, and the
    /// redelivery of a batch the last kill left uncommitted is what a kill waits for.
    pub produced: &'a (dyn Fn() -> bool + Sync),
    /// The producer's records, released one share per kill: a kill slower than the paced
    /// producer (a loaded machine) still finds new records to wait for.
    pub supply: &'a Supply,
    /// The case's Prometheus, if it started, and the runtime's metric prefix: a kill waits
    /// until the life it ends was scraped.
    pub scraper: Option<(&'a Scraper, &'a str)>,
    /// When the case started (the span of the scrapes to look through).
    pub started: Instant,
}

/// The producer's size for a case: the kill case produces slowly enough that records keep
/// arriving while its kills go on.
pub(crate) fn paced(size: Size, case: Case) -> Size {
    if case != Case::Kill {
        return size;
    }
    let seconds = u64::from(size.kills.max(1)) * SECONDS_PER_KILL;
    Size {
        rate: (size.records / seconds).clamp(10, size.rate),
        ..size
    }
}

/// Kills process 0, until `required` kills were effective or twice as many were sent: each kill
/// first waits for the group to commit past what the previous kill left in flight (so no record
/// is in flight at two kills), then releases the producer's next share and waits for one to
/// three batches of new records (above every offset written before; once production is over,
/// any batch), and lands while the last is held uncommitted. Every record is released when it
/// returns.
pub(crate) async fn kill_on_progress(
    watch: &KillWatch<'_>,
    supervisor: &Supervisor,
    required: u32,
) -> KillTally {
    let mut tally = KillTally {
        required,
        ..KillTally::default()
    };
    // The highest offset of each partition any process wrote: a kill waits for a write above
    // it, new data rather than the redelivery of the batch the last kill left uncommitted.
    let mut highest: BTreeMap<u32, u64> = BTreeMap::new();
    let mut read = 0;
    // Per partition, the end the destination held at the previous kill where it was ahead of
    // the committed offset: the next kill waits for the group to commit up to it.
    let mut left: BTreeMap<u32, u64> = BTreeMap::new();
    // Processes started when the previous kill was sent.
    let mut previous = 0;
    while tally.effective < required && tally.kills < required.saturating_mul(2) {
        // First the group commits past what the previous kill left in flight (the successor's
        // replay), so no record is in flight at two kills; what was written meanwhile is not
        // new data for this kill.
        let committing = Instant::now();
        if !committed_up_to(watch.place, &left).await {
            tally.overlapping += 1;
        }
        tally.commit_wait_secs += committing.elapsed().as_secs_f64();
        // The life this kill ends was seen by a scrape, however short it is (a successor that
        // writes its first batch within a second would otherwise end unseen on a loaded
        // machine, and the metrics check would miss a life).
        if !life_scraped(watch, supervisor, previous).await {
            tally.unscraped += 1;
        }
        read = note_new_batches(watch, &mut highest, read, &mut 0);
        // Then one to three new batches before the kill, from the share of records released
        // now (sized to the effective kills still needed): the earlier ones commit meanwhile,
        // so the committed offsets move between kills, and the last is held uncommitted.
        watch
            .supply
            .release_share(required.saturating_sub(tally.effective));
        let wanted = fastrand::u32(1..=3);
        let mut seen = 0;
        let mut stalled = false;
        let waiting = Instant::now();
        loop {
            read = note_new_batches(watch, &mut highest, read, &mut seen);
            if seen >= wanted {
                break;
            }
            if waiting.elapsed() > WRITE_WAIT {
                stalled = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if stalled {
            if tally.stalled >= MAX_STALLS {
                tally.stopped = Some(format!(
                    "{MAX_STALLS} times no batch written within {} s",
                    WRITE_WAIT.as_secs()
                ));
                watch.supply.release_all();
                return tally;
            }
            tally.stalled += 1;
        }
        let owned = held_partitions(watch.dir, 1).remove(0);
        let hold = if stalled {
            Case::Kill.session() + Duration::from_secs(2)
        } else {
            MEASURE_HOLD
        };
        let starts = supervisor.stats().starts;
        if !supervisor.kill_and_hold(0, hold).await {
            continue;
        }
        previous = starts;
        tally.kills += 1;
        let ahead = ahead_of_commit(watch, &owned).await;
        // Measured while the killed process was down (its successor not yet started): nothing
        // else wrote meanwhile. A clock would not do: reading a large destination back takes
        // longer than the hold, and the successor waits for the case's own measurement anyway.
        let in_time = supervisor.stats().starts == starts;
        match ahead {
            Ok(marks) => {
                left = marks
                    .iter()
                    .filter(|(_, end, committed)| end > committed)
                    .map(|(p, end, _)| (*p, *end))
                    .collect();
                if in_time && marks.iter().any(|(_, end, committed)| end > committed) {
                    tally.effective += 1;
                }
                if tally.first.len() < 3 {
                    let parts: Vec<String> = marks
                        .iter()
                        .map(|(p, end, committed)| format!("p{p} held {end} committed {committed}"))
                        .collect();
                    tally.first.push(parts.join(", "));
                }
            }
            Err(e) => tracing::warn!(error = %e, "measuring a kill"),
        }
    }
    watch.supply.release_all();
    tally
}

/// Waits (at most [`LIFE_PATIENCE`]) until a process started after the previous kill (when
/// `previous` had started) and Prometheus saw every life started so far; whether it did (so
/// without a Prometheus).
async fn life_scraped(watch: &KillWatch<'_>, supervisor: &Supervisor, previous: u32) -> bool {
    let Some((scraper, prefix)) = watch.scraper else {
        return true;
    };
    let waiting = Instant::now();
    let starts = loop {
        let starts = supervisor.stats().starts;
        if starts > previous {
            break starts;
        }
        if waiting.elapsed() > LIFE_PATIENCE {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let span = watch.started.elapsed() + Duration::from_secs(30);
    let patience = LIFE_PATIENCE.saturating_sub(waiting.elapsed());
    scraper.wait_for_lives(prefix, starts, span, patience).await
}

/// Reads the batches written since the first `read`, raising `highest` and counting in `seen`
/// those above every offset of their partition written before (once production is over, every
/// batch: the redelivery is what a kill then waits for); the number of batches read.
fn note_new_batches(
    watch: &KillWatch<'_>,
    highest: &mut BTreeMap<u32, u64>,
    read: usize,
    seen: &mut u32,
) -> usize {
    let batches = written_batches(watch.written);
    let redeliveries_count = (watch.produced)();
    for (p, last) in batches.iter().skip(read) {
        if highest.get(p).is_none_or(|h| last > h) {
            highest.insert(*p, *last);
            *seen += 1;
        } else if redeliveries_count {
            *seen += 1;
        }
    }
    batches.len()
}

/// Waits up to [`COMMIT_WAIT`] for the group's committed offset of each partition in `ends` to
/// reach its end there; whether it did.
async fn committed_up_to(place: &Place<'_>, ends: &BTreeMap<u32, u64>) -> bool {
    if ends.is_empty() {
        return true;
    }
    let waiting = Instant::now();
    loop {
        match place.committed().await {
            Ok(commits) if reached(&commits, ends) => return true,
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "reading the committed offsets before a kill"),
        }
        if waiting.elapsed() > COMMIT_WAIT {
            return false;
        }
        tokio::time::sleep(COMMIT_POLL).await;
    }
}

/// Whether every partition in `ends` has a committed offset at or past its end there.
fn reached(commits: &BTreeMap<u32, u64>, ends: &BTreeMap<u32, u64>) -> bool {
    ends.iter()
        .all(|(p, end)| commits.get(p).is_some_and(|c| c >= end))
}

/// Per partition the killed process owned: the number of offsets the destination holds from 0
/// (its highest offset + 1, 0 if none) and the group's committed offset. The kill was effective
/// where the first is above the second.
async fn ahead_of_commit(
    watch: &KillWatch<'_>,
    owned: &std::collections::BTreeSet<i32>,
) -> Result<Vec<(u32, u64, u64)>, String> {
    let held = watch.place.held().await?;
    let commits = watch.place.committed().await?;
    let ends = partition_ends(held.rows.iter().map(|r| (r.partition, r.offset)));
    Ok(owned
        .iter()
        .map(|p| {
            let p = *p as u32;
            let end = ends.get(&p).copied().unwrap_or(0);
            (p, end, commits.get(&p).copied().unwrap_or(0))
        })
        .collect())
}

/// The batches in `file` (one id `topic:partition:first..=last` per line, as the runtime
/// appends them), as (partition, last offset); none while it does not exist.
fn written_batches(file: &Path) -> Vec<(u32, u64)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(batch_end)
        .collect()
}

/// (partition, last offset) of a batch id `topic:partition:first..=last`.
fn batch_end(id: &str) -> Option<(u32, u64)> {
    let mut parts = id.rsplitn(3, ':');
    let range = parts.next()?;
    let partition = parts.next()?.parse().ok()?;
    let last = range.split_once("..=")?.1.parse().ok()?;
    Some((partition, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kill_case_produces_while_its_kills_go_on() {
        let full = paced(Size::FULL, Case::Kill);
        let seconds = full.records / full.rate;
        assert!(
            seconds >= u64::from(Size::FULL.kills) * SECONDS_PER_KILL,
            "{seconds} s of production"
        );
        assert_eq!(paced(Size::FULL, Case::Group), Size::FULL);
    }

    #[test]
    fn batch_ids_read_back_from_the_written_file() {
        assert_eq!(batch_end("crash-s3-kill-1f:3:200..=399"), Some((3, 399)));
        assert_eq!(batch_end("a:b:c:0:5..=5"), Some((0, 5)));
        assert_eq!(batch_end("garbage"), None);
    }

    #[test]
    fn a_kill_waits_until_every_partition_committed_past_the_previous_kill() {
        let ends = BTreeMap::from([(0, 40), (2, 7)]);
        assert!(reached(&BTreeMap::from([(0, 40), (1, 0), (2, 9)]), &ends));
        // p0 one short; p2 never committed.
        assert!(!reached(&BTreeMap::from([(0, 39), (2, 9)]), &ends));
        assert!(!reached(&BTreeMap::from([(0, 40)]), &ends));
        assert!(reached(&BTreeMap::new(), &BTreeMap::new()));
    }
}
