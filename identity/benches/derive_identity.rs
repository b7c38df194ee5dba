//! Cost of deriving identities per record, for each encoding.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pico_identity::{BatchId, IdempotencyKeyStyle, Namespace, RecordId, Scope};

fn bench(c: &mut Criterion) {
    let scope = Scope::new(Some(Namespace::new("prod-eu-1").expect("valid namespace")));
    let ids: Vec<RecordId> = (0..1000u64)
        .map(|o| RecordId::new("meter.readings:v2", 7, 1_000_000 + o))
        .collect();
    let batch = BatchId::new("meter.readings:v2", 7, 1_000_000, 1_000_999).expect("valid range");
    let mut group = c.benchmark_group("per_record");
    group.throughput(Throughput::Elements(ids.len() as u64));
    group.bench_function("record_text", |b| {
        b.iter(|| {
            ids.iter()
                .map(|i| black_box(scope.record_text(i)).len())
                .sum::<usize>()
        })
    });
    group.bench_function("elasticsearch_id", |b| {
        b.iter(|| {
            ids.iter()
                .map(|i| black_box(scope.elasticsearch_id(i)).len())
                .sum::<usize>()
        })
    });
    group.bench_function("meilisearch_key", |b| {
        b.iter(|| {
            ids.iter()
                .map(|i| black_box(scope.meilisearch_key(i)).len())
                .sum::<usize>()
        })
    });
    group.bench_function("surreal_key", |b| {
        b.iter(|| {
            ids.iter()
                .map(|i| black_box(scope.surreal_key(i)).2)
                .sum::<u64>()
        })
    });
    group.bench_function("parse_record", |b| {
        let texts: Vec<String> = ids.iter().map(|i| scope.record_text(i)).collect();
        b.iter(|| {
            texts
                .iter()
                .filter_map(|t| scope.parse_record(black_box(t)).ok())
                .count()
        })
    });
    group.finish();
    let mut group = c.benchmark_group("per_batch");
    group.bench_function("doris_label", |b| {
        b.iter(|| black_box(scope.doris_label(&batch)))
    });
    group.bench_function("s3_batch_key", |b| {
        b.iter(|| black_box(scope.s3_batch_key(&batch)))
    });
    let keyed = IdempotencyKeyStyle::Keyed {
        secret: b"secret".to_vec(),
    };
    group.bench_function("idempotency_key_keyed", |b| {
        b.iter(|| black_box(scope.idempotency_key(&batch, &keyed)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
