//! A producer's pace: the stream's record indices handed out in chunks no sooner than the
//! case's rate allows and, in the kill case, no further than the kills let them ([`Supply`]),
//! in shares sized to the effective kills still needed.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::crash::Size;

/// A producer's pace: the stream's record indices in chunks of a tenth of a second's worth,
/// each chunk handed out no sooner than `size.rate` allows and, when gated, not beyond what its
/// [`Supply`] released.
pub struct Pace {
    size: Size,
    /// When the current stretch at the rate began, and the records handed out before it.
    stretch: (Instant, u64),
    sent: u64,
    /// How many records may be handed out in all, while the [`Supply`] lives.
    gate: Option<watch::Receiver<u64>>,
    /// Milliseconds spent waiting on the gate, shared with the [`Supply`].
    held: Arc<AtomicU64>,
}

/// Releases a gated [`Pace`]'s records a share at a time: the kill case's producer keeps pace
/// with its kills, so records still arrive when a slow kill (a loaded machine) wants new ones
/// instead of the producer having finished before the kills did. Each share is sized to the
/// effective kills still needed, planning for every second kill to miss, so kills that were
/// not effective (a loaded machine) never use up the records the remaining ones need.
/// Dropping it releases the rest.
pub struct Supply {
    released: watch::Sender<u64>,
    records: u64,
    held: Arc<AtomicU64>,
}

impl Pace {
    /// From now, at `size.rate`.
    pub fn new(size: Size) -> Self {
        Self {
            size,
            stretch: (Instant::now(), 0),
            sent: 0,
            gate: None,
            held: Arc::default(),
        }
    }

    /// From now, at `size.rate`, handing out nothing until `supply` releases its first share.
    pub(crate) fn gated(size: Size) -> (Self, Supply) {
        let (released, gate) = watch::channel(0);
        let held = Arc::new(AtomicU64::new(0));
        let pace = Self {
            gate: Some(gate),
            held: held.clone(),
            ..Self::new(size)
        };
        let supply = Supply {
            released,
            records: size.records,
            held,
        };
        (pace, supply)
    }

    /// The next chunk, once the rate and the gate allow it; `None` once every record was handed
    /// out.
    pub(crate) async fn next(&mut self) -> Option<Range<u64>> {
        if self.sent >= self.size.records {
            return None;
        }
        let allowed = self.allowed().await;
        let (since, base) = self.stretch;
        let due = Duration::from_secs_f64((self.sent - base) as f64 / self.size.rate.max(1) as f64);
        if let Some(wait) = due.checked_sub(since.elapsed()) {
            tokio::time::sleep(wait).await;
        }
        let end = (self.sent + (self.size.rate / 10).max(1))
            .min(self.size.records)
            .min(allowed);
        let chunk = self.sent..end;
        self.sent = end;
        Some(chunk)
    }

    /// How many records may be handed out in all, once it is more than were: the whole stream
    /// when ungated or once the [`Supply`] is gone. After a wait the rate starts a new stretch,
    /// so the records held back do not all go at once.
    async fn allowed(&mut self) -> u64 {
        let waiting = Instant::now();
        let mut waited = false;
        while let Some(gate) = &mut self.gate {
            let released = *gate.borrow_and_update();
            if released > self.sent {
                break;
            }
            waited = true;
            if gate.changed().await.is_err() {
                self.gate = None;
            }
        }
        if waited {
            let millis = u64::try_from(waiting.elapsed().as_millis()).unwrap_or(u64::MAX);
            self.held.fetch_add(millis, Ordering::Relaxed);
            self.stretch = (Instant::now(), self.sent);
        }
        match &self.gate {
            Some(gate) => (*gate.borrow()).min(self.size.records),
            None => self.size.records,
        }
    }
}

impl Supply {
    /// Releases one more share for a kill when `needed` effective kills (this one included)
    /// are still to come: the records not yet released divided by twice `needed`, so half of
    /// them stays back for kills that turn out not to be effective; at least one record while
    /// any is left.
    pub(crate) fn release_share(&self, needed: u32) {
        let records = self.records;
        self.released.send_modify(|released| {
            let left = records - *released;
            let share = (left / (2 * u64::from(needed.max(1)))).max(1).min(left);
            *released += share;
        });
    }

    /// Records not released yet.
    #[cfg(test)]
    fn unreleased(&self) -> u64 {
        self.records - *self.released.borrow()
    }

    /// Releases every record.
    pub(crate) fn release_all(&self) {
        self.released.send_replace(self.records);
    }

    /// Seconds the producer has waited for a share so far.
    pub(crate) fn held_secs(&self) -> f64 {
        self.held.load(Ordering::Relaxed) as f64 / 1_000.0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn size(records: u64, rate: u64) -> Size {
        Size {
            records,
            kills: 0,
            outage_secs: 0,
            rate,
        }
    }

    #[tokio::test]
    async fn the_pace_hands_out_every_record_once_no_sooner_than_the_rate() {
        let started = Instant::now();
        let mut pace = Pace::new(size(25, 100));
        let mut chunks = Vec::new();
        while let Some(chunk) = pace.next().await {
            chunks.push(chunk);
        }
        assert_eq!(chunks, vec![0..10, 10..20, 20..25]);
        // 20 records sent before the last chunk: not before 0.2 s at 100 a second.
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn a_gated_pace_hands_out_no_record_its_supply_did_not_release() {
        let (mut pace, supply) = Pace::gated(size(40, 1_000));
        let producer = tokio::spawn(async move {
            let mut chunks = Vec::new();
            while let Some(chunk) = pace.next().await {
                chunks.push(chunk);
            }
            chunks
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!producer.is_finished(), "nothing released yet");
        // Two kills needed of 40 records: a quarter, then half of the 30 left.
        supply.release_share(2);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!producer.is_finished(), "one share released");
        supply.release_share(1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!producer.is_finished(), "15 records kept back");
        assert_eq!(supply.unreleased(), 15);
        supply.release_all();
        let chunks = producer.await.unwrap();
        // Chunks of 100 (a tenth of a second at 1 000 a second) cut at each share's end.
        assert_eq!(chunks, vec![0..10, 10..25, 25..40]);
        assert!(supply.held_secs() >= 0.5, "held {} s", supply.held_secs());
        // Two shares released at once go out together.
        let (mut pace, supply) = Pace::gated(size(40, 1_000));
        supply.release_share(2);
        supply.release_share(1);
        assert_eq!(pace.next().await, Some(0..25));
    }

    #[test]
    fn kills_that_were_not_effective_never_use_up_the_records() {
        // 50 effective kills needed of 20 000 records (the full size), and every second kill
        // not effective: each kill still releases a share of at least a hundred records. (The
        // equal shares of before ran out after 50 kills, 25 of them effective here.)
        let (_pace, supply) = Pace::gated(size(20_000, 1_000));
        let (mut effective, mut kills) = (0, 0);
        while effective < 50 {
            let before = supply.unreleased();
            supply.release_share(50 - effective);
            let share = before - supply.unreleased();
            assert!(
                share >= 100,
                "kill {kills} ({effective} effective) released {share} records"
            );
            kills += 1;
            effective += kills % 2;
        }
        assert_eq!(kills, 99);
        assert!(supply.unreleased() > 0, "records are kept back to the end");
    }

    #[tokio::test]
    async fn a_gated_pace_runs_free_once_its_supply_is_gone() {
        let (mut pace, supply) = Pace::gated(size(30, 1_000));
        supply.release_share(2);
        assert_eq!(pace.next().await, Some(0..7));
        drop(supply);
        assert_eq!(pace.next().await, Some(7..30));
        assert_eq!(pace.next().await, None);
    }

    #[tokio::test]
    async fn releasing_every_record_opens_the_gate_whole() {
        let (mut pace, supply) = Pace::gated(size(30, 1_000));
        supply.release_all();
        assert_eq!(pace.next().await, Some(0..30));
    }
}
