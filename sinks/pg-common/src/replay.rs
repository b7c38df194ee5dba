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

/// Runs the probe (`sql` from [`probe_sql`]) for `batch` and judges the answer. A batch the table
/// cannot hold whole (a partition or offset out of its range) is [`Probe::Partial`].
pub async fn probe_batch(
    client: &tokio_postgres::Client,
    sql: &str,
    scope: &Scope,
    batch: &Batch,
) -> Result<Probe, SinkError> {
    let id = batch.id();
    let (Ok(partition), Ok(first), Ok(last)) = (
        i32::try_from(id.partition),
        i64::try_from(id.first),
        i64::try_from(id.last),
    ) else {
        return Ok(Probe::Partial);
    };
    let topic = scope.qualified_topic(&id.topic);
    let row = client
        .query_one(sql, &[&topic.as_ref(), &partition, &first, &last])
        .await
        .map_err(|e| crate::classify(e, "probing the batch's range").into_sink_error())?;
    Ok(judge(batch, row.get(0), row.get::<_, &str>(1)))
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
}
