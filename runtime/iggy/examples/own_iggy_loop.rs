//! One pico sink inside your own Iggy loop, without the pico-iggy runtime: as a member of a
//! consumer group, poll each partition you own by offset, write the batch, and store the
//! group's offset only once the sink confirmed it. A crash anywhere before the store means the
//! next member polls the batch again, at the same offsets, and the sink turns that into no
//! visible duplicate.
//!
//! `cargo run -p pico-iggy --example own_iggy_loop -- iggy://USER:PASSWORD@127.0.0.1:8090
//! STREAM TOPIC GROUP` (the topic must exist); `tests/example.rs` runs it against a real Iggy server.

use pico_iggy::{GroupMember, Polled, to_record};
use pico_sink::identity::iggy::IggySource;
use pico_sink::{Batch, Sink};

/// Delivers what `group` has not stored yet of `stream/topic` into `sink`, partition by
/// partition, until each is read to its end; returns the messages written.
pub async fn own_loop(
    url: &str,
    (stream, topic, group): (&str, &str, &str),
    sink: &dyn Sink,
) -> Result<usize, Box<dyn std::error::Error>> {
    let source = IggySource::new(stream, topic)?;
    let member = GroupMember::join(url, &source, group).await?;
    sink.open().await?;
    let mut written = 0;
    for partition in member.assignment().await?.partitions {
        let mut next = member.stored(partition).await?.map_or(0, |last| last + 1);
        // `Polled::NotOwned`: the group gave the partition to another member; stop reading it.
        while let Polled::Messages { messages, .. } = member.poll(partition, next, 100).await? {
            let records = messages.iter().map(|m| to_record(&source, partition, m));
            let Ok(batch) = Batch::new(records.collect()) else {
                break; // read to its end
            };
            let outcome = sink.consume(&batch).await?; // an error: nothing stored, polled again
            assert!(
                outcome.rejected.is_empty(),
                "a real loop dead-letters these"
            );
            next = batch.id().last + 1;
            member.store(partition, next - 1).await?; // only now: the sink confirmed the batch
            written += messages.len();
        }
    }
    member.leave().await?;
    sink.close().await?;
    Ok(written)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, stream, topic, group] = args.as_slice() else {
        return Err("usage: own_iggy_loop IGGY_URL STREAM TOPIC GROUP".into());
    };
    let sink = pico_sink_stdout::StdoutSink::stdout(pico_sink::identity::Scope::default());
    let written = own_loop(url, (stream, topic, group), &sink).await?;
    eprintln!("{written} messages written and their offsets stored");
    Ok(())
}
