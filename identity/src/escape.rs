//! Byte escaping into a restricted alphabet, and the hash used where a limit forces shortening.
//!
//! `escape` keeps the bytes a destination allows and writes every other byte (always including
//! the escape byte itself) as the escape byte followed by two uppercase hex digits. Decoding is
//! unambiguous, so escaping is injective. A shortened form is `sha256-` followed by 64 lowercase
//! hex digits of the SHA-256 of the canonical text: it holds no `:` and no escape byte, which
//! keeps it disjoint from every escaped canonical text (those always carry a `:` or its escape).

use std::fmt::Write as _;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Appends the decimal digits of `n` (no allocation, no formatting machinery).
pub(crate) fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[at..] {
        out.push(*d as char);
    }
}

/// Escapes `text` into `out`. `keep(byte, position)` says which bytes stay; it must refuse `esc`.
pub(crate) fn escape_into(text: &str, esc: u8, keep: impl Fn(u8, usize) -> bool, out: &mut String) {
    debug_assert!(!keep(esc, 1), "the escape byte must always be escaped");
    out.reserve(text.len());
    for (i, b) in text.bytes().enumerate() {
        if keep(b, i) {
            out.push(b as char);
        } else {
            out.push(esc as char);
            out.push(HEX_UPPER[(b >> 4) as usize] as char);
            out.push(HEX_UPPER[(b & 0xF) as usize] as char);
        }
    }
}

/// Escapes `text` into a new string.
pub(crate) fn escape(text: &str, esc: u8, keep: impl Fn(u8, usize) -> bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    escape_into(text, esc, keep, &mut out);
    out
}

/// Reverses [`escape`]; `None` for a text that no escaping produces.
pub(crate) fn unescape(text: &str, esc: u8) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == esc {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `sha256-` + 64 lowercase hex digits of SHA-256(`text`).
pub(crate) fn sha256_form(text: &str) -> String {
    prefixed_hex("sha256-", &Sha256::digest(text.as_bytes()))
}

/// `hmac-sha256-` + 64 lowercase hex digits of HMAC-SHA256(`secret`, `text`).
pub(crate) fn hmac_form(secret: &[u8], text: &str) -> String {
    // HMAC accepts keys of any length, so this constructor cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(text.as_bytes());
    prefixed_hex("hmac-sha256-", &mac.finalize().into_bytes())
}

fn prefixed_hex(prefix: &str, digest: &[u8]) -> String {
    let mut out = String::with_capacity(prefix.len() + digest.len() * 2);
    out.push_str(prefix);
    for b in digest {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}
