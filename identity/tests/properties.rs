//! Property tests: canonical round-trips, injectivity of every encoding, alphabet and length
//! limits, and a parser fuzz (arbitrary input never panics and anything accepted round-trips).

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::HashMap;

use pico_identity::{
    BatchId, ENCODINGS, IdempotencyKeyStyle, Injectivity, Namespace, RecordId, Scope,
};
use proptest::prelude::*;

/// Topics a hostile or careless producer might use.
fn topic() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(":".to_owned()),
        Just("::::".to_owned()),
        Just("a:0:1".to_owned()),
        Just("_3A".to_owned()),
        Just("%3A".to_owned()),
        Just("sha256-00".to_owned()),
        Just("..".to_owned()),
        Just("ns/topic".to_owned()),
        "[a-z.:_-]{0,12}",
        "[:0-9]{0,12}",
        "\\PC{0,24}",
        any::<String>(),
        // Long topics force hash-shortening in every limited encoding.
        ("[a-z:]{1,4}", 100usize..3000).prop_map(|(s, n)| s.repeat(n)),
        Just("x".repeat(10 * 1024)),
        Just("é:".repeat(300)),
    ]
}

fn record_id() -> impl Strategy<Value = RecordId> {
    (
        topic(),
        prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()],
        prop_oneof![
            Just(0u64),
            Just(u64::MAX),
            Just(i64::MAX as u64 + 1),
            any::<u64>()
        ],
    )
        .prop_map(|(t, p, o)| RecordId::new(t, p, o))
}

fn batch_id() -> impl Strategy<Value = BatchId> {
    (topic(), any::<u32>(), any::<u64>(), any::<u64>())
        .prop_map(|(t, p, a, b)| BatchId::new(t, p, a.min(b), a.max(b)).expect("ordered range"))
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        Just(Scope::default()),
        "[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}"
            .prop_map(|n| Scope::new(Some(Namespace::new(&n).expect("valid by construction")))),
    ]
}

/// Every string-valued record encoding, by name.
fn record_encodings(scope: &Scope, id: &RecordId) -> Vec<(&'static str, String)> {
    vec![
        ("record_text", scope.record_text(id)),
        ("elasticsearch_id", scope.elasticsearch_id(id)),
        ("meilisearch_key", scope.meilisearch_key(id)),
        ("nats_message_id", scope.nats_message_id(id)),
        (
            "surreal_key",
            serde_json::to_string(&scope.surreal_key(id)).expect("json"),
        ),
    ]
}

/// Every string-valued batch encoding, by name.
fn batch_encodings(scope: &Scope, id: &BatchId) -> Vec<(&'static str, String)> {
    vec![
        ("batch_text", scope.batch_text(id)),
        ("doris_label", scope.doris_label(id)),
        ("s3_batch_key", scope.s3_batch_key(id)),
        (
            "idempotency_key",
            scope.idempotency_key(id, &IdempotencyKeyStyle::Readable),
        ),
        (
            "idempotency_key_keyed",
            scope.idempotency_key(
                id,
                &IdempotencyKeyStyle::Keyed {
                    secret: b"s3cr3t".to_vec(),
                },
            ),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn canonical_record_text_round_trips(id in record_id(), scope in scope()) {
        prop_assert_eq!(id.to_string().parse::<RecordId>().expect("parses"), id.clone());
        prop_assert_eq!(scope.parse_record(&scope.record_text(&id)).expect("parses"), id);
    }

    #[test]
    fn canonical_batch_text_round_trips(id in batch_id(), scope in scope()) {
        prop_assert_eq!(id.to_string().parse::<BatchId>().expect("parses"), id.clone());
        prop_assert_eq!(scope.parse_batch(&scope.batch_text(&id)).expect("parses"), id);
    }

    #[test]
    fn meilisearch_key_round_trips_when_not_hashed(id in record_id(), scope in scope()) {
        let key = scope.meilisearch_key(&id);
        if !key.starts_with("sha256-") {
            prop_assert_eq!(scope.parse_meilisearch_key(&key), Some(id));
        }
    }

    #[test]
    fn nats_message_id_round_trips_and_holds_no_line_break(id in record_id(), scope in scope()) {
        let msg_id = scope.nats_message_id(&id);
        prop_assert!(msg_id.bytes().all(|b| (b' '..=b'~').contains(&b)), "{msg_id:?}");
        prop_assert_eq!(scope.parse_nats_message_id(&msg_id), Some(id));
    }

    #[test]
    fn one_pass_encodings_equal_their_definitions(id in record_id(), scope in scope()) {
        // record_text and meilisearch_key are built without format!/escape of an intermediate
        // text; they must equal the plain definitions.
        let canonical = match scope.namespace() {
            Some(ns) => format!("{ns}/{}:{}:{}", id.topic, id.partition, id.offset),
            None => format!("{}:{}:{}", id.topic, id.partition, id.offset),
        };
        prop_assert_eq!(scope.record_text(&id), canonical.clone());
        let mut escaped = String::new();
        for b in canonical.bytes() {
            if b.is_ascii_alphanumeric() || b == b'-' {
                escaped.push(b as char);
            } else {
                escaped.push_str(&format!("_{b:02X}"));
            }
        }
        let key = scope.meilisearch_key(&id);
        if escaped.len() <= 511 {
            prop_assert_eq!(key, escaped);
        } else {
            prop_assert!(key.starts_with("sha256-"), "{}", key);
        }
    }

    #[test]
    fn partition_texts_are_injective(a in record_id(), b in record_id(), scope in scope()) {
        let ta = scope.partition_text(&a.topic, a.partition);
        let tb = scope.partition_text(&b.topic, b.partition);
        prop_assert_eq!(ta == tb, a.topic == b.topic && a.partition == b.partition);
    }

    #[test]
    fn term_partition_keys_are_injective_and_short(a in record_id(), b in record_id(), scope in scope()) {
        let ka = scope.term_partition_key(&a.topic, a.partition);
        let kb = scope.term_partition_key(&b.topic, b.partition);
        prop_assert!(ka.len() <= pico_identity::TERM_KEY_MAX, "{} bytes", ka.len());
        prop_assert_eq!(ka == kb, a.topic == b.topic && a.partition == b.partition);
    }

    #[test]
    fn record_encodings_are_injective(a in record_id(), b in record_id(), scope in scope()) {
        prop_assume!(a != b);
        for ((name, x), (_, y)) in record_encodings(&scope, &a).into_iter().zip(record_encodings(&scope, &b)) {
            prop_assert_ne!(x, y, "{} collides for {:?} and {:?}", name, a, b);
        }
    }

    #[test]
    fn batch_encodings_are_injective(a in batch_id(), b in batch_id(), scope in scope()) {
        prop_assume!(a != b);
        for ((name, x), (_, y)) in batch_encodings(&scope, &a).into_iter().zip(batch_encodings(&scope, &b)) {
            prop_assert_ne!(x, y, "{} collides for {:?} and {:?}", name, a, b);
        }
    }

    #[test]
    fn neighbours_never_collide(id in record_id(), scope in scope()) {
        // Same topic, adjacent offsets and partitions: the most likely real-world near miss.
        let next = RecordId::new(id.topic.clone(), id.partition, id.offset.wrapping_add(1));
        let other_partition = RecordId::new(id.topic.clone(), id.partition.wrapping_add(1), id.offset);
        for other in [next, other_partition] {
            for ((name, x), (_, y)) in record_encodings(&scope, &id).into_iter().zip(record_encodings(&scope, &other)) {
                prop_assert_ne!(x, y, "{} collides", name);
            }
        }
    }

    #[test]
    fn namespaces_separate_identities(id in record_id(), a in "[a-z]{1,8}", b in "[a-z]{1,8}") {
        prop_assume!(a != b);
        let sa = Scope::new(Some(Namespace::new(&a).expect("valid")));
        let sb = Scope::new(Some(Namespace::new(&b).expect("valid")));
        for ((name, x), (_, y)) in record_encodings(&sa, &id).into_iter().zip(record_encodings(&sb, &id)) {
            prop_assert_ne!(x, y, "{} ignores the namespace", name);
        }
    }

    #[test]
    fn encodings_respect_alphabets_and_limits(id in record_id(), batch in batch_id(), scope in scope()) {
        let es = scope.elasticsearch_id(&id);
        prop_assert!(es.len() <= 512);
        let meili = scope.meilisearch_key(&id);
        prop_assert!(meili.len() <= 511);
        prop_assert!(meili.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-'), "{}", meili);
        let label = scope.doris_label(&batch);
        prop_assert!(label.len() <= 128);
        prop_assert!(label.bytes().all(|c| c.is_ascii_alphanumeric() || b"_-:".contains(&c)), "{}", label);
        let key = scope.s3_batch_key(&batch);
        for segment in key.split('/') {
            prop_assert!(!segment.is_empty() && segment != "." && segment != "..", "{}", key);
            prop_assert!(segment.len() <= 255);
            prop_assert!(segment.bytes().all(|c| c.is_ascii_alphanumeric() || b"_.-%".contains(&c)), "{}", key);
        }
        let file = key.rsplit('/').next().expect("has a last segment");
        prop_assert_eq!(Scope::parse_s3_range(file), Some((batch.first, batch.last)));
        for style in [IdempotencyKeyStyle::Readable, IdempotencyKeyStyle::Keyed { secret: vec![1, 2, 3] }] {
            let k = scope.idempotency_key(&batch, &style);
            prop_assert!(k.len() <= 255);
            // An sf-string needs no escaping for these bytes.
            prop_assert!(k.bytes().all(|c| (0x21..=0x7e).contains(&c) && c != b'"' && c != b'\\'), "{}", k);
        }
    }

    /// Parser fuzz: arbitrary text never panics, and whatever parses prints back identically.
    #[test]
    fn parsing_arbitrary_text_is_total_and_canonical(text in any::<String>(), scope in scope()) {
        if let Ok(id) = text.parse::<RecordId>() {
            prop_assert_eq!(id.to_string(), text.clone());
        }
        if let Ok(id) = text.parse::<BatchId>() {
            prop_assert_eq!(id.to_string(), text.clone());
        }
        if let Ok(id) = scope.parse_record(&text) {
            prop_assert_eq!(scope.record_text(&id), text.clone());
        }
        let _ = scope.parse_meilisearch_key(&text);
        let _ = Scope::parse_s3_range(&text);
    }

    /// Parser fuzz on near-canonical text: mutations of valid identities.
    #[test]
    fn parsing_mutated_identities_is_canonical(id in record_id(), cut in any::<prop::sample::Index>(), insert in "[0-9:+ -]{0,2}") {
        let text = id.to_string();
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) { at -= 1; }
        let mutated = format!("{}{}{}", &text[..at], insert, &text[at..]);
        if let Ok(parsed) = mutated.parse::<RecordId>() {
            prop_assert_eq!(parsed.to_string(), mutated);
        }
    }
}

#[test]
fn non_canonical_numbers_are_rejected() {
    for text in [
        "t:01:1",
        "t:1:01",
        "t:+1:1",
        "t:1:",
        "t::1",
        "t:1:-1",
        "t:4294967296:0",
        "t:0:18446744073709551616",
        "no-colons",
        "t:1",
    ] {
        assert!(text.parse::<RecordId>().is_err(), "{text} must not parse");
    }
    for text in ["t:0:5..=4", "t:0:1..2", "t:0:..=2", "t:0:1..=02"] {
        assert!(text.parse::<BatchId>().is_err(), "{text} must not parse");
    }
}

#[test]
fn topics_with_colons_parse_from_the_right() {
    let id: RecordId = "a:b:c:7:99".parse().expect("parses");
    assert_eq!((&*id.topic, id.partition, id.offset), ("a:b:c", 7, 99));
    let empty: RecordId = ":0:0".parse().expect("parses");
    assert_eq!(&*empty.topic, "");
}

#[test]
fn scoped_parsing_requires_the_namespace() {
    let scope = Scope::new(Some(Namespace::new("east").expect("valid")));
    assert!(scope.parse_record("west/t:0:1").is_err());
    assert!(scope.parse_record("t:0:1").is_err());
    assert_eq!(
        scope.parse_record("east/t:0:1").expect("parses"),
        RecordId::new("t", 0, 1)
    );
}

#[test]
fn bad_namespaces_are_refused_with_the_rule() {
    for bad in ["", ".hidden", "a/b", "a:b", "é", &"n".repeat(65)] {
        let err = Namespace::new(bad).expect_err("must be refused");
        assert!(err.to_string().contains("A-Z a-z 0-9"), "{err}");
    }
}

#[test]
fn long_topics_are_hash_shortened_and_distinct() {
    let scope = Scope::default();
    let a = RecordId::new("t".repeat(10_000), 0, 1);
    let b = RecordId::new(format!("{}u", "t".repeat(9_999)), 0, 1);
    for f in [Scope::elasticsearch_id, Scope::meilisearch_key] {
        let (x, y) = (f(&scope, &a), f(&scope, &b));
        assert!(x.starts_with("sha256-") && x.len() == 71, "{x}");
        assert_ne!(x, y);
    }
    let batch = BatchId::new("t".repeat(200), 0, 0, 9).expect("range");
    assert!(scope.doris_label(&batch).starts_with("sha256-"));
    assert!(
        scope
            .s3_topic_segment(&"t".repeat(300))
            .starts_with("%-sha256-")
    );
}

#[test]
fn term_partition_keys_stay_below_the_raw_tokenizer_limit() {
    let scope = Scope::default();
    // 254 bytes in all stays readable; 255 and more is hashed (Quickwit drops tokens >= 255).
    let fits = scope.term_partition_key(&"t".repeat(252), 0);
    assert_eq!(fits.len(), 254);
    assert!(fits.ends_with(":0"));
    for topic_len in [253, 255, 1000] {
        let key = scope.term_partition_key(&"t".repeat(topic_len), 0);
        assert!(key.starts_with("sha256-") && key.len() == 71, "{key}");
    }
    let sneaky = scope.term_partition_key(&scope.term_partition_key(&"t".repeat(300), 0), 0);
    assert!(
        sneaky.contains(':'),
        "a topic spelled like a hash stays plain: {sneaky}"
    );
}

#[test]
fn hashed_forms_never_equal_a_canonical_form() {
    // A topic spelled like a hash still encodes with its identity visible, not as that hash.
    let scope = Scope::default();
    let id = RecordId::new("t".repeat(600), 0, 0);
    let hashed = scope.elasticsearch_id(&id);
    let sneaky = RecordId::new(hashed.clone(), 0, 0);
    assert_ne!(scope.elasticsearch_id(&sneaky), hashed);
    assert_ne!(scope.meilisearch_key(&sneaky), scope.meilisearch_key(&id));
}

#[test]
fn every_encoding_declares_its_injectivity() {
    let mut seen = HashMap::new();
    for e in ENCODINGS {
        assert!(
            seen.insert(e.method, ()).is_none(),
            "{} listed twice",
            e.method
        );
        if let Injectivity::HashShortened { bits } = e.injectivity {
            assert!(bits >= 128, "{} hashes to {bits} bits", e.method);
            assert!(e.max_len.is_some(), "{} shortens without a limit", e.method);
        }
    }
}

#[test]
fn keyed_idempotency_keys_depend_on_the_secret() {
    let scope = Scope::default();
    let batch = BatchId::new("orders", 0, 0, 99).expect("range");
    let a = scope.idempotency_key(
        &batch,
        &IdempotencyKeyStyle::Keyed {
            secret: b"a".to_vec(),
        },
    );
    let b = scope.idempotency_key(
        &batch,
        &IdempotencyKeyStyle::Keyed {
            secret: b"b".to_vec(),
        },
    );
    assert_ne!(a, b);
    assert!(!a.contains("orders"));
    assert_eq!(
        scope.idempotency_key(&batch, &IdempotencyKeyStyle::Readable),
        "orders:0:0..=99"
    );
}
