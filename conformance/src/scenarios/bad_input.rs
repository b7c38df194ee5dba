//! bad-input: hostile topic names, extreme offsets and partitions, payloads that are not JSON,
//! not UTF-8, hold NUL bytes, are empty or oversized. Each record must be stored or rejected
//! with its offset and a reason; none may vanish. Plain sample records sit among the hostile
//! ones (first in a batch, after the oversized payload, and a runtime-sized batch of them with
//! three hostile records inside): every destination can take them,
//! so rejecting one fails the cell — a sink may refuse what it cannot store, never its
//! neighbours. (`{"fine":true}` and `{"after":…}` carry no timestamp, which a time-series
//! destination may rightly refuse.)

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record};

use super::{Ctx, RUNTIME_BATCH, ScenarioError, TOPIC, sample_record};

/// The partition of the runtime-sized batch: plain records with a few hostile ones among them.
const MIXED_PARTITION: u32 = 3;
/// The hostile payloads of the runtime-sized batch, at their offsets.
const MIXED_HOSTILE: [(u64, &[u8]); 3] = [
    (100, b"not json at all"),
    (250, &[0xff, 0xfe, 0x00, 0x80]),
    (400, b""),
];

/// The records of the scenario every destination can take (plain sample records).
fn valid() -> Vec<RecordId> {
    let mixed = (0..RUNTIME_BATCH)
        .filter(|o| MIXED_HOSTILE.iter().all(|(h, _)| h != o))
        .map(|o| RecordId::new(TOPIC, MIXED_PARTITION, o));
    [RecordId::new(TOPIC, 2, 0), RecordId::new(TOPIC, 1, 8)]
        .into_iter()
        .chain(mixed)
        .collect()
}

/// A runtime-sized batch of plain records, a few of them hostile: a sink may refuse those,
/// never their neighbours.
fn mixed() -> Batch {
    let records = (0..RUNTIME_BATCH)
        .map(|o| {
            let mut r = sample_record(TOPIC, MIXED_PARTITION, o);
            if let Some((_, bad)) = MIXED_HOSTILE.iter().find(|(h, _)| *h == o) {
                r.value = bad.to_vec().into();
            }
            r
        })
        .collect();
    Batch::new(records).unwrap_or_else(|e| unreachable!("increasing offsets: {e}"))
}

/// Size of the oversized record.
pub const OVERSIZED_BYTES: usize = 2 << 20;

fn batches() -> Vec<Batch> {
    let hostile_topics = [
        ":".to_owned(),
        "a:b:0:1".to_owned(),
        String::new(),
        "ünï/cødé ../%2F\"'\\;--".to_owned(),
        "t".repeat(1000),
    ];
    let mut out: Vec<Batch> = hostile_topics
        .iter()
        .map(|t| single(sample_record(t, 0, 3)))
        .collect();
    out.push(single(sample_record(TOPIC, u32::MAX, 0)));
    out.push(
        Batch::new(vec![
            sample_record(TOPIC, 2, 0),
            sample_record(TOPIC, 2, i64::MAX as u64),
            sample_record(TOPIC, 2, i64::MAX as u64 + 1),
            sample_record(TOPIC, 2, u64::MAX),
        ])
        .unwrap_or_else(|e| unreachable!("increasing offsets: {e}")),
    );
    let payloads: Vec<Vec<u8>> = vec![
        b"{\"fine\":true}".to_vec(),
        b"not json at all".to_vec(),
        vec![0xff, 0xfe, 0x00, 0x80],
        b"{\"nul\":\"a\\u0000b\"}".to_vec(),
        b"text with a \0 NUL".to_vec(),
        Vec::new(),
        format!("{{\"big\":\"{}\"}}", "x".repeat(OVERSIZED_BYTES)).into_bytes(),
        b"{\"after\":\"the big one\"}".to_vec(),
    ];
    let mut hostile: Vec<Record> = payloads
        .into_iter()
        .enumerate()
        .map(|(i, p)| Record::new(RecordId::new(TOPIC, 1, i as u64), p))
        .collect();
    hostile.push(sample_record(TOPIC, 1, hostile.len() as u64));
    out.push(Batch::new(hostile).unwrap_or_else(|e| unreachable!("increasing offsets: {e}")));
    out.push(mixed());
    out
}

fn single(record: Record) -> Batch {
    Batch::new(vec![record]).unwrap_or_else(|e| unreachable!("one record: {e}"))
}

/// Delivers every bad-input batch through one driver.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let mut driver = ctx.new_driver().await?;
    let all = batches();
    let valid = valid();
    for id in &valid {
        debug_assert!(all.iter().any(|b| b.records().iter().any(|r| r.id == *id)));
        ctx.ledger.lock().must_store(id);
    }
    for batch in &all {
        ctx.deliver(&mut driver, batch).await?;
    }
    ctx.fault(
        "hostile records delivered",
        all.iter().map(|b| b.len() as u64).sum(),
    );
    ctx.notes.push(format!(
        "{} batches: hostile topics, extreme offsets/partitions, non-JSON, non-UTF-8, NUL, empty, {} MiB payloads, and {RUNTIME_BATCH} plain records with {} hostile ones among them; {} plain records must be stored",
        all.len(),
        OVERSIZED_BYTES >> 20,
        MIXED_HOSTILE.len(),
        valid.len()
    ));
    Ok(())
}
