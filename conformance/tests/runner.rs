//! The runner's lanes: targets run at once keep the suite's order in the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use pico_conformance::provider::ProviderKind;
use pico_conformance::report::TargetStatus;
use pico_conformance::runner::{RunOptions, Silent, run};
use pico_conformance::target::{Destination, Target};

/// Provisionings under way, and the most seen at once.
#[derive(Default)]
struct Lanes {
    now: AtomicUsize,
    peak: AtomicUsize,
}

/// A target whose provisioning waits `wait` and then fails, naming itself.
struct Unprovidable {
    name: &'static str,
    wait: Duration,
    lanes: Arc<Lanes>,
}

#[async_trait]
impl Target for Unprovidable {
    fn name(&self) -> &'static str {
        self.name
    }
    fn sink_crate(&self) -> &'static str {
        "pico-sink-none"
    }
    fn providers(&self) -> Vec<ProviderKind> {
        vec![ProviderKind::Native]
    }
    async fn provision(&self, _: ProviderKind) -> Result<Box<dyn Destination>, String> {
        let now = self.lanes.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.lanes.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(self.wait).await;
        self.lanes.now.fetch_sub(1, Ordering::SeqCst);
        Err(format!("{} is not here", self.name))
    }
}

fn targets(lanes: &Arc<Lanes>) -> Vec<Box<dyn Target>> {
    [("slow", 600), ("quick", 10), ("middle", 300), ("last", 10)]
        .into_iter()
        .map(|(name, ms)| {
            Box::new(Unprovidable {
                name,
                wait: Duration::from_millis(ms),
                lanes: lanes.clone(),
            }) as Box<dyn Target>
        })
        .collect()
}

/// The rows' order, and the most targets provisioned at once.
async fn lanes_run(jobs: usize) -> (Vec<String>, usize) {
    let opts = RunOptions {
        jobs,
        ..RunOptions::default()
    };
    let lanes = Arc::new(Lanes::default());
    let report = run(&targets(&lanes), &opts, &Silent).await;
    for row in &report.targets {
        assert!(
            matches!(&row.status, TargetStatus::NotVerifiedHere(r) if r.contains(&row.target)),
            "{:?}",
            row.status
        );
    }
    let names = report.targets.iter().map(|t| t.target.clone()).collect();
    (names, lanes.peak.load(Ordering::SeqCst))
}

#[tokio::test]
async fn two_lanes_run_targets_at_once_and_keep_their_order() {
    let (one_lane, one_peak) = lanes_run(1).await;
    let (two_lanes, two_peak) = lanes_run(2).await;
    println!("targets at once: {one_peak} with one lane, {two_peak} with two");
    assert_eq!(one_lane, ["slow", "quick", "middle", "last"]);
    assert_eq!(two_lanes, one_lane, "the report keeps the suite's order");
    assert_eq!(one_peak, 1, "one lane runs one target at a time");
    assert_eq!(two_peak, 2, "two lanes run two targets at once, never more");
}
