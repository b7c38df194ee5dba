//! One broker for cases of several sinks that run at once. Every case shares it, except the
//! broker case, which stops it: that case waits until no other case runs and holds the broker
//! alone while it runs (no case starts meanwhile).

use std::ops::Deref;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Case;
use crate::serve::iggy::IggyServer;
use crate::serve::kafka::Broker;
use crate::serve::nats::NatsServer;

/// A broker the suite can take down and bring back with its data: the broker case's outage.
#[async_trait]
pub trait Outage: Send + Sync {
    /// Stops the broker, waits `down`, starts it again where it was.
    async fn stop_for(&mut self, down: Duration) -> Result<(), String>;
}

#[async_trait]
impl Outage for Broker {
    async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        Broker::stop_for(self, down).await
    }
}

#[async_trait]
impl Outage for IggyServer {
    async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        self.crash_for(down).await
    }
}

#[async_trait]
impl Outage for NatsServer {
    async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        self.crash_for(down).await
    }
}

/// The broker of a crash run, shared by the cases that run at once.
pub struct SharedBroker<B = Broker>(RwLock<B>);

impl<B> SharedBroker<B> {
    /// Shares `broker`.
    pub fn new(broker: B) -> Self {
        Self(RwLock::new(broker))
    }

    /// The broker for one case: alone for the broker case, shared for every other. Waits while
    /// a case holds it alone, or, for the broker case, while any other case runs.
    pub async fn turn(&self, case: Case) -> BrokerTurn<'_, B> {
        if case == Case::Broker {
            BrokerTurn::Alone(self.0.write().await)
        } else {
            BrokerTurn::Shared(self.0.read().await)
        }
    }

    /// The broker back, once no case runs.
    pub fn into_inner(self) -> B {
        self.0.into_inner()
    }
}

/// A case's hold on the broker, for as long as the case runs.
pub enum BrokerTurn<'a, B = Broker> {
    /// Other cases run beside this one.
    Shared(RwLockReadGuard<'a, B>),
    /// No other case runs: the broker may be stopped.
    Alone(RwLockWriteGuard<'a, B>),
}

impl<B> Deref for BrokerTurn<'_, B> {
    type Target = B;

    fn deref(&self) -> &B {
        match self {
            BrokerTurn::Shared(b) => b,
            BrokerTurn::Alone(b) => b,
        }
    }
}

impl<B: Outage> BrokerTurn<'_, B> {
    /// Stops the broker for `down` and starts it again ([`Outage::stop_for`]); only a case
    /// that holds it alone may.
    pub async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        match self {
            BrokerTurn::Alone(b) => Outage::stop_for(&mut **b, down).await,
            BrokerTurn::Shared(_) => Err(
                "the broker is shared with cases running at once; only the broker case, which \
                 holds it alone, may stop it"
                    .into(),
            ),
        }
    }
}

/// A case's turn on its run's broker, whichever it is.
pub enum Turn<'a> {
    /// On the Kafka broker.
    Kafka(BrokerTurn<'a, Broker>),
    /// On the Iggy server.
    Iggy(BrokerTurn<'a, IggyServer>),
    /// On the nats-server.
    Nats(BrokerTurn<'a, NatsServer>),
}

impl Turn<'_> {
    /// Whether the suite can stop the broker (not an external one).
    pub fn can_restart(&self) -> bool {
        match self {
            Turn::Kafka(b) => b.can_restart(),
            Turn::Iggy(_) | Turn::Nats(_) => true,
        }
    }

    /// Stops the broker for `down` and starts it again; only a case that holds it alone may.
    pub async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        match self {
            Turn::Kafka(b) => b.stop_for(down).await,
            Turn::Iggy(b) => b.stop_for(down).await,
            Turn::Nats(b) => b.stop_for(down).await,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::sync::RwLock;

    /// The property the broker case relies on: a writer waits for every reader, and no reader
    /// starts while a writer waits (tokio's RwLock is fair, writers first).
    #[tokio::test]
    async fn the_case_that_stops_the_broker_runs_alone() {
        let lock = Arc::new(RwLock::new(()));
        let reader = lock.clone().read_owned().await;
        let writing = Arc::new(AtomicBool::new(false));
        let writer = {
            let (lock, writing) = (lock.clone(), writing.clone());
            tokio::spawn(async move {
                let _alone = lock.write().await;
                writing.store(true, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                writing.store(false, Ordering::SeqCst);
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(
            !writing.load(Ordering::SeqCst),
            "the writer must wait for the running reader"
        );
        let late = {
            let (lock, writing) = (lock.clone(), writing.clone());
            tokio::spawn(async move {
                let _shared = lock.read().await;
                writing.load(Ordering::SeqCst)
            })
        };
        drop(reader);
        writer.await.unwrap();
        assert!(
            !late.await.unwrap(),
            "a reader that arrived while the writer waited must not run beside it"
        );
    }
}
