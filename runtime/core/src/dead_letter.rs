//! What a dead letter carries besides the refused record's own key, value and headers: why it
//! was refused and where it came from, as `pico.dlq.*` headers, the same under every broker.

use pico_sink::DeadLetter;

/// The `pico.dlq.*` headers of a dead letter: the reason, the record's topic, partition and
/// offset, and whether the destination may hold it after all (`true`: the sink could not
/// confirm it and cannot rule out that the destination holds it).
pub fn origin_headers(letter: &DeadLetter) -> [(&'static str, String); 5] {
    let id = &letter.record.id;
    [
        ("pico.dlq.reason", letter.reason.clone()),
        ("pico.dlq.topic", id.topic.to_string()),
        ("pico.dlq.partition", id.partition.to_string()),
        ("pico.dlq.offset", id.offset.to_string()),
        ("pico.dlq.may_be_stored", letter.may_be_stored.to_string()),
    ]
}
