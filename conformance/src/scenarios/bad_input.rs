//! bad-input: hostile topic names, extreme offsets and partitions, payloads that are not JSON,
//! not UTF-8, hold NUL bytes, are empty or oversized. Each record must be stored or rejected
//! with its offset and a reason; none may vanish.

use pico_sink::identity::RecordId;
use pico_sink::{Batch, Record};

use super::{Ctx, ScenarioError, TOPIC, sample_record};

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
    out.push(
        Batch::new(
            payloads
                .into_iter()
                .enumerate()
                .map(|(i, p)| Record::new(RecordId::new(TOPIC, 1, i as u64), p))
                .collect(),
        )
        .unwrap_or_else(|e| unreachable!("increasing offsets: {e}")),
    );
    out
}

fn single(record: Record) -> Batch {
    Batch::new(vec![record]).unwrap_or_else(|e| unreachable!("one record: {e}"))
}

/// Delivers every bad-input batch through one driver.
pub async fn run(ctx: &mut Ctx<'_>) -> Result<(), ScenarioError> {
    let mut driver = ctx.new_driver().await?;
    let all = batches();
    for batch in &all {
        ctx.deliver(&mut driver, batch).await?;
    }
    ctx.fault(
        "hostile records delivered",
        all.iter().map(|b| b.len() as u64).sum(),
    );
    ctx.notes.push(format!(
        "{} batches: hostile topics, extreme offsets/partitions, non-JSON, non-UTF-8, NUL, empty, {} MiB payloads",
        all.len(),
        OVERSIZED_BYTES >> 20
    ));
    Ok(())
}
