//! One process per durable consumer: a lease in a JetStream key-value bucket.
//!
//! Several processes pulling from one durable each get part of its messages, and each writes
//! them to the same partition of the record identity. A sink that keeps a watermark per
//! partition then takes one process's messages for already written once another wrote later
//! ones: measured with S3 under the crash suite (three processes on one durable, one killed),
//! 66 of 3 999 acknowledged unwritten. The stream-order gate (`gate.rs`) also needs every
//! message delivered and unacknowledged to be in one process. So only the holder of the
//! durable's lease pulls; the others wait as standbys.
//!
//! * The lease is the key `<stream>.<durable>` (bytes outside `[A-Za-z0-9_-]` written `=XX`)
//!   in the bucket [`BUCKET`], created if absent; the bucket's `max_age` is the lease's time to
//!   live (set from `jetstream.lease_ms` by the process that creates the bucket).
//! * The holder renews it every third of that time, naming the revision it holds: a renewal
//!   the server refuses (the key expired and another process took it) or one that did not
//!   succeed within the time to live ends the run (exit 2, a supervisor starts it again as a
//!   standby), and no acknowledgement is sent once the lease may have passed on.
//! * A standby tries to create the key every third of the time to live.
//! * A drain deletes the key (with its revision), so a standby takes over at once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::jetstream::Context;
use async_nats::jetstream::kv::{CreateErrorKind, Store};
use async_nats::jetstream::stream::{self, DiscardPolicy};
use pico_runtime::lock;
use tracing::{info, warn};

/// The bucket holding every durable's lease.
pub const BUCKET: &str = "pico-nats-leases";

/// The key of the lease on `durable` of `stream`: each part with the bytes a key cannot hold
/// (and `=`) written as `=XX`, joined by `.` (which no escaped part holds).
pub fn key(stream: &str, durable: &str) -> String {
    let escape = |part: &str| {
        part.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                    char::from(b).to_string()
                } else {
                    format!("={b:02X}")
                }
            })
            .collect::<String>()
    };
    format!("{}.{}", escape(stream), escape(durable))
}

/// A lease this process holds.
pub struct Lease {
    store: Store,
    key: String,
    ttl: Duration,
    /// The revision held, and when the request that set it was sent.
    held: Mutex<(u64, Instant)>,
}

/// The bucket, created with `ttl` as its `max_age` if missing, and the time to live it sets.
/// Created as the stream a key-value bucket is: `create_key_value` of async-nats 0.52 cannot
/// read nats-server 2.9's account information (measured: "data did not match any variant").
async fn bucket(js: &Context, ttl: Duration) -> Result<(Store, Duration), String> {
    let failed = |e: &dyn std::fmt::Display| format!("lease bucket {BUCKET}: {e}");
    if js.get_key_value(BUCKET).await.is_err() {
        js.get_or_create_stream(stream::Config {
            name: format!("KV_{BUCKET}"),
            description: Some("pico-nats: one process per durable consumer".to_owned()),
            subjects: vec![format!("$KV.{BUCKET}.>")],
            max_messages_per_subject: 1,
            max_age: ttl,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: DiscardPolicy::New,
            num_replicas: 1,
            ..stream::Config::default()
        })
        .await
        .map_err(|e| failed(&e))?;
    }
    let store = js.get_key_value(BUCKET).await.map_err(|e| failed(&e))?;
    let max_age = store.status().await.map_err(|e| failed(&e))?.max_age();
    if max_age.is_zero() {
        return Err(format!(
            "the lease bucket {BUCKET} exists without a max_age, so a dead holder's lease would \
             never expire: delete it (nats kv del {BUCKET}) and pico-nats creates it again"
        ));
    }
    if max_age != ttl {
        info!(
            bucket = BUCKET,
            ?max_age,
            configured = ?ttl,
            "the lease bucket exists: its max_age is the leases' time to live"
        );
    }
    Ok((store, max_age))
}

impl Lease {
    /// Takes the lease on `durable` of `stream`, waiting as a standby while another process
    /// holds it; `None` if `stop` completed first.
    pub async fn take(
        js: &Context,
        (stream, durable): (&str, &str),
        ttl: Duration,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Self>, String> {
        tokio::pin!(stop);
        let (store, ttl) = bucket(js, ttl).await?;
        let key = key(stream, durable);
        let me = format!("pid {}", std::process::id());
        let mut told = false;
        loop {
            let sent = Instant::now();
            match store.create(&key, me.clone().into()).await {
                Ok(revision) => {
                    info!(key, ?ttl, "lease taken: this process consumes the durable");
                    return Ok(Some(Self {
                        store,
                        key,
                        ttl,
                        held: Mutex::new((revision, sent)),
                    }));
                }
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                    if !told {
                        told = true;
                        let holder = store
                            .get(&key)
                            .await
                            .ok()
                            .flatten()
                            .map(|v| String::from_utf8_lossy(&v).into_owned());
                        info!(
                            key,
                            ?holder,
                            "standby: another process holds the durable's lease"
                        );
                    }
                }
                Err(e) => {
                    warn!(key, error = %e, "consumer error: the lease not taken, trying again")
                }
            }
            tokio::select! {
                () = &mut stop => return Ok(None),
                () = tokio::time::sleep(ttl / 3) => {}
            }
        }
    }

    /// How often the holder renews.
    pub fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Whether the lease is surely still this process's: its last renewal was sent less than
    /// its time to live ago (less a margin for clocks and delivery).
    pub fn valid(&self) -> bool {
        lock(&self.held).1.elapsed() < self.ttl.mul_f64(0.9)
    }

    /// Renews the lease with the revision held. An error says why it may be lost.
    pub async fn renew(&self) -> Result<(), String> {
        let (revision, _) = *lock(&self.held);
        let sent = Instant::now();
        match self
            .store
            .update(
                &self.key,
                format!("pid {}", std::process::id()).into(),
                revision,
            )
            .await
        {
            Ok(next) => {
                *lock(&self.held) = (next, sent);
                if sent.elapsed() > self.renew_every() {
                    warn!(key = self.key, took = ?sent.elapsed(), ttl = ?self.ttl, "consumer error: the lease's renewal was slow; acknowledgements wait while it may have lapsed");
                }
                Ok(())
            }
            Err(e) => Err(format!("lease {} not renewed: {e}", self.key)),
        }
    }

    /// Gives the lease up (at a drain): a standby takes it at once.
    pub async fn release(&self) {
        let (revision, _) = *lock(&self.held);
        match self
            .store
            .delete_expect_revision(&self.key, Some(revision))
            .await
        {
            Ok(()) => info!(key = self.key, "lease given up"),
            Err(e) => warn!(key = self.key, error = %e, "lease not given up: it expires"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn a_lease_key_is_one_per_stream_and_durable() {
        assert_eq!(key("ORDERS", "to-s3"), "ORDERS.to-s3");
        assert_eq!(key("a.b", "c"), "a=2Eb.c");
        assert_ne!(key("a.b", "c"), key("a", "b.c"));
        assert_eq!(key("x=2E", "y"), "x=3D2E.y");
    }
}
