//! Every control through every scenario: each broken sink is caught for the reason it was
//! broken, and the honest one passes everything.

use pico_conformance::report::Mark;
use pico_conformance::runner::Silent;
use pico_conformance::scenarios::SuiteSize;
use pico_conformance_controls::{Control, run};
use pico_sink::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_control_is_caught_and_the_honest_sink_passes() {
    let table = run(SuiteSize::Reduced, None, &Silent).await;
    for row in &table.rows {
        for c in &row.cells {
            println!(
                "{} / {}: {:?}: {}",
                row.control,
                c.scenario.id(),
                c.mark,
                c.outcome
            );
        }
    }
    assert_eq!(table.rows.len(), Control::ALL.len());
    for row in &table.rows {
        assert_eq!(row.cells.len(), Scenario::ALL.len(), "{}", row.control);
    }
    let honest = &table.rows[0];
    assert_eq!(honest.control, Control::Honest.id());
    assert!(honest.cells.iter().all(|c| c.mark == Mark::Clean));
    let problems = table.problems();
    assert!(problems.is_empty(), "{problems:#?}");
    // A dedupe window passes every replay of a recent batch: only a replay past it sees it.
    let forgets = table
        .rows
        .iter()
        .find(|r| r.control == Control::ForgetsOldWrites.id())
        .expect("the forgets-old-writes row");
    let mark = |scenario: Scenario| {
        forgets
            .cells
            .iter()
            .find(|c| c.scenario == scenario)
            .map(|c| c.mark)
    };
    assert_eq!(mark(Scenario::ReplaySameBatch), Some(Mark::Missed));
    assert_eq!(mark(Scenario::ReplayAfterHorizon), Some(Mark::Caught));
}
