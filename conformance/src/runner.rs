//! Runs scenarios against destinations and assembles a [`Report`].
//!
//! [`run_destination`] is the entry point for a sink of your own: give it a
//! [`Destination`] and it runs every scenario and returns the table row, judged against the
//! sink's own claims, with the zero-tolerance loss counter. [`assert_conformant`] turns a row
//! into a test assertion. [`run`] adds provisioning for suites of many [`Target`]s.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use futures_util::stream::{self, StreamExt};

use pico_sink::Scenario;
use pico_sink::driver::RetryPolicy;
use time::OffsetDateTime;
use time::macros::format_description;

use crate::ledger::SharedLedger;
use crate::provider::ProviderKind;
use crate::report::{
    Provenance, Report, ScenarioReport, TargetReport, TargetStatus, Verdict, judge,
};
use crate::scenarios::{self, ScenarioError, SuiteSize};
use crate::target::{Destination, Target};

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Target names to run (empty: all).
    pub targets: Vec<String>,
    /// Scenarios to run (empty: all implemented).
    pub scenarios: Vec<Scenario>,
    /// Provider to use (`None`: auto).
    pub provider: Option<ProviderKind>,
    /// The driver's retry policy (the spec's by default).
    pub policy: RetryPolicy,
    /// How large the long scenarios run.
    pub size: SuiteSize,
    /// The code version under test (a commit), stamped on every cell.
    pub code: Option<String>,
    /// Targets run at once by [`run`] (0 and 1: one after another). Most cells wait on their
    /// servers far more than they compute, so a second lane shortens a whole run; the report
    /// keeps the targets' order either way.
    pub jobs: usize,
    /// Seconds each target took when it last ran at this size (see
    /// [`Report::seconds_by_target`]): [`run`] starts the longest first, so with several
    /// lanes the slowest target does not start last and run alone at the end. Targets with no
    /// time keep their order after the timed ones.
    pub last_seconds: BTreeMap<String, u64>,
}

/// Receives progress events (the CLI shows them).
pub trait Progress: Send + Sync {
    /// A target is being provisioned.
    fn provisioning(&self, target: &str);
    /// A target was skipped.
    fn skipped(&self, target: &str, reason: &str);
    /// A scenario starts.
    fn started(&self, target: &str, scenario: Scenario);
    /// A scenario ended.
    fn finished(&self, target: &str, report: &ScenarioReport);
    /// A scenario is still running (every 30 s): `status` says how far it got.
    fn running(&self, target: &str, scenario: Scenario, status: &str) {
        let _ = (target, scenario, status);
    }
}

/// How often a long scenario reports that it is still running.
pub(crate) const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `work`, reporting `every` while it runs how long it has run and what `ledger` counted.
async fn with_heartbeat<T>(
    work: impl std::future::Future<Output = T>,
    ledger: &SharedLedger,
    planned: Option<u64>,
    every: std::time::Duration,
    report: impl Fn(&str),
) -> T {
    let started = std::time::Instant::now();
    let mut work = std::pin::pin!(work);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tick.tick() => {
                let (batches, records) = ledger.lock().handed();
                let of = planned.map(|p| format!(" of about {p}")).unwrap_or_default();
                report(&format!(
                    "still running after {} s: {batches}{of} batches handed to the sink, {records} distinct records",
                    started.elapsed().as_secs()
                ));
            }
        }
    }
}

/// Progress that shows nothing.
pub struct Silent;

impl Progress for Silent {
    fn provisioning(&self, _: &str) {}
    fn skipped(&self, _: &str, _: &str) {}
    fn started(&self, _: &str, _: Scenario) {}
    fn finished(&self, _: &str, _: &ScenarioReport) {}
}

/// Today's date, UTC.
pub fn today() -> String {
    OffsetDateTime::now_utc()
        .format(format_description!("[year]-[month]-[day]"))
        .unwrap_or_else(|_| "unknown".into())
}

/// Whether a `--sink` selector picks the target with id `target`: the id itself or a prefix
/// of it ending at a `-` (`delta` picks `delta` and `delta-s3`; `delta-s` picks nothing).
pub fn selects(selector: &str, target: &str) -> bool {
    target == selector
        || target
            .strip_prefix(selector)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// A name no earlier run used: `pico-<scenario>-<nonce>`.
pub(crate) fn isolation_name(scenario: Scenario) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let nonce = (nanos as u64) ^ (u64::from(std::process::id()) << 40);
    format!("pico-{}-{:x}", scenario.id(), nonce & 0xffff_ffff_ffff)
}

/// Provisions through the first provider that works, or explains why none did.
async fn provision(
    target: &dyn Target,
    only: Option<ProviderKind>,
) -> Result<(ProviderKind, Box<dyn Destination>), String> {
    let supported = target.providers();
    let mut reasons = Vec::new();
    for kind in ProviderKind::AUTO_ORDER {
        if only.is_some_and(|o| o != kind) {
            continue;
        }
        if !supported.contains(&kind) {
            if only.is_some() {
                reasons.push(format!("{kind}: this target has no {kind} provider"));
            }
            continue;
        }
        match target.provision(kind).await {
            Ok(dest) => return Ok((kind, dest)),
            Err(why) => reasons.push(format!("{kind}: {why}")),
        }
    }
    Err(reasons.join("; "))
}

/// Runs the selected targets and scenarios, [`RunOptions::jobs`] targets at once.
pub async fn run(
    targets: &[Box<dyn Target>],
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Report {
    let selected: Vec<&dyn Target> = targets
        .iter()
        .filter(|t| opts.targets.is_empty() || opts.targets.iter().any(|n| selects(n, t.name())))
        .map(|t| t.as_ref())
        .collect();
    let names: Vec<&str> = selected.iter().map(|t| t.name()).collect();
    let order = start_order(&names, &opts.last_seconds);
    let selected = &selected;
    let mut rows: Vec<(usize, TargetReport)> = stream::iter(order)
        .map(|i| async move { (i, run_target(selected[i], opts, progress).await) })
        .buffer_unordered(opts.jobs.max(1))
        .collect()
        .await;
    rows.sort_by_key(|(i, _)| *i);
    let mut report = Report::new();
    report.targets = rows.into_iter().map(|(_, row)| row).collect();
    report
}

/// The order to start `names` in (indices into it): the longest by `last_seconds` first, then
/// the untimed ones in their own order.
pub(crate) fn start_order(names: &[&str], last_seconds: &BTreeMap<String, u64>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (Reverse(last_seconds.get(names[i]).copied()), i));
    order
}

/// Provisions one target, runs the scenarios on it and shuts it down: its row.
async fn run_target(
    target: &dyn Target,
    opts: &RunOptions,
    progress: &dyn Progress,
) -> TargetReport {
    progress.provisioning(target.name());
    let (provider, dest) = match provision(target, opts.provider).await {
        Ok(found) => found,
        Err(reason) => {
            progress.skipped(target.name(), &reason);
            return TargetReport {
                target: target.name().into(),
                title: target.title().into(),
                sink_crate: target.sink_crate().into(),
                status: TargetStatus::NotVerifiedHere(reason),
                mechanism: None,
                provider: None,
                server: None,
                docker_image: target.docker_image(),
                date: today(),
                size: None,
                scenarios: Vec::new(),
            };
        }
    };
    let mut row = run_destination(
        target.name(),
        target.sink_crate(),
        Some(provider),
        dest.as_ref(),
        &opts.scenarios,
        opts,
        progress,
    )
    .await;
    row.title = target.title().into();
    row.docker_image = target.docker_image();
    if let Err(e) = dest.shutdown().await {
        tracing::warn!(target = target.name(), error = %e, "shutting the destination down failed");
    }
    row
}

/// Runs `scenarios` (every implemented one when empty) against one destination and returns
/// its row: the sink's claims from `describe()`, and per scenario the measurement and the
/// verdict. `name` and `sink_crate` label the row.
pub async fn run_destination(
    name: &str,
    sink_crate: &str,
    provider: Option<ProviderKind>,
    dest: &dyn Destination,
    scenarios: &[Scenario],
    opts: &RunOptions,
    progress: &dyn Progress,
) -> TargetReport {
    let scenarios: Vec<Scenario> = if scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        scenarios.to_vec()
    };
    // Opened first, so a sink that detects server features can name them.
    let description = match dest.sink("pico-describe").await {
        Ok(s) => {
            if let Err(e) = s.sink.open().await {
                tracing::warn!(target = name, error = %e, "opening the describe sink failed");
            }
            s.sink.describe()
        }
        Err(e) => {
            let reason = match provider {
                Some(p) => format!("{p}: building a sink failed: {e}"),
                None => format!("building a sink failed: {e}"),
            };
            progress.skipped(name, &reason);
            return TargetReport {
                target: name.into(),
                title: String::new(),
                sink_crate: sink_crate.into(),
                status: TargetStatus::NotVerifiedHere(reason),
                mechanism: None,
                provider,
                server: Some(dest.server()),
                docker_image: None,
                date: today(),
                size: None,
                scenarios: Vec::new(),
            };
        }
    };
    let mut rows = Vec::new();
    let ran = Provenance {
        date: today(),
        size: Some(opts.size),
        code: opts.code.clone(),
        seconds: None,
    };
    for scenario in &scenarios {
        progress.started(name, *scenario);
        let started = Instant::now();
        let claim = description.claim(*scenario).clone();
        let isolation = isolation_name(*scenario);
        let ledger = SharedLedger::new(dest.payload_form());
        let work = scenarios::run(
            *scenario,
            dest,
            &isolation,
            opts.policy.clone(),
            opts.size,
            ledger.clone(),
        );
        let planned = scenarios::planned_batches(*scenario, opts.size);
        let cell = match with_heartbeat(work, &ledger, planned, HEARTBEAT, |status| {
            progress.running(name, *scenario, status);
        })
        .await
        {
            Ok(measured) => {
                let (outcome, verdict) = judge(&claim, &measured);
                ScenarioReport {
                    scenario: *scenario,
                    claim,
                    outcome,
                    verdict,
                    measured: Some(measured),
                    ran: Some(ran.clone()),
                }
            }
            Err(ScenarioError::NotApplicable(why)) => ScenarioReport {
                scenario: *scenario,
                claim,
                outcome: format!("not applicable: {why}"),
                verdict: Verdict::NotApplicable(why),
                measured: None,
                ran: Some(ran.clone()),
            },
            Err(ScenarioError::Failed(why)) => ScenarioReport {
                scenario: *scenario,
                claim,
                outcome: format!("scenario failed: {why}"),
                verdict: Verdict::Failed(why),
                measured: None,
                ran: Some(ran.clone()),
            },
        };
        let mut cell = cell;
        if let Some(ran) = &mut cell.ran {
            ran.seconds = Some(started.elapsed().as_secs());
        }
        progress.finished(name, &cell);
        rows.push(cell);
    }
    TargetReport {
        target: name.into(),
        title: String::new(),
        sink_crate: sink_crate.into(),
        status: TargetStatus::Verified,
        mechanism: Some(description.mechanism),
        provider,
        server: Some(dest.server()),
        docker_image: None,
        date: today(),
        size: Some(opts.size),
        scenarios: rows,
    }
}

/// Panics with every failing cell of `row` (loss, a contradicted claim, a failed scenario),
/// for `cargo test`: `assert_conformant(&run_destination(…).await)`.
pub fn assert_conformant(row: &TargetReport) {
    assert_eq!(
        row.status,
        TargetStatus::Verified,
        "{} was not verified",
        row.target
    );
    let failures: Vec<String> = row
        .scenarios
        .iter()
        .filter(|s| s.verdict.is_failure())
        .map(|s| format!("{}: {}", s.scenario.id(), s.outcome))
        .collect();
    assert!(
        failures.is_empty(),
        "{} fails {} scenario(s):\n{}",
        row.target,
        failures.len(),
        failures.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::scenarios::sample_batch;

    #[test]
    fn the_longest_targets_start_first_and_untimed_ones_keep_their_order() {
        let names = ["stdout", "postgres", "iceberg-s3", "delta-s3", "new"];
        let last: BTreeMap<String, u64> = [("stdout", 4), ("iceberg-s3", 1150), ("delta-s3", 420)]
            .into_iter()
            .map(|(n, s)| (n.to_owned(), s))
            .collect();
        let started: Vec<&str> = start_order(&names, &last)
            .into_iter()
            .map(|i| names[i])
            .collect();
        assert_eq!(
            started,
            ["iceberg-s3", "delta-s3", "stdout", "postgres", "new"]
        );
        // Nothing timed: the registry's order.
        assert_eq!(start_order(&names, &BTreeMap::new()), [0, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn a_long_scenario_reports_while_it_runs() {
        let ledger = SharedLedger::default();
        ledger.lock().sent(&sample_batch("t", 0, 0..=9));
        let lines = Mutex::new(Vec::new());
        let () = with_heartbeat(
            tokio::time::sleep(Duration::from_millis(130)),
            &ledger,
            Some(2_000),
            Duration::from_millis(40),
            |s| {
                lines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(s.to_owned())
            },
        )
        .await;
        let lines = lines.into_inner().unwrap_or_else(|p| p.into_inner());
        assert!((2..=4).contains(&lines.len()), "{lines:?}");
        assert!(
            lines[0].contains("1 of about 2000 batches handed to the sink, 10 distinct records"),
            "{lines:?}"
        );
    }
}
