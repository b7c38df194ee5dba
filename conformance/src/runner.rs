//! Runs targets through scenarios and assembles a [`Report`].

use std::time::{SystemTime, UNIX_EPOCH};

use pico_sink::{RetryPolicy, Scenario};
use time::OffsetDateTime;
use time::macros::format_description;

use crate::provider::ProviderKind;
use crate::report::{Report, ScenarioReport, TargetReport, TargetStatus, Verdict, judge};
use crate::scenarios::{self, ScenarioError};
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

/// Whether `--sink name` selects the target `target`: its full name, or the sink name before
/// the flavour in parentheses (`delta` selects `delta (local filesystem)`).
pub fn selects(name: &str, target: &str) -> bool {
    name == target || target.split(" (").next() == Some(name)
}

/// A name no earlier run used: `pico-<scenario>-<nonce>`.
pub fn isolation_name(scenario: Scenario) -> String {
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

/// Runs the selected targets and scenarios.
pub async fn run(
    targets: &[Box<dyn Target>],
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Report {
    let scenarios: Vec<Scenario> = if opts.scenarios.is_empty() {
        scenarios::IMPLEMENTED.to_vec()
    } else {
        opts.scenarios.clone()
    };
    let mut report = Report::new();
    for target in targets
        .iter()
        .filter(|t| opts.targets.is_empty() || opts.targets.iter().any(|n| selects(n, t.name())))
    {
        progress.provisioning(target.name());
        let (provider, dest) = match provision(target.as_ref(), opts.provider).await {
            Ok(found) => found,
            Err(reason) => {
                progress.skipped(target.name(), &reason);
                report.targets.push(TargetReport {
                    target: target.name().into(),
                    sink_crate: target.sink_crate().into(),
                    status: TargetStatus::NotVerifiedHere(reason),
                    mechanism: None,
                    provider: None,
                    server: None,
                    date: today(),
                    scenarios: Vec::new(),
                });
                continue;
            }
        };
        // Opened first, so a sink that detects server features can name them.
        let mechanism_and_claims = match dest.sink("pico-describe").await {
            Ok(mut s) => {
                if let Err(e) = s.sink.open().await {
                    tracing::warn!(target = target.name(), error = %e, "opening the describe sink failed");
                }
                Ok(s.sink.describe())
            }
            Err(e) => Err(e),
        };
        let description = match mechanism_and_claims {
            Ok(d) => d,
            Err(e) => {
                let reason = format!("{provider}: building a sink failed: {e}");
                progress.skipped(target.name(), &reason);
                report.targets.push(TargetReport {
                    target: target.name().into(),
                    sink_crate: target.sink_crate().into(),
                    status: TargetStatus::NotVerifiedHere(reason),
                    mechanism: None,
                    provider: Some(provider),
                    server: Some(dest.server()),
                    date: today(),
                    scenarios: Vec::new(),
                });
                let _ = dest.shutdown().await;
                continue;
            }
        };
        let mut rows = Vec::new();
        for scenario in &scenarios {
            progress.started(target.name(), *scenario);
            let claim = description.claim(*scenario).clone();
            let isolation = isolation_name(*scenario);
            let cell =
                match scenarios::run(*scenario, dest.as_ref(), &isolation, opts.policy.clone())
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
                        }
                    }
                    Err(ScenarioError::NotApplicable(why)) => ScenarioReport {
                        scenario: *scenario,
                        claim,
                        outcome: format!("not applicable: {why}"),
                        verdict: Verdict::NotApplicable(why),
                        measured: None,
                    },
                    Err(ScenarioError::Failed(why)) => ScenarioReport {
                        scenario: *scenario,
                        claim,
                        outcome: format!("scenario failed: {why}"),
                        verdict: Verdict::Failed(why),
                        measured: None,
                    },
                };
            progress.finished(target.name(), &cell);
            rows.push(cell);
        }
        report.targets.push(TargetReport {
            target: target.name().into(),
            sink_crate: target.sink_crate().into(),
            status: TargetStatus::Verified,
            mechanism: Some(description.mechanism),
            provider: Some(provider),
            server: Some(dest.server()),
            date: today(),
            scenarios: rows,
        });
        if let Err(e) = dest.shutdown().await {
            tracing::warn!(target = target.name(), error = %e, "shutting the destination down failed");
        }
    }
    report
}
