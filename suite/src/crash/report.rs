//! The crash suite's report: `docs/crash-suite.json` (the record of a run) and
//! `docs/crash-suite.md` rendered from it alone.

use std::fmt::Write as _;

use pico_conformance::target::ServerInfo;
use serde::{Deserialize, Serialize};

use super::controls::{Control, ControlResult};
use super::destinations::CrashSink;
use super::faults::FaultTally;
use super::scraped::MetricsCheck;
use super::{Case, CaseResult, Size};

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CrashReport {
    /// Tool and version.
    pub generated_by: String,
    /// Date (UTC).
    pub date: String,
    /// `full` or `reduced`, with the figures.
    pub size_name: String,
    /// The figures of the size.
    pub size: Size,
    /// The runtime it ran (`pico-kafka`, `pico-iggy`); reports from before this field ran
    /// pico-kafka.
    #[serde(default = "pico_kafka")]
    pub runtime: String,
    /// The partitions each case's records are spread over on the broker (4 in every report
    /// before the broker said).
    #[serde(default = "suite_partitions")]
    pub partitions: u32,
    /// The broker it ran against.
    pub broker: ServerInfo,
    /// The destinations, by sink.
    pub servers: Vec<(CrashSink, ServerInfo)>,
    /// Per sink and case.
    pub results: Vec<CaseResult>,
    /// Sinks that could not run here, with the reason.
    pub skipped: Vec<(CrashSink, String)>,
    /// Sinks that ran at once (reports from before this field ran one at a time).
    #[serde(default = "one_at_a_time")]
    pub jobs: usize,
    /// The controls' size, when they ran ([`super::controls`]).
    #[serde(default)]
    pub controls_size: Option<Size>,
    /// The controls: the kill case with the runtime broken on purpose.
    #[serde(default)]
    pub controls: Vec<ControlResult>,
    /// The later runs whose rows replaced this report's rows of the same sinks
    /// ([`CrashReport::merged_into`]), one line each: when, which code, which sinks.
    #[serde(default)]
    pub merged: Vec<String>,
}

fn one_at_a_time() -> usize {
    1
}

fn suite_partitions() -> u32 {
    super::PARTITIONS as u32
}

fn pico_kafka() -> String {
    "pico-kafka".into()
}

/// The file name, without extension, of `runtime`'s report: `crash-suite` for pico-kafka's,
/// `crash-suite-iggy` for pico-iggy's, ….
pub fn file_stem(runtime: &str) -> String {
    match runtime.strip_prefix("pico-") {
        Some("kafka") | None => "crash-suite".into(),
        Some(other) => format!("crash-suite-{other}"),
    }
}

impl CrashReport {
    /// This run's rows merged into `earlier`, a report of the same size: every sink this run
    /// measured or skipped replaces its rows there, every other sink keeps its own, its controls
    /// replace the earlier ones if it ran them, and `earlier.merged` gets a line saying which
    /// rows came from this run (its date, `code`, the code it measured, its broker).
    pub fn merged_into(self, mut earlier: CrashReport, code: &str) -> Result<CrashReport, String> {
        if earlier.size != self.size {
            return Err(format!(
                "the earlier report is of size {} and this run of size {}: run at the same size \
                 or without --merge",
                earlier.size_name, self.size_name
            ));
        }
        let ran: Vec<CrashSink> = self
            .servers
            .iter()
            .map(|(s, _)| *s)
            .chain(self.skipped.iter().map(|(s, _)| *s))
            .collect();
        if ran.is_empty() && self.controls.is_empty() {
            return Err("this run measured nothing to merge".into());
        }
        // A sink skipped now loses every row; a sink run keeps the cases not run now.
        let skipped: Vec<CrashSink> = self.skipped.iter().map(|(s, _)| *s).collect();
        earlier.results.retain(|r| {
            !skipped.contains(&r.sink)
                && !self
                    .results
                    .iter()
                    .any(|n| (n.sink, n.case) == (r.sink, r.case))
        });
        earlier.servers.retain(|(s, _)| !ran.contains(s));
        earlier.skipped.retain(|(s, _)| !ran.contains(s));
        let mut rows: Vec<String> = skipped.iter().map(|s| s.id().to_owned()).collect();
        for (sink, _) in &self.servers {
            let cases: Vec<&str> = self
                .results
                .iter()
                .filter(|r| r.sink == *sink)
                .map(|r| r.case.id())
                .collect();
            rows.push(format!("{} ({})", sink.id(), cases.join(", ")));
        }
        earlier.results.extend(self.results);
        earlier.results.sort_by_key(|r| (r.sink, r.case));
        earlier.servers.extend(self.servers);
        earlier.servers.sort_by_key(|(s, _)| *s);
        earlier.skipped.extend(self.skipped);
        if !self.controls.is_empty() {
            earlier.controls = self.controls;
            earlier.controls_size = self.controls_size;
            rows.push("the controls".into());
        }
        earlier.merged.push(format!(
            "{}: measured on {} by {} (code {}, broker {} {}, {} at once) and merged in",
            rows.join(", "),
            self.date,
            self.generated_by,
            code,
            self.broker.name,
            self.broker.version,
            self.jobs
        ));
        Ok(earlier)
    }

    /// Every failing cell.
    pub fn failures(&self) -> Vec<String> {
        self.results
            .iter()
            .filter_map(|r| {
                r.verdict
                    .as_ref()
                    .err()
                    .filter(|why| !why.starts_with("not applicable"))
                    .map(|why| format!("{}/{}: {why}", r.sink.id(), r.case.id()))
            })
            .chain(self.controls.iter().filter_map(ControlResult::missed))
            .collect()
    }
}

fn cell(r: &CaseResult) -> String {
    match &r.verdict {
        Err(why) if why.starts_with("not applicable") => "n/a".into(),
        Err(_) if r.produced == 0 => "✗ failed".into(),
        verdict => {
            let mark = match (verdict.is_ok(), &r.broker_fault) {
                (true, None) => "✓",
                (true, Some(_)) => "⊘",
                (false, _) => "✗",
            };
            let held_back = r
                .broker_fault
                .as_ref()
                .map(|f| format!(" · {}", f.headline()))
                .unwrap_or_default();
            let lost = if r.lost_count == 0 {
                "0 lost".to_owned()
            } else {
                format!("{} LOST", r.lost_count)
            };
            let stalled = if r.stalls > 0 { " ⚠ stall" } else { "" };
            let kills = r
                .kills
                .as_ref()
                .map(|k| format!(" · {}/{} kills effective", k.effective, k.kills))
                .unwrap_or_default();
            let fault = r
                .fault
                .as_ref()
                .and_then(FaultTally::headline)
                .map(|h| format!(" · {h}"))
                .unwrap_or_default();
            let letters = r
                .dead_letters
                .as_ref()
                .map(|d| format!(" · {}", d.headline()))
                .unwrap_or_default();
            format!(
                "{mark} {lost}{held_back} · {} dup{kills}{fault}{letters}{stalled}",
                r.duplicates
            )
        }
    }
}

/// The legend of ⊘, for a report that has such a cell.
fn held_back_legend(report: &CrashReport) -> &'static str {
    if report.results.iter().any(|r| r.broker_fault.is_some()) {
        " · ⊘ within the bound for every record the runtime could be handed, while the broker, by \
         its own fault, kept records it acknowledged from every live member (undelivered: still \
         on the broker beyond the group's committed offset, read back; details below)"
    } else {
        ""
    }
}

/// How the kill case's producer kept pace with its kills, for a report with a row whose kills
/// released the records share by share (its notes say how long the producer waited): in shares
/// sized to the kills still needed where any row's were, in equal shares for rows from before;
/// nothing for a report from before the shares.
fn shares(report: &CrashReport) -> String {
    let kills = || report.results.iter().filter_map(|r| r.kills.as_ref());
    if !kills().any(|k| k.producer_held_secs.is_some()) {
        return String::new();
    }
    let how = if kills().any(|k| k.shares_to_need) {
        "in shares, each the records not yet released divided by twice the effective kills \
         still needed (half kept back for kills that miss; one kill needed in a smoke test)"
            .to_owned()
    } else {
        format!(
            "in as many equal shares as the case needs effective kills ({}; one in a smoke test)",
            report.size.kills
        )
    };
    format!(
        "; where a kill row's notes say how long the producer waited, its producer kept pace \
         with the kills: the records came {how}, the next released as a kill started to wait \
         for new records, so a kill slower than the producer's rate (a loaded machine) still \
         found records arriving"
    )
}

/// How the sinks shared the run, when several ran at once (the seconds of a case then include
/// time the machine spent on another sink's case); nothing for a run of one sink at a time, as
/// every report before this sentence was.
fn at_once(jobs: usize) -> String {
    if jobs <= 1 {
        String::new()
    } else {
        format!(
            " Up to {jobs} sinks ran at once, each with its own destination, topics and consumer \
             groups, so the seconds of a case include time shared with another sink's case; the \
             broker case, which stops the shared broker, ran alone."
        )
    }
}

/// What the bound of a sink that cannot deduplicate is, as the report measured it: what was in
/// flight at each interruption, or, in a report from before that was measured, one batch per
/// partition per interruption.
fn bound_legend(report: &CrashReport) -> String {
    let keyed = "Bound: 0 duplicates for sinks keyed on the record identity or a watermark";
    if report.results.iter().any(|r| r.in_flight.is_some()) {
        format!(
            "{keyed}; for the others what was in flight at the interruptions, summed: the \
             records the destination held at or beyond their partition's committed offset, \
             measured while a process that ended (killed, aborted, exited with an error) was \
             down before its restart, when every member of a stall restart was stopped, and, \
             for a broker outage or the rebalance after a group member died, the most found in \
             samples until the group had formed again; and for each revoke of a partition from \
             a live member, what that member had read and not committed (from its log line at \
             the revoke). A successor starts each partition at its \
             committed offset, so it can store again no more than these."
        )
    } else {
        format!(
            "{keyed}; for the others one batch ({} records) per partition ({}) per interruption \
             (a process killed, aborted or exited with an error, a broker outage, a stall \
             restart), the batch whose commit did not arrive.",
            super::BATCH_RECORDS,
            report.partitions
        )
    }
}

/// The controls table: the honest runtime's kill case beside each control's.
fn render_controls(report: &CrashReport, md: &mut String) {
    let Some(size) = report.controls_size else {
        return;
    };
    let sink = report
        .controls
        .first()
        .map_or(Control::SINK, |c| c.result.sink);
    let _ = writeln!(
        md,
        "\n## Controls\n\nEach control runs the {} case against {} with {} built with its \
         `mutants` feature (never in a release build) and broken on purpose in one way \
         (`[chaos] mutant`), at {} records and {} kills. A control is **caught** when the case \
         counts records lost, or, for a control that breaks only what the runtime reports, when \
         the metrics Prometheus scraped disagree with what the case measured; a control not \
         caught is missed and fails the run.\n",
        Control::CASE.id(),
        sink.id(),
        report.runtime,
        size.records,
        size.kills
    );
    let _ = writeln!(md, "| control | what it breaks | verdict |\n|---|---|---|");
    if let Some(honest) = report
        .results
        .iter()
        .find(|r| r.sink == sink && r.case == Control::CASE)
    {
        let _ = writeln!(
            md,
            "| none ({} as built, at size {}) | nothing | {} |",
            report.runtime,
            report.size_name,
            cell(honest)
        );
    }
    for c in &report.controls {
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            c.control.id(),
            c.control.breaks(&report.runtime),
            c.cell().replace('|', "\\|")
        );
    }
}

/// The section of what Prometheus scraped from each case's processes against what the case
/// measured; none for a report from before the cases were scraped.
fn render_metrics(report: &CrashReport, md: &mut String) {
    let rows: Vec<(&CaseResult, &MetricsCheck)> = report
        .results
        .iter()
        .filter_map(|r| Some((r, r.metrics.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Metrics scraped by Prometheus\n\n\
         Each process served `/metrics` on its own port; a real Prometheus started for the case \
         scraped every process four times a second. Counters start from 0 in each process life \
         (told apart by `{}_start_time_seconds`), so each figure is the sum over the lives \
         of the last value scraped; a killed life loses what it counted after its last scrape. \
         **exact**: no process ended before the drain and the last scrape followed it, so every \
         bad record in the dead-letter topic was counted dead-lettered, and, where the broker \
         stayed up, dead-lettered equals both the letters and the records rejected; read and \
         written + already present + changed + rejected reach the records produced; for a keyed \
         sink that tells replays apart, the rows held lie between written and written + already \
         present + changed; for an append-only destination, the rows held are at most written + \
         changed. Otherwise the figures may only fall short: dead-lettered ≤ letters, \
         written ≤ rows held; and after an effective kill a sink that tells every replayed \
         record apart whatever the replay's batches (a per-record upsert: PostgreSQL, Redshift) \
         must have counted some already present (the others tell only a replay of the same batch, \
         and a replay cut otherwise counts as written). In every case dead-lettered ≤ rejected, each \
         partition's consumer lag reads 0 after the drain and Prometheus saw as many \
         process lives as the supervisor started.\n",
        report.runtime.replace('-', "_")
    );
    let _ = writeln!(
        md,
        "| sink | case | lives (starts) | read (produced) | written (rows held) | already present \
         | rejected | dead-lettered (letters) | lag 0 | sums | agrees |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for (r, m) in rows {
        let agrees = match m.failure() {
            None => "✓".to_owned(),
            Some(why) => format!("✗ {}", why.replace('|', "\\|")),
        };
        let Some(s) = &m.scraped else {
            let _ = writeln!(
                md,
                "| {} | {} | – | – | – | – | – | – | – | – | {agrees} |",
                r.sink.id(),
                r.case.id()
            );
            continue;
        };
        let letters = r.dead_letters.as_ref().map_or(0, |d| d.letters);
        let _ = writeln!(
            md,
            "| {} | {} | {} ({}) | {} ({}) | {} ({}) | {} | {} | {} ({letters}) | {} | {} | {agrees} |",
            r.sink.id(),
            r.case.id(),
            s.lives,
            r.processes.starts,
            s.read,
            r.produced,
            s.written,
            r.read,
            s.already_present,
            s.rejected,
            s.dead_lettered,
            s.lag_zero,
            if m.exact {
                "exact"
            } else {
                "last scrape of each life"
            },
        );
    }
}

/// The Markdown page.
pub fn render(report: &CrashReport) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Crash suite: {} under the spec's failure matrix\n",
        report.runtime
    );
    let _ = writeln!(
        md,
        "Generated by `{}` on {} from `{}.json`; do not edit by hand (regenerate with \
         `./scripts/crash-suite.sh`).\n",
        report.generated_by,
        report.date,
        file_stem(&report.runtime)
    );
    // Runs from before the kill case was timed by progress carry no kill tallies, and were
    // described as they ran.
    let kills = if report.results.iter().any(|r| r.kills.is_some()) {
        format!(
            "in the kill case, at least {} effective SIGKILLs: each sent once the group has \
             committed past what the previous kill left in flight (waiting up to {} s) and the \
             running process has then written new records and holds their batch before its commit (`[chaos] \
             written_file`, `hold_after_write_ms`), and effective when, measured while the \
             process is down, the destination holds records beyond the committed offset of a \
             partition it owned{}",
            report.size.kills,
            super::kills::COMMIT_WAIT.as_secs(),
            shares(report)
        )
    } else {
        format!("{} SIGKILLs in the kill case", report.size.kills)
    };
    let finished = if report.results.iter().any(|r| r.kills.is_some()) {
        " A case passes only if, after the final drain, the group's committed offsets are the \
         partition ends."
    } else {
        ""
    };
    // Runs from before the faults were counted carry no fault tallies.
    let counted = if report.results.iter().any(|r| r.fault.is_some()) {
        " Every other case counts what its fault did and fails when a count is 0: the panic \
         case the records of the batch its sink cut short (half written, then a panic) that the \
         destination held before the process ended, the panics its workers reported and the \
         exits with code 2 they caused; the broker case the consumer errors the runtime logged \
         and the records committed after the broker came back; the destination case the \
         connections refused and the records committed after it came back, and it fails when \
         the runtime restarted or a running member lost a partition during the outage (an \
         outage is retried through); the group case the partitions revoked from running \
         members (rebalances, not at a drain); the flaky case the cuts and the retries (batches \
         the runtime retried, requests the sink's client retried)."
    } else {
        ""
    };
    // Runs from before the physical check judged only the visible rows.
    let physical = if report.results.iter().any(|r| r.physical.is_some()) {
        " What the destination stores is judged, not only its visible view: every stored row is \
         counted (ClickHouse without `FINAL`, with merges stopped on the server started for the \
         suite) and a sink keyed on the record identity or a watermark fails with any row beyond \
         one per record; every payload is compared by checksum (as JSON) with the one produced."
    } else {
        ""
    };
    // Runs from before the streams held bad records had no dead letters to judge.
    let letters = if report.results.iter().any(|r| r.dead_letters.is_some()) {
        format!(
            " Every {}th record of a stream is bad (not JSON, not UTF-8, empty, JSON with a NUL \
             escape, 1.5 MiB), and the runtime has a dead-letter topic: after the drain each bad \
             record must be in that topic — read back from the broker, with `pico.dlq.*` headers \
             naming its topic, partition, offset and reason — and then not in the destination, \
             or stored by a sink whose destination takes it; a bad record in neither, or in both, \
             and a good record dead-lettered fail the case. A dead letter repeated (⚠) is \
             counted, not failed: the runtime produces a batch's dead letters before it commits \
             its offset, so an interruption between the two produces them again.",
            super::dead_letters::BAD_EVERY
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        md,
        "Size **{}**: {} keyed records per case over {} partitions, produced while the runtime \
         consumes; {kills}; broker and destination outages of {} s. Broker: {} {}. Each runtime \
         process runs under a supervisor that restarts it when it exits. Loss is counted against \
         the offsets the broker acknowledged to the producer; duplicates are visible rows beyond \
         one per record.{finished}{counted}{physical}{letters}{}\n",
        report.size_name,
        report.size.records,
        report.partitions,
        report.size.outage_secs,
        report.broker.name,
        report.broker.version,
        at_once(report.jobs)
    );
    let smoke: Vec<&str> = CrashSink::all()
        .into_iter()
        .filter(|s| s.smoke() && report.results.iter().any(|r| r.sink == *s))
        .map(CrashSink::id)
        .collect();
    if !smoke.is_empty() {
        let _ = writeln!(
            md,
            "Smoke tests ({}): each of these sinks runs under {} in the kill case alone, \
             with one effective kill at the same size, and is judged as above (–: a case not run \
             for a smoke test).\n",
            smoke.join(", "),
            report.runtime
        );
    }
    if !report.merged.is_empty() {
        let _ = writeln!(
            md,
            "Every row below was measured on {} except those a later run replaced:\n",
            report.date
        );
        for line in &report.merged {
            let _ = writeln!(md, "- {line}");
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "Legend: ✓ within the bound · ✗ loss or too many duplicates · n/a not applicable here · \
         ⚠ stall: the group stopped committing for 20 s with records left and every member was \
         restarted (details below){}. {}\n",
        held_back_legend(report),
        bound_legend(report)
    );
    let mut header = "| sink |".to_owned();
    let mut rule = "|---|".to_owned();
    for c in Case::ALL {
        let _ = write!(header, " {} |", c.id());
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    for sink in CrashSink::all() {
        if !report.results.iter().any(|r| r.sink == sink) {
            continue;
        }
        let _ = write!(md, "| {} |", sink.id());
        for case in Case::ALL {
            match report
                .results
                .iter()
                .find(|r| r.sink == sink && r.case == case)
            {
                Some(r) => {
                    let _ = write!(md, " {} |", cell(r));
                }
                None if sink.smoke() => md.push_str(" – |"),
                None => md.push_str(" not run |"),
            }
        }
        md.push('\n');
    }
    render_controls(report, &mut md);
    if !report.skipped.is_empty() {
        let _ = writeln!(md, "\n## Not run here\n");
        for (sink, why) in &report.skipped {
            let _ = writeln!(md, "- {}: {}", sink.id(), why.replace('\n', " "));
        }
    }
    let _ = writeln!(md, "\n## Details\n");
    let _ = writeln!(
        md,
        "| sink | case | produced | read | lost | duplicates (bound) | starts | kills | exits | seconds | notes |\n\
         |---|---|---:|---:|---:|---|---:|---:|---|---:|---|"
    );
    for r in &report.results {
        let exits: Vec<String> = r
            .processes
            .exits
            .iter()
            .map(|(w, n)| format!("{w} ×{n}"))
            .collect();
        let mut notes = r.notes.clone();
        if let Err(why) = &r.verdict {
            notes.insert(0, why.clone());
        }
        if !r.lost.is_empty() {
            notes.push(format!("first lost: {}", r.lost.join(", ")));
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {:.0} | {} |",
            r.sink.id(),
            r.case.id(),
            r.produced,
            r.read,
            r.lost_count,
            r.duplicates,
            r.duplicate_bound,
            r.processes.starts,
            r.processes.kills,
            exits.join(", "),
            r.seconds,
            notes.join("; ").replace('|', "\\|")
        );
    }
    render_metrics(report, &mut md);
    let _ = writeln!(md, "\n## Destinations\n");
    for (sink, info) in &report.servers {
        let _ = writeln!(md, "- {}: {} {}", sink.id(), info.name, info.version);
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::broker_fault::BrokerFault;

    fn report(date: &str, size: Size, rows: &[(CrashSink, Case, &str)]) -> CrashReport {
        let info = |name: &str| ServerInfo {
            name: name.into(),
            version: "1".into(),
        };
        let mut servers: Vec<(CrashSink, ServerInfo)> = Vec::new();
        for (sink, _, _) in rows {
            if !servers.iter().any(|(s, _)| s == sink) {
                servers.push((*sink, info(sink.id())));
            }
        }
        CrashReport {
            generated_by: "test".into(),
            date: date.into(),
            size_name: if size == Size::FULL {
                "full"
            } else {
                "reduced"
            }
            .into(),
            size,
            runtime: pico_kafka(),
            partitions: suite_partitions(),
            broker: info("tansu"),
            servers,
            results: rows
                .iter()
                .map(|(sink, case, why)| CaseResult::failed(*sink, *case, (*why).into()))
                .collect(),
            skipped: Vec::new(),
            jobs: 1,
            controls_size: None,
            controls: Vec::new(),
            merged: Vec::new(),
        }
    }

    #[test]
    fn the_legend_tells_the_shares_only_for_a_report_whose_kills_released_them() {
        let pg = CrashSink::POSTGRES;
        let mut shared = report("2026-12-07", Size::REDUCED, &[(pg, Case::Kill, "kill")]);
        let tally = |held| {
            Some(crate::crash::KillTally {
                producer_held_secs: held,
                ..Default::default()
            })
        };
        shared.results[0].kills = tally(None);
        let before = render(&shared);
        assert!(before.contains("effective SIGKILLs"), "{before}");
        assert!(!before.contains("equal shares"), "{before}");
        shared.results[0].kills = tally(Some(1.5));
        let after = render(&shared);
        assert!(
            after.contains("as many equal shares as the case needs effective kills (10;"),
            "{after}"
        );
        shared.results[0].kills = Some(crate::crash::KillTally {
            producer_held_secs: Some(1.5),
            shares_to_need: true,
            ..Default::default()
        });
        let sized = render(&shared);
        assert!(
            sized.contains("divided by twice the effective kills"),
            "{sized}"
        );
        assert!(!sized.contains("equal shares"), "{sized}");
    }

    #[test]
    fn a_merge_replaces_the_rows_of_the_sinks_run_and_says_so() {
        let meili = CrashSink::named("meilisearch").unwrap();
        let pg = CrashSink::POSTGRES;
        let earlier = report(
            "2026-12-01",
            Size::FULL,
            &[
                (meili, Case::Kill, "old"),
                (pg, Case::Kill, "pg kill"),
                (pg, Case::Panic, "pg panic"),
            ],
        );
        let later = report("2026-12-05", Size::FULL, &[(meili, Case::Kill, "new")]);
        let merged = later.clone().merged_into(earlier.clone(), "abc").unwrap();
        let rows: Vec<(&str, Case, String)> = merged
            .results
            .iter()
            .map(|r| (r.sink.id(), r.case, r.verdict.clone().unwrap_err()))
            .collect();
        assert_eq!(
            rows,
            [
                ("postgres", Case::Kill, "pg kill".to_owned()),
                ("postgres", Case::Panic, "pg panic".to_owned()),
                ("meilisearch", Case::Kill, "new".to_owned()),
            ]
        );
        assert_eq!(merged.date, "2026-12-01");
        assert_eq!(merged.servers.len(), 2);
        assert_eq!(merged.merged.len(), 1);
        assert!(merged.merged[0].starts_with("meilisearch (kill): measured on 2026-12-05"));
        assert!(
            merged.merged[0].contains("(code abc,"),
            "{}",
            merged.merged[0]
        );
        assert!(render(&merged).contains("except those a later run replaced"));

        // One case of a sink run again: its other cases stay.
        let panic_again = report("2026-12-06", Size::FULL, &[(pg, Case::Panic, "pg panic 2")]);
        let merged = panic_again.merged_into(merged, "def").unwrap();
        let rows: Vec<(Case, String)> = merged
            .results
            .iter()
            .filter(|r| r.sink == pg)
            .map(|r| (r.case, r.verdict.clone().unwrap_err()))
            .collect();
        assert_eq!(
            rows,
            [
                (Case::Kill, "pg kill".to_owned()),
                (Case::Panic, "pg panic 2".to_owned())
            ]
        );
        assert!(merged.merged[1].starts_with("postgres (panic): measured on 2026-12-06"));

        let reduced = report("2026-12-05", Size::REDUCED, &[(meili, Case::Kill, "new")]);
        let refused = reduced.merged_into(earlier, "abc").unwrap_err();
        assert!(refused.contains("same size"), "{refused}");
    }

    #[test]
    fn a_broker_fault_is_shown_apart_from_a_pass_and_a_loss() {
        let pg = CrashSink::POSTGRES;
        let mut r = report("2026-12-06", Size::REDUCED, &[(pg, Case::Broker, "")]);
        let case = &mut r.results[0];
        case.produced = 3998;
        case.verdict = Ok(());
        case.broker_fault = Some(BrokerFault {
            members: 2,
            connected: 1,
            stranded: [(3, (120, 1000))].into(),
            undelivered: 880,
        });
        assert!(cell(case).starts_with("⊘ 0 lost · 880 undelivered (broker fault)"));
        assert!(r.failures().is_empty(), "the runtime lost nothing");
        assert!(render(&r).contains("⊘ within the bound"));
        // The same fault beside a loss is a loss.
        let case = &mut r.results[0];
        case.lost_count = 2;
        case.verdict = Err("2 records lost".into());
        assert!(cell(case).starts_with("✗ 2 LOST · 880 undelivered"));
        assert_eq!(r.failures().len(), 1);
    }
}
