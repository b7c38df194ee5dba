//! A replay that carries another payload at a held id, against the real SurrealDB engine
//! (in-process, `mem://`): counted as `changed`, and overwritten, kept or rejected as the
//! configured action says; an exact replay is told as already present.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_sink::kit::{CHANGED_REASON, ConflictAction};
use pico_sink::testing::batch_of;
use pico_sink::{Batch, Outcome, Sink};
use pico_sink_surrealdb::{SurrealSink, SurrealSinkConfig};
use surrealdb::Surreal;
use surrealdb::engine::any::Any;

fn batch(records: &[(u64, &str)]) -> Batch {
    batch_of("orders", 0, records)
}

fn sink(db: &Surreal<Any>, table: &str, action: ConflictAction) -> SurrealSink {
    let mut config = SurrealSinkConfig::for_table(table);
    config.conflict = action;
    SurrealSink::with_client(db.clone(), config).unwrap()
}

/// What the table physically holds: its record count, and the text stored at offset 1.
async fn held(db: &Surreal<Any>, table: &str) -> (usize, Option<String>) {
    let mut answer = db
        .query("SELECT VALUE value.text FROM type::table($tb) ORDER BY pico_offset")
        .bind(("tb", table.to_owned()))
        .await
        .unwrap();
    let values: Vec<Option<String>> = answer.take(0).unwrap();
    (values.len(), values.get(1).cloned().flatten())
}

fn counts(outcome: &Outcome) -> (u64, u64, u64, usize) {
    (
        outcome.written,
        outcome.already_present,
        outcome.changed,
        outcome.rejected.len(),
    )
}

#[tokio::test]
async fn a_payload_changed_at_a_held_id_is_counted_and_the_action_applies() {
    let db = surrealdb::engine::any::connect("mem://").await.unwrap();
    db.use_ns("pico").use_db("pico").await.unwrap();
    let first = batch(&[(0, "zero"), (1, "one"), (2, "two")]);
    // Offset 1 comes back with other bytes (a recreated topic), 2 as it was, 3 is new.
    let reused = batch(&[(1, "uno"), (2, "two"), (3, "three")]);
    // (table, action, stored at offset 1 after, written, already present, changed, rejected)
    let cases = [
        ("c_update", ConflictAction::Update, "uno", 2, 1, 1, 0),
        ("c_keep", ConflictAction::Nothing, "one", 1, 2, 1, 0),
        ("c_reject", ConflictAction::Reject, "one", 1, 1, 1, 1),
    ];
    for (table, action, stored, written, present, changed, rejected) in cases {
        let sink = sink(&db, table, action);
        sink.open().await.unwrap();
        let outcome = sink.consume(&first).await.unwrap();
        assert_eq!(counts(&outcome), (3, 0, 0, 0), "{table}: first write");
        let exact = sink.consume(&first).await.unwrap();
        assert_eq!(counts(&exact), (0, 3, 0, 0), "{table}: exact replay");

        let outcome = sink.consume(&reused).await.unwrap();
        println!(
            "{table}: written {}, already present {}, changed {}, rejected {:?}",
            outcome.written, outcome.already_present, outcome.changed, outcome.rejected
        );
        assert_eq!(
            counts(&outcome),
            (written, present, changed, rejected),
            "{table}"
        );
        if rejected > 0 {
            assert_eq!(outcome.rejected[0].id.offset, 1, "{table}");
            assert_eq!(outcome.rejected[0].reason, CHANGED_REASON, "{table}");
        }
        // Physically: four records, one per id, whatever the action.
        assert_eq!(
            held(&db, table).await,
            (4, Some(stored.to_owned())),
            "{table}"
        );

        // The same replay again is changed again (unless it overwrote), never written twice.
        let again = sink.consume(&reused).await.unwrap();
        let changed_again = u64::from(action != ConflictAction::Update);
        assert_eq!(again.changed, changed_again, "{table}: replay of the reuse");
        assert_eq!(again.written, 0, "{table}: replay of the reuse");
        assert_eq!(held(&db, table).await.0, 4, "{table}");
    }
}

/// Records written before the sink stored digests hold no `pico_digest`: a replay over them is
/// already present (the sink cannot tell a change), never changed or rejected.
#[tokio::test]
async fn records_without_a_stored_digest_count_as_already_present() {
    let db = surrealdb::engine::any::connect("mem://").await.unwrap();
    db.use_ns("pico").use_db("pico").await.unwrap();
    db.query(
        "CREATE type::record('legacy', ['orders', 0, 1]) CONTENT \
         { pico_topic: 'orders', pico_partition: 0, pico_offset: 1, value: { text: 'one' } }",
    )
    .await
    .unwrap()
    .check()
    .unwrap();
    let sink = sink(&db, "legacy", ConflictAction::Reject);
    sink.open().await.unwrap();
    let outcome = sink
        .consume(&batch(&[(1, "uno"), (2, "two")]))
        .await
        .unwrap();
    assert_eq!(counts(&outcome), (1, 1, 0, 0));
    assert_eq!(held(&db, "legacy").await, (2, Some("two".to_owned())));
}
