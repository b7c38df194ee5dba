//! [`chunks`]: a batch's encoded items cut into requests by count and bytes.

use std::ops::Range;

/// Consecutive ranges of items (by their encoded `sizes`) of at most `max_items` items and at
/// most `max_bytes` bytes each; an item larger than `max_bytes` goes alone (the destination's
/// refusal then names it). Limits of 0 are taken as 1.
pub fn chunks(sizes: &[usize], max_bytes: usize, max_items: usize) -> Vec<Range<usize>> {
    let (max_bytes, max_items) = (max_bytes.max(1), max_items.max(1));
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, size) in sizes.iter().enumerate() {
        if i > start && (bytes.saturating_add(*size) > max_bytes || i - start == max_items) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes = bytes.saturating_add(*size);
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_both_limits_and_cover_every_item_once() {
        assert_eq!(chunks(&[4, 4, 4, 4], 8, usize::MAX), vec![0..2, 2..4]);
        assert_eq!(chunks(&[20, 1, 1], 8, usize::MAX), vec![0..1, 1..3]);
        assert_eq!(chunks(&[1, 1, 1, 1, 1], 100, 2), vec![0..2, 2..4, 4..5]);
        assert_eq!(chunks(&[3, 3, 3, 3], 7, 3), vec![0..2, 2..4]);
        assert_eq!(chunks(&[], 8, 8), Vec::<Range<usize>>::new());
        assert_eq!(chunks(&[5, 5], 0, 0), vec![0..1, 1..2]);
        let sizes: Vec<usize> = (0..1000).map(|i| (i * 37) % 101).collect();
        let cut = chunks(&sizes, 500, 17);
        assert_eq!(cut.first().map(|r| r.start), Some(0));
        assert_eq!(cut.last().map(|r| r.end), Some(sizes.len()));
        for pair in cut.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for r in &cut {
            let bytes: usize = sizes[r.clone()].iter().sum();
            assert!(r.len() <= 17 && (bytes <= 500 || r.len() == 1), "{r:?}");
        }
    }
}
