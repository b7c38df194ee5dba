//! The identity derivations every record goes through, timed per record.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pico_sink::identity::{Namespace, RecordId, Scope};

use super::median;
use super::report::{BenchSize, IdentityTiming};

/// Records per timed loop.
const LOOP: u64 = 200_000;

fn time_per_record(reps: usize, mut f: impl FnMut(&RecordId) -> usize) -> f64 {
    let ids: Vec<RecordId> = (0..1024u64)
        .map(|i| RecordId::new("orders.eu-west", (i % 12) as u32, 1_000_000_000 + i * 7919))
        .collect();
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..reps.max(5) {
        let started = Instant::now();
        let mut sink = 0usize;
        for i in 0..LOOP {
            sink = sink.wrapping_add(f(black_box(&ids[(i % 1024) as usize])));
        }
        black_box(sink);
        times.push(started.elapsed());
    }
    median(times).as_nanos() as f64 / LOOP as f64
}

/// `record_text`, `elasticsearch_id` and `meilisearch_key` of a namespaced identity.
pub fn identity(size: BenchSize) -> Result<Vec<IdentityTiming>, String> {
    let namespace = Namespace::new("prod-1").map_err(|e| e.to_string())?;
    let scope = Scope::new(Some(namespace));
    let reps = size.reps();
    Ok(vec![
        IdentityTiming {
            function: "Scope::record_text".into(),
            ns_per_record: time_per_record(reps, |id| scope.record_text(id).len()),
        },
        IdentityTiming {
            function: "Scope::elasticsearch_id".into(),
            ns_per_record: time_per_record(reps, |id| scope.elasticsearch_id(id).len()),
        },
        IdentityTiming {
            function: "Scope::meilisearch_key".into(),
            ns_per_record: time_per_record(reps, |id| scope.meilisearch_key(id).len()),
        },
    ])
}
