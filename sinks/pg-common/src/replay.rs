//! The replay fast path of the PostgreSQL-protocol sinks: a 64-bit digest of each record's
//! content stored beside it (`pico_digest`), and one probe that tells whether the table already
//! holds a batch exactly.
//!
//! The probe reads `count(*)` and `sum(pico_digest)` over the batch's offset range (an index
//! range scan, nothing else). Equal count and equal sum to the batch's own mean the table holds
//! exactly these records with this content: the write is skipped. A count of 0 means none is
//! there (a first write). Anything else — some present, a payload changed under
//! `ConflictAction::Update`, a compacted range with other offsets — takes the upsert path. A
//! false "identical" needs the sum of 64-bit digests of a different set to collide.

use pico_sink::identity::Scope;
use pico_sink::{Batch, Record, SinkError};

/// The digest stored in `pico_digest`: [`Record::content_digest`] as a signed 64-bit integer.
pub fn record_digest(record: &Record) -> i64 {
    record.content_digest() as i64
}

/// What a probe found for a batch's offset range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No row of the range: a first write.
    Empty,
    /// The table holds exactly the batch: nothing to write.
    Identical,
    /// Some rows, or other content: upsert.
    Partial,
}

/// The probe statement for `table`: `$1` topic, `$2` partition, `$3`..`$4` offsets.
pub fn probe_sql(table: &str) -> String {
    format!(
        "SELECT count(*)::int8, coalesce(sum(pico_digest::numeric), 0)::text FROM {table} \
         WHERE pico_topic = $1 AND pico_partition = $2 AND pico_offset BETWEEN $3 AND $4"
    )
}

/// The batch's own count and digest sum, to compare with the probe's answer.
pub fn batch_sum(batch: &Batch) -> (i64, i128) {
    let sum = batch
        .records()
        .iter()
        .map(|r| i128::from(record_digest(r)))
        .sum();
    (batch.len() as i64, sum)
}

/// Reads the probe's answer.
pub fn judge(batch: &Batch, count: i64, sum: &str) -> Probe {
    if count == 0 {
        return Probe::Empty;
    }
    let (n, expected) = batch_sum(batch);
    if count == n && sum.parse::<i128>().is_ok_and(|s| s == expected) {
        Probe::Identical
    } else {
        Probe::Partial
    }
}

/// The parameters of a statement over a batch's offset range (`$1` topic, `$2` partition,
/// `$3`..`$4` offsets), or `None` when the table's types cannot hold the range (a partition
/// above `i32::MAX`, an offset above `i64::MAX`).
struct RangeParams(String, i32, i64, i64);

impl RangeParams {
    fn of(scope: &Scope, batch: &Batch) -> Option<Self> {
        let id = batch.id();
        Some(Self(
            scope.qualified_topic(&id.topic).into_owned(),
            i32::try_from(id.partition).ok()?,
            i64::try_from(id.first).ok()?,
            i64::try_from(id.last).ok()?,
        ))
    }
}

/// Runs the probe (`sql` from [`probe_sql`]) for `batch` and judges the answer. A batch the table
/// cannot hold whole (a partition or offset out of its range) is [`Probe::Partial`].
pub async fn probe_batch(
    client: &tokio_postgres::Client,
    sql: &str,
    scope: &Scope,
    batch: &Batch,
) -> Result<Probe, SinkError> {
    let Some(RangeParams(topic, partition, first, last)) = RangeParams::of(scope, batch) else {
        return Ok(Probe::Partial);
    };
    let row = client
        .query_one(sql, &[&topic, &partition, &first, &last])
        .await
        .map_err(|e| crate::classify(e, "probing the batch's range").into_sink_error())?;
    Ok(judge(batch, row.get(0), row.get::<_, &str>(1)))
}

/// The statement reading each stored digest of a range of `table`: `$1` topic, `$2`
/// partition, `$3`..`$4` offsets.
pub fn stored_digests_sql(table: &str) -> String {
    format!(
        "SELECT pico_offset, pico_digest FROM {table} \
         WHERE pico_topic = $1 AND pico_partition = $2 AND pico_offset BETWEEN $3 AND $4"
    )
}

/// Positions in `batch` of the records whose identity the table holds with another content
/// digest (`sql` from [`stored_digests_sql`]): one range scan of the index, run only when a
/// probe found the range neither empty nor identical. A row without a digest (written before
/// the column existed) cannot tell, and is not counted.
pub async fn changed_records(
    client: &tokio_postgres::Client,
    sql: &str,
    scope: &Scope,
    batch: &Batch,
) -> Result<Vec<usize>, SinkError> {
    let Some(RangeParams(topic, partition, first, last)) = RangeParams::of(scope, batch) else {
        return Ok(Vec::new());
    };
    let rows = client
        .query(sql, &[&topic, &partition, &first, &last])
        .await
        .map_err(|e| crate::classify(e, "reading the range's digests").into_sink_error())?;
    let stored: std::collections::HashMap<i64, i64> = rows
        .iter()
        .filter_map(|r| Some((r.get::<_, i64>(0), r.get::<_, Option<i64>>(1)?)))
        .collect();
    Ok(differing(batch, &stored))
}

/// [`changed_records`] when there is something to compare: a table with `pico_digest` (`sql`
/// given) whose range the probe found partly filled or different; each changed record is
/// logged as a warning, with the offset, once per batch.
pub async fn changed_in(
    client: &tokio_postgres::Client,
    sql: Option<&str>,
    scope: &Scope,
    batch: &Batch,
    probe: Probe,
) -> Result<Vec<usize>, SinkError> {
    let (Some(sql), Probe::Partial) = (sql, probe) else {
        return Ok(Vec::new());
    };
    let changed = changed_records(client, sql, scope, batch).await?;
    if let Some(&first) = changed.first() {
        tracing::warn!(
            batch = %batch.id(),
            changed = changed.len(),
            first_offset = batch.records()[first].id.offset,
            "identities held with another payload: was the topic recreated, or is a second \
             cluster writing without a namespace?"
        );
    }
    Ok(changed)
}

/// Takes the `changed` records (positions in `batch`) out of `rows` (each row's position from
/// `position`) and returns their rejections with [`crate::CHANGED_REASON`]: what
/// [`crate::ConflictAction::Reject`] does. A changed record already rejected for another
/// reason is not in `rows` and is not rejected twice.
pub fn reject_changed<R>(
    rows: &mut Vec<R>,
    position: impl Fn(&R) -> usize,
    changed: &[usize],
    batch: &Batch,
) -> Vec<pico_sink::RejectedRecord> {
    if changed.is_empty() {
        return Vec::new();
    }
    let changed: std::collections::HashSet<usize> = changed.iter().copied().collect();
    let mut refused = Vec::new();
    rows.retain(|r| {
        let i = position(r);
        let keep = !changed.contains(&i);
        if !keep {
            refused.push(pico_sink::RejectedRecord::new(
                batch.records()[i].id.clone(),
                crate::CHANGED_REASON,
            ));
        }
        keep
    });
    refused
}

/// `Fatal` when [`crate::ConflictAction::Reject`] is asked of a table without `pico_digest`:
/// nothing would tell a changed record from a replay.
pub fn reject_needs_digest(
    action: crate::ConflictAction,
    digest: bool,
    table: &crate::QualifiedTable,
) -> Result<(), SinkError> {
    if action == crate::ConflictAction::Reject && !digest {
        return Err(SinkError::fatal(format!(
            "conflict = reject (on_changed) needs the pico_digest column to tell a changed record \
             from a replay: ALTER TABLE {table} ADD COLUMN pico_digest bigint (rows written before \
             it are compared once rewritten), or choose update or nothing"
        )));
    }
    Ok(())
}

/// Positions of the records of `batch` whose offset `stored` maps to another digest.
fn differing(batch: &Batch, stored: &std::collections::HashMap<i64, i64>) -> Vec<usize> {
    batch
        .records()
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            i64::try_from(r.id.offset)
                .ok()
                .and_then(|o| stored.get(&o))
                .is_some_and(|d| *d != record_digest(r))
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::identity::RecordId;

    #[test]
    fn a_probe_answer_is_judged_by_count_and_sum() {
        let batch = Batch::new(
            (0..3)
                .map(|o| Record::new(RecordId::new("t", 0, o), format!("v{o}")))
                .collect(),
        )
        .expect("batch");
        let (n, sum) = batch_sum(&batch);
        assert_eq!(judge(&batch, 0, "0"), Probe::Empty);
        assert_eq!(judge(&batch, n, &sum.to_string()), Probe::Identical);
        assert_eq!(judge(&batch, n, &(sum + 1).to_string()), Probe::Partial);
        assert_eq!(judge(&batch, n - 1, &sum.to_string()), Probe::Partial);
    }

    #[test]
    fn only_an_offset_held_with_another_digest_is_changed() {
        let batch = Batch::new(
            (0..4)
                .map(|o| Record::new(RecordId::new("t", 0, o), format!("v{o}")))
                .collect(),
        )
        .expect("batch");
        let digest = |i: usize| record_digest(&batch.records()[i]);
        // 0 identical, 1 changed, 2 absent, 3 changed.
        let stored = [(0, digest(0)), (1, digest(1) ^ 1), (3, digest(0))]
            .into_iter()
            .collect();
        assert_eq!(differing(&batch, &stored), vec![1, 3]);
        let mut rows: Vec<usize> = vec![0, 1, 3];
        let refused = reject_changed(&mut rows, |r| *r, &[1, 2, 3], &batch);
        assert_eq!(rows, vec![0], "1 and 3 are taken out; 2 was not a row");
        let offsets: Vec<u64> = refused.iter().map(|r| r.id.offset).collect();
        assert_eq!(offsets, vec![1, 3]);
        assert!(refused.iter().all(|r| r.reason == crate::CHANGED_REASON));
    }
}
