//! Batch validation and the envelope round-trip.

#![allow(clippy::unwrap_used)] // test helpers may panic

use pico_sink::identity::{Namespace, RecordId, Scope};
use pico_sink::kit::{Envelope, Payload};
use pico_sink::{Batch, BatchError, Record};

fn rec(topic: &str, partition: u32, offset: u64) -> Record {
    Record::new(RecordId::new(topic, partition, offset), "{}")
}

#[test]
fn invalid_batches_are_errors_not_panics() {
    assert_eq!(Batch::new(vec![]), Err(BatchError::Empty));
    assert!(matches!(
        Batch::new(vec![rec("t", 0, 1), rec("t", 1, 2)]),
        Err(BatchError::MixedPartitions { index: 1, .. })
    ));
    assert!(matches!(
        Batch::new(vec![rec("t", 0, 1), rec("u", 0, 2)]),
        Err(BatchError::MixedPartitions { index: 1, .. })
    ));
    assert_eq!(
        Batch::new(vec![rec("t", 0, 5), rec("t", 0, 7), rec("t", 0, 7)]),
        Err(BatchError::OffsetsNotIncreasing {
            index: 2,
            offset: 7,
            previous: 7
        })
    );
    assert!(Batch::new(vec![rec("t", 0, 2), rec("t", 0, 1)]).is_err());
}

#[test]
fn batch_identity_and_tail() {
    let b = Batch::new(vec![rec("t", 3, 10), rec("t", 3, 12), rec("t", 3, 20)]).unwrap();
    assert_eq!(b.id().to_string(), "t:3:10..=20");
    assert_eq!(b.after(9).unwrap().len(), 3);
    let tail = b.after(12).unwrap();
    assert_eq!(tail.id().to_string(), "t:3:20..=20");
    assert!(b.after(20).is_none());
    assert!(b.after(u64::MAX).is_none());
}

#[test]
fn envelopes_give_back_the_exact_record() {
    let scope = Scope::new(Some(Namespace::new("c1").unwrap()));
    let records = [
        Record::new(RecordId::new("a:b", 1, u64::MAX), "{\"z\":1,\"a\":[1,2]}")
            .with_key("k1")
            .with_header("h", vec![0xff, 0x00])
            .with_timestamp_ms(-5),
        Record::new(RecordId::new("", 0, 0), "{ \"spaced\": true }"),
        Record::new(RecordId::new("t", 0, 1), "{\"multi\":\n1}"),
        Record::new(RecordId::new("t", 0, 2), vec![0xde, 0xad, 0xbe, 0xef]),
        Record::new(RecordId::new("t", 0, 3), "plain text"),
        Record::new(RecordId::new("t", 0, 4), "12345678901234567890123"),
        Record::new(RecordId::new("t", 0, 5), ""),
    ];
    for r in records {
        let line = serde_json::to_string(&Envelope::from_record(&scope, &r)).unwrap();
        assert!(!line.contains('\n'));
        let back: Envelope = serde_json::from_str(&line).unwrap();
        assert_eq!(back.to_record(&scope).unwrap(), r, "{line}");
    }
    assert!(matches!(
        Payload::from_bytes(b"{\"a\":1}"),
        Payload::Json(_)
    ));
    assert!(matches!(Payload::from_bytes(b"not json"), Payload::Text(_)));
    assert!(matches!(Payload::from_bytes(&[0xff]), Payload::Base64(_)));
}
