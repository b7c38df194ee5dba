//! The suite end to end on the targets that run anywhere: every scenario passes its claim with
//! zero loss, the lost-ack scenario is real, and a contradicted claim or a loss is caught.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_conformance::ledger::Ledger;
use pico_conformance::report::{Verdict, judge};
use pico_conformance::runner::{self, RunOptions, Silent};
use pico_conformance::scenarios::{SuiteSize, sample_batch};
use pico_conformance::target::{ReadRow, Readback, checksum};
use pico_sink::{Claim, Scenario};
use pico_suite::destinations;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_targets_pass_every_scenario_without_loss() {
    let opts = RunOptions {
        provider: Some(pico_conformance::provider::ProviderKind::Embedded),
        targets: vec!["stdout".into(), "http".into()],
        size: SuiteSize::Reduced,
        ..RunOptions::default()
    };
    let report = runner::run(&destinations::targets(), &opts, &Silent).await;
    assert_eq!(report.targets.len(), 3);
    for t in &report.targets {
        assert_eq!(t.scenarios.len(), Scenario::ALL.len(), "{}", t.target);
        for s in &t.scenarios {
            // stdout writes without yielding: a dropped consume cannot fall inside its write.
            if t.target == "stdout" && s.scenario == Scenario::CancelledConsume {
                assert!(
                    matches!(s.verdict, Verdict::NotExercised(_)),
                    "stdout/cancelled-consume: {}",
                    s.outcome
                );
                continue;
            }
            assert_eq!(
                s.verdict,
                Verdict::Pass,
                "{}/{}: {}",
                t.target,
                s.scenario.id(),
                s.outcome
            );
            let m = s.measured.as_ref().unwrap();
            assert!(m.lost.is_empty());
            assert!(m.sent > 0);
        }
    }
    let honouring = &report.targets[1];
    let lost_ack = honouring
        .scenarios
        .iter()
        .find(|s| s.scenario == Scenario::LostAck)
        .unwrap();
    let m = lost_ack.measured.as_ref().unwrap();
    // The 100-record batch and the large one, each through a cut answer and its retry.
    let sent = 100 + pico_conformance::scenarios::LARGE_BATCH as usize;
    assert_eq!((m.sent, m.read, m.visible_duplicates), (sent, sent, 0));
    assert!(m.notes[0].contains("ack cut 1 time"), "{:?}", m.notes);
    // The meter-readings figures come from what the destination holds.
    let meter = honouring
        .scenarios
        .iter()
        .find(|s| s.scenario == Scenario::MeterReadings)
        .and_then(|s| s.measured.as_ref())
        .unwrap();
    let figures: Vec<(usize, usize, usize)> = meter
        .meter
        .iter()
        .map(|f| (f.rows_read, f.consumption_rows, f.polluted_cells))
        .collect();
    assert_eq!(
        figures,
        vec![(2381, 2162, 10), (2419, 2219, 5), (2400, 2200, 0)]
    );
    assert_eq!(
        meter.meter[0].lost.len(),
        19,
        "at-most-once loss is named by the counter"
    );
    let ignoring = &report.targets[2];
    assert_eq!(ignoring.target, "http-ignoring");
    let replay = &ignoring.scenarios[0];
    // The 100-record batch and the 10 240-record one (10 MiB) both print again.
    assert_eq!(
        replay.measured.as_ref().unwrap().visible_duplicates,
        100 + pico_conformance::scenarios::LARGE_BATCH as usize
    );
    // Random faults really happened on the flaky network, and were survived.
    let flaky = honouring
        .scenarios
        .iter()
        .find(|s| s.scenario == Scenario::FlakyNetwork)
        .and_then(|s| s.measured.as_ref())
        .unwrap();
    assert!(
        flaky.sent >= 2000,
        "at least 200 batches of 10 at reduced size: {}",
        flaky.sent
    );
    let random = flaky.notes.iter().find(|n| n.contains("size reduced"));
    assert!(
        random.is_some_and(|n| !n.contains(" 0 requests and 0 answers")),
        "{:?}",
        flaky.notes
    );
    // open met its cuts first (the HTTP sink's open sends nothing).
    assert!(
        flaky.notes[0].starts_with("open under cuts: open sent no request"),
        "{:?}",
        flaky.notes
    );
}

fn rows(ids: &[(u64, u64)]) -> Readback {
    Readback {
        rows: ids
            .iter()
            .flat_map(|(offset, copies)| (0..*copies).map(move |_| *offset))
            .map(|o| {
                let r = pico_conformance::scenarios::sample_record("t", 0, o);
                ReadRow {
                    id: r.id,
                    checksum: checksum(&r.value),
                    value: r.value,
                }
            })
            .collect(),
        physical_rows: None,
        notes: Vec::new(),
    }
}

#[test]
fn loss_is_named_and_duplicates_contradict_a_single_copy_claim() {
    let mut ledger = Ledger::default();
    ledger.sent(&sample_batch("t", 0, 0..=4));
    let m = ledger.compare(&rows(&[(0, 1), (1, 1), (2, 2), (4, 1)]));
    assert_eq!(m.lost, vec!["t:0:3"]);
    assert_eq!(m.visible_duplicates, 1);
    let (words, verdict) = judge(&Claim::NoVisibleDuplicate, &m);
    assert!(matches!(verdict, Verdict::Lost(_)), "{words}");
    assert!(words.starts_with("LOST 1: t:0:3"), "{words}");

    let m = ledger.compare(&rows(&[(0, 1), (1, 1), (2, 2), (3, 1), (4, 1)]));
    let (words, verdict) = judge(&Claim::NoVisibleDuplicate, &m);
    assert!(matches!(verdict, Verdict::Contradicted(_)), "{words}");
    let (_, verdict) = judge(&Claim::Repeats, &m);
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_changed_payload_is_caught() {
    let mut ledger = Ledger::default();
    ledger.sent(&sample_batch("t", 0, 0..=0));
    let mut back = rows(&[(0, 1)]);
    back.rows[0].checksum ^= 1;
    let (_, verdict) = judge(&Claim::NoVisibleDuplicate, &ledger.compare(&back));
    assert!(matches!(verdict, Verdict::Failed(_)));
}
