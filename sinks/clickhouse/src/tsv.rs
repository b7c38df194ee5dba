//! ClickHouse `TabSeparated` escaping, byte exact.

/// Escapes bytes for a `TabSeparated` field (backslash, tab, newline, carriage return, NUL).
pub fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0 => out.extend_from_slice(b"\\0"),
            _ => out.push(b),
        }
    }
}

/// Reverses the escaping of one field of `TabSeparated` output.
pub fn unescape_field(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' && i + 1 < field.len() {
            out.push(match field[i + 1] {
                b't' => b'\t',
                b'n' => b'\n',
                b'r' => b'\r',
                b'0' => 0,
                b'b' => 8,
                b'f' => 12,
                other => other,
            });
            i += 2;
        } else {
            out.push(field[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_round_trip() {
        let all: Vec<u8> = (0..=255u8).chain(b"a\\tb\\".iter().copied()).collect();
        let mut escaped = Vec::new();
        escape(&all, &mut escaped);
        assert!(!escaped.contains(&b'\t') && !escaped.contains(&b'\n'));
        assert_eq!(unescape_field(&escaped), all);
    }
}
