//! Per-destination encodings of record and batch identities.
//!
//! Every encoding starts from the canonical text of [`Scope::record_text`] or
//! [`Scope::batch_text`] (namespace included) and is either injective or shortened by SHA-256
//! (256 bits) where the destination's length limit forces it. [`ENCODINGS`] lists them.

use serde::{Deserialize, Serialize};

use crate::batch_id::BatchId;
use crate::escape::{escape, escape_into, hmac_form, push_decimal, sha256_form, unescape};
use crate::namespace::{Namespace, Scope};
use crate::record_id::RecordId;

/// Whether distinct identities always get distinct encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Injectivity {
    /// Distinct identities always encode differently, and the encoding can be decoded.
    Injective,
    /// Injective up to the length limit; longer identities are replaced by a hash of this many
    /// bits (collision-resistant, not decodable). Hashed forms never equal an unhashed form.
    HashShortened {
        /// Bits of the hash.
        bits: u32,
    },
}

/// A description of one encoding, for docs and for the conformance table.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EncodingInfo {
    /// Method of [`Scope`] that produces it.
    pub method: &'static str,
    /// Destinations that use it.
    pub used_by: &'static str,
    /// Allowed characters.
    pub alphabet: &'static str,
    /// Maximum length in bytes, if the destination has one.
    pub max_len: Option<usize>,
    /// Injective or hash-shortened.
    pub injectivity: Injectivity,
}

const SHA256: Injectivity = Injectivity::HashShortened { bits: 256 };

/// Every encoding this crate provides.
pub const ENCODINGS: &[EncodingInfo] = &[
    EncodingInfo {
        method: "record_text",
        used_by: "Postgres/Redshift text, MongoDB _id, stdout, conformance read-back",
        alphabet: "any UTF-8",
        max_len: None,
        injectivity: Injectivity::Injective,
    },
    EncodingInfo {
        method: "surreal_key",
        used_by: "SurrealDB array record id [topic, partition, offset]",
        alphabet: "array of string, int, int",
        max_len: None,
        injectivity: Injectivity::Injective,
    },
    EncodingInfo {
        method: "elasticsearch_id",
        used_by: "Elasticsearch / OpenSearch _id",
        alphabet: "any UTF-8",
        max_len: Some(ELASTICSEARCH_ID_MAX),
        injectivity: SHA256,
    },
    EncodingInfo {
        method: "meilisearch_key",
        used_by: "Meilisearch primary key",
        alphabet: "A-Z a-z 0-9 _ -",
        max_len: Some(MEILISEARCH_KEY_MAX),
        injectivity: SHA256,
    },
    EncodingInfo {
        method: "nats_message_id",
        used_by: "NATS JetStream Nats-Msg-Id header",
        alphabet: "printable ASCII and space, % escapes the rest",
        max_len: None,
        injectivity: Injectivity::Injective,
    },
    EncodingInfo {
        method: "doris_label",
        used_by: "Apache Doris Stream Load label (per batch)",
        alphabet: "A-Z a-z 0-9 _ - :",
        max_len: Some(DORIS_LABEL_MAX),
        injectivity: SHA256,
    },
    EncodingInfo {
        method: "s3_batch_key",
        used_by: "S3 object key per batch: [ns/]topic-segment/partition/first-last",
        alphabet: "A-Z a-z 0-9 _ . - % and / between segments",
        max_len: Some(S3_SEGMENT_MAX),
        injectivity: SHA256,
    },
    EncodingInfo {
        method: "term_partition_key",
        used_by: "Quickwit pico_partition_key (a raw-tokenized term: tokens of 255 bytes or more are dropped)",
        alphabet: "any UTF-8",
        max_len: Some(TERM_KEY_MAX),
        injectivity: SHA256,
    },
    EncodingInfo {
        method: "idempotency_key",
        used_by: "HTTP Idempotency-Key (per batch), an RFC 8941 sf-string",
        alphabet: "printable ASCII without \" \\ % and space",
        max_len: Some(IDEMPOTENCY_KEY_MAX),
        injectivity: SHA256,
    },
];

/// Elasticsearch refuses `_id` values above 512 bytes.
pub const ELASTICSEARCH_ID_MAX: usize = 512;
/// Meilisearch refuses primary keys above 511 bytes.
pub const MEILISEARCH_KEY_MAX: usize = 511;
/// Doris refuses labels above 128 characters.
pub const DORIS_LABEL_MAX: usize = 128;
/// A topic segment of an S3 key is kept to 255 bytes (file-system backed stores refuse longer
/// names).
pub const S3_SEGMENT_MAX: usize = 255;
/// Search engines with a raw tokenizer (Quickwit, Tantivy) drop tokens of 255 bytes or more;
/// a term key is kept below that.
pub const TERM_KEY_MAX: usize = 254;
/// Idempotency keys are kept to 255 bytes.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

/// How [`Scope::idempotency_key`] writes the key. `Debug` never prints the HMAC secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum IdempotencyKeyStyle {
    /// The escaped canonical batch text (readable in endpoint logs); SHA-256 when it would
    /// exceed 255 bytes. Anyone who knows the topic can compute it.
    #[default]
    Readable,
    /// HMAC-SHA256 of the canonical batch text under a secret: stable across replays and
    /// processes sharing the secret, not guessable by anyone without it.
    Keyed {
        /// The HMAC secret.
        secret: Vec<u8>,
    },
}

impl std::fmt::Debug for IdempotencyKeyStyle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Readable => f.write_str("Readable"),
            Self::Keyed { .. } => f.write_str("Keyed { secret: <redacted> }"),
        }
    }
}

/// The SurrealDB record key `[topic, partition, offset]`, serialized as a JSON array.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SurrealRecordKey(pub String, pub u32, pub u64);

fn shorten(escaped: String, max: usize, canonical: &str) -> String {
    if escaped.len() <= max {
        escaped
    } else {
        sha256_form(canonical)
    }
}

fn meili_keep(b: u8, _: usize) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn doris_keep(b: u8, _: usize) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b':'
}

fn s3_keep(b: u8, i: usize) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0)
}

fn http_keep(b: u8, _: usize) -> bool {
    (0x21..=0x7e).contains(&b) && !matches!(b, b'"' | b'\\' | b'%')
}

/// Marker for the empty topic in an S3 key (`%` followed by a non-hex byte never comes out of
/// escaping).
const S3_EMPTY_TOPIC: &str = "%-empty";
/// Prefix of a hashed S3 topic segment.
const S3_HASHED_TOPIC: &str = "%-";

impl Scope {
    /// Elasticsearch `_id`: the canonical text when it fits in 512 bytes, else `sha256-<hex>`
    /// (which has no `:` and so never equals a canonical text).
    pub fn elasticsearch_id(&self, id: &RecordId) -> String {
        let text = self.record_text(id);
        if text.len() <= ELASTICSEARCH_ID_MAX {
            text
        } else {
            sha256_form(&text)
        }
    }

    /// A topic-partition as one search term: [`Scope::partition_text`] (`[ns/]topic:partition`)
    /// up to [`TERM_KEY_MAX`] bytes, `sha256-<hex>` above. The plain form always holds a `:`,
    /// the hashed one never, so the two cannot meet.
    pub fn term_partition_key(&self, topic: &str, partition: u32) -> String {
        let text = self.partition_text(topic, partition);
        shorten(text.clone(), TERM_KEY_MAX, &text)
    }

    /// Meilisearch primary key: the canonical text with every byte outside `[A-Za-z0-9-]`
    /// written as `_XX`; `sha256-<hex>` above 511 bytes.
    pub fn meilisearch_key(&self, id: &RecordId) -> String {
        // The escaped canonical text, built in one pass: `/` and `:` escape to `_2F` and `_3A`,
        // the digits of partition and offset are kept.
        let ns = self.namespace().map(Namespace::as_str);
        let mut out = String::with_capacity(ns.map_or(0, |n| n.len() + 3) + id.topic.len() + 40);
        if let Some(ns) = ns {
            escape_into(ns, b'_', meili_keep, &mut out);
            out.push_str("_2F");
        }
        escape_into(&id.topic, b'_', meili_keep, &mut out);
        out.push_str("_3A");
        push_decimal(&mut out, u64::from(id.partition));
        out.push_str("_3A");
        push_decimal(&mut out, id.offset);
        if out.len() <= MEILISEARCH_KEY_MAX {
            out
        } else {
            sha256_form(&self.record_text(id))
        }
    }

    /// Decodes a [`Scope::meilisearch_key`]; `None` for hashed or foreign keys.
    pub fn parse_meilisearch_key(&self, key: &str) -> Option<RecordId> {
        self.parse_record(&unescape(key, b'_')?).ok()
    }

    /// NATS JetStream message id (`Nats-Msg-Id`): the canonical text with `%` and every byte
    /// outside printable ASCII (space to `~`) written as `%XX`, so no header-breaking `\r`/`\n`
    /// reaches the protocol. No length limit; injective and decodable.
    pub fn nats_message_id(&self, id: &RecordId) -> String {
        escape(&self.record_text(id), b'%', |b, _| {
            (b' '..=b'~').contains(&b) && b != b'%'
        })
    }

    /// Decodes a [`Scope::nats_message_id`]; `None` for a foreign id.
    pub fn parse_nats_message_id(&self, text: &str) -> Option<RecordId> {
        self.parse_record(&unescape(text, b'%')?).ok()
    }

    /// Doris Stream Load label for a batch: the canonical batch text with every byte outside
    /// `[A-Za-z0-9:-]` written as `_XX`; `sha256-<hex>` above 128 bytes.
    pub fn doris_label(&self, id: &BatchId) -> String {
        let text = self.batch_text(id);
        shorten(escape(&text, b'_', doris_keep), DORIS_LABEL_MAX, &text)
    }

    /// S3 key segment for a topic: bytes outside `[A-Za-z0-9_.-]` (and a leading `.`) as `%XX`;
    /// `%-sha256-<hex>` above 255 bytes, `%-empty` for the empty topic.
    pub fn s3_topic_segment(&self, topic: &str) -> String {
        if topic.is_empty() {
            return S3_EMPTY_TOPIC.to_owned();
        }
        let escaped = escape(topic, b'%', s3_keep);
        if escaped.len() <= S3_SEGMENT_MAX {
            escaped
        } else {
            format!("{S3_HASHED_TOPIC}{}", sha256_form(topic))
        }
    }

    /// The key prefix (ending in `/`) under which the objects of one partition live:
    /// `[ns/]topic-segment/partition/`.
    pub fn s3_partition_prefix(&self, topic: &str, partition: u32) -> String {
        let mut out = String::new();
        if let Some(ns) = self.namespace() {
            out.push_str(ns.as_str());
            out.push('/');
        }
        out.push_str(&self.s3_topic_segment(topic));
        out.push('/');
        out.push_str(&partition.to_string());
        out.push('/');
        out
    }

    /// S3 object key (without extension) for a batch:
    /// `[ns/]topic-segment/partition/{first:020}-{last:020}`. Zero-padded offsets make LIST
    /// order equal offset order.
    pub fn s3_batch_key(&self, id: &BatchId) -> String {
        format!(
            "{}{:020}-{:020}",
            self.s3_partition_prefix(&id.topic, id.partition),
            id.first,
            id.last
        )
    }

    /// Reads `first` and `last` back from the last segment of an [`Scope::s3_batch_key`]
    /// (an extension after the range is ignored).
    pub fn parse_s3_range(file_name: &str) -> Option<(u64, u64)> {
        let stem = file_name.split('.').next()?;
        let (first, last) = stem.split_once('-')?;
        if first.len() != 20 || last.len() != 20 {
            return None;
        }
        let first: u64 = first.parse().ok()?;
        let last: u64 = last.parse().ok()?;
        (first <= last).then_some((first, last))
    }

    /// HTTP `Idempotency-Key` for a batch (the content of the sf-string, without quotes).
    ///
    /// [`IdempotencyKeyStyle::Readable`]: the canonical batch text with space, `"`, `\`, `%`
    /// and every non-printable or non-ASCII byte written as `%XX`; `sha256-<hex>` above 255
    /// bytes. [`IdempotencyKeyStyle::Keyed`]: `hmac-sha256-<hex>`.
    pub fn idempotency_key(&self, id: &BatchId, style: &IdempotencyKeyStyle) -> String {
        let text = self.batch_text(id);
        match style {
            IdempotencyKeyStyle::Readable => {
                let mut out = String::with_capacity(text.len() + 8);
                escape_into(&text, b'%', http_keep, &mut out);
                shorten(out, IDEMPOTENCY_KEY_MAX, &text)
            }
            IdempotencyKeyStyle::Keyed { secret } => hmac_form(secret, &text),
        }
    }

    /// SurrealDB record key `[qualified topic, partition, offset]`.
    pub fn surreal_key(&self, id: &RecordId) -> SurrealRecordKey {
        SurrealRecordKey(
            self.qualified_topic(&id.topic).into_owned(),
            id.partition,
            id.offset,
        )
    }
}
