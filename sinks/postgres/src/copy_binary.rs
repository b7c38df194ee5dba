//! PostgreSQL's binary `COPY` format, encoded straight into large buffers.
//!
//! `tokio_postgres`'s `BinaryCopyInWriter` takes one boxed `ToSql` per field and hands the
//! connection a message every 4 KiB (about four 1 KiB rows); a first write of 10 000 records
//! spent a measurable share of its time there. This encoder writes the same bytes (the format is
//! in the PostgreSQL manual, "COPY — Binary Format") for the column types the sink stages, and
//! the sink sends them in [`CHUNK`]-sized messages.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

/// Bytes per message handed to the connection.
pub(crate) const CHUNK: usize = 256 * 1024;

/// Seconds from the Unix epoch to PostgreSQL's (2000-01-01 00:00:00 UTC).
const PG_EPOCH_UNIX_SECS: u64 = 946_684_800;

/// Encodes rows of a binary `COPY … FROM STDIN (FORMAT binary)`.
pub(crate) struct CopyEncoder {
    buf: BytesMut,
}

impl CopyEncoder {
    /// A stream with its header written.
    pub(crate) fn new() -> Self {
        let mut buf = BytesMut::with_capacity(CHUNK + 8 * 1024);
        buf.put_slice(b"PGCOPY\n\xff\r\n\0");
        buf.put_i32(0); // flags: no OIDs
        buf.put_i32(0); // header extension length
        Self { buf }
    }

    /// Starts a row of `fields` fields.
    pub(crate) fn row(&mut self, fields: usize) {
        self.buf.put_i16(fields as i16);
    }

    fn null(&mut self) {
        self.buf.put_i32(-1);
    }

    fn bytes_field(&mut self, prefix: Option<u8>, bytes: &[u8]) {
        let len = bytes.len() + usize::from(prefix.is_some());
        self.buf.put_i32(len as i32);
        if let Some(p) = prefix {
            self.buf.put_u8(p);
        }
        self.buf.put_slice(bytes);
    }

    /// A `text` field.
    pub(crate) fn text(&mut self, v: Option<&str>) {
        match v {
            Some(t) => self.bytes_field(None, t.as_bytes()),
            None => self.null(),
        }
    }

    /// A `bytea` field.
    pub(crate) fn bytea(&mut self, v: Option<&[u8]>) {
        match v {
            Some(b) => self.bytes_field(None, b),
            None => self.null(),
        }
    }

    /// A `jsonb` field from JSON text (version byte 1, then the text; the server validates).
    pub(crate) fn jsonb(&mut self, v: Option<&[u8]>) {
        match v {
            Some(b) => self.bytes_field(Some(1), b),
            None => self.null(),
        }
    }

    /// An `int4` field.
    pub(crate) fn int4(&mut self, v: i32) {
        self.buf.put_i32(4);
        self.buf.put_i32(v);
    }

    /// An `int8` field.
    pub(crate) fn int8(&mut self, v: i64) {
        self.buf.put_i32(8);
        self.buf.put_i64(v);
    }

    /// A `timestamptz` field: microseconds since 2000-01-01 UTC.
    pub(crate) fn timestamptz(&mut self, v: Option<SystemTime>) {
        match v {
            Some(t) => {
                let pg_epoch = UNIX_EPOCH + Duration::from_secs(PG_EPOCH_UNIX_SECS);
                let micros = match t.duration_since(pg_epoch) {
                    Ok(after) => after.as_micros() as i64,
                    Err(before) => -(before.duration().as_micros() as i64),
                };
                self.int8(micros);
            }
            None => self.null(),
        }
    }

    /// The bytes encoded so far when they reached [`CHUNK`].
    pub(crate) fn take_chunk(&mut self) -> Option<Bytes> {
        (self.buf.len() >= CHUNK).then(|| self.buf.split().freeze())
    }

    /// The rest of the stream, with its trailer.
    pub(crate) fn finish(mut self) -> Bytes {
        self.buf.put_i16(-1);
        self.buf.freeze()
    }
}

#[cfg(test)]
mod tests {
    use tokio_postgres::types::{ToSql, Type};

    use super::*;

    /// The field as `tokio_postgres` encodes it: length, then its `ToSql` bytes.
    fn reference(v: &(dyn ToSql + Sync), ty: &Type) -> Vec<u8> {
        let mut body = BytesMut::new();
        let is_null = v.to_sql_checked(ty, &mut body).expect("encodes");
        let mut out = Vec::new();
        match is_null {
            tokio_postgres::types::IsNull::Yes => out.extend_from_slice(&(-1i32).to_be_bytes()),
            tokio_postgres::types::IsNull::No => {
                out.extend_from_slice(&(body.len() as i32).to_be_bytes());
                out.extend_from_slice(&body);
            }
        }
        out
    }

    fn field(f: impl FnOnce(&mut CopyEncoder)) -> Vec<u8> {
        let mut e = CopyEncoder::new();
        let header = e.buf.len();
        f(&mut e);
        e.buf[header..].to_vec()
    }

    #[test]
    fn fields_match_tokio_postgres_encoding() {
        assert_eq!(
            field(|e| e.text(Some("tópic"))),
            reference(&"tópic", &Type::TEXT)
        );
        assert_eq!(
            field(|e| e.text(None)),
            reference(&None::<&str>, &Type::TEXT)
        );
        assert_eq!(field(|e| e.int4(-7)), reference(&-7i32, &Type::INT4));
        assert_eq!(
            field(|e| e.int8(1 << 40)),
            reference(&(1i64 << 40), &Type::INT8)
        );
        let key: &[u8] = b"k\0y";
        assert_eq!(field(|e| e.bytea(Some(key))), reference(&key, &Type::BYTEA));
        let json = r#"{"a": [1, "b"]}"#;
        assert_eq!(
            field(|e| e.jsonb(Some(json.as_bytes()))),
            reference(&crate::RawJsonb(json), &Type::JSONB)
        );
        for t in [
            UNIX_EPOCH + Duration::from_millis(1_767_225_600_123),
            UNIX_EPOCH,
            UNIX_EPOCH - Duration::from_millis(86_400_001),
        ] {
            assert_eq!(
                field(|e| e.timestamptz(Some(t))),
                reference(&t, &Type::TIMESTAMPTZ),
                "{t:?}"
            );
        }
        assert_eq!(
            field(|e| e.timestamptz(None)),
            reference(&None::<SystemTime>, &Type::TIMESTAMPTZ)
        );
    }

    #[test]
    fn a_stream_has_header_rows_and_trailer() {
        let mut e = CopyEncoder::new();
        e.row(1);
        e.int4(5);
        let bytes = e.finish();
        assert!(bytes.starts_with(b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0"));
        assert_eq!(&bytes[19..21], &1i16.to_be_bytes());
        assert_eq!(&bytes[bytes.len() - 2..], &(-1i16).to_be_bytes());
    }

    #[test]
    fn chunks_are_handed_out_once_full() {
        let mut e = CopyEncoder::new();
        assert!(e.take_chunk().is_none());
        let big = vec![b'x'; CHUNK];
        e.row(1);
        e.bytea(Some(&big));
        let chunk = e.take_chunk().expect("a full chunk");
        assert!(chunk.len() >= CHUNK);
        assert!(e.take_chunk().is_none());
    }
}
