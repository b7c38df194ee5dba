//! One broker for cases of several sinks that run at once. Every case shares it, except the
//! broker case, which stops it: that case waits until no other case runs and holds the broker
//! alone while it runs (no case starts meanwhile).

use std::ops::Deref;
use std::time::Duration;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Case;
use crate::serve::kafka::Broker;

/// The broker of a crash run, shared by the cases that run at once.
pub struct SharedBroker(RwLock<Broker>);

impl SharedBroker {
    /// Shares `broker`.
    pub fn new(broker: Broker) -> Self {
        Self(RwLock::new(broker))
    }

    /// The broker for one case: alone for the broker case, shared for every other. Waits while
    /// a case holds it alone, or, for the broker case, while any other case runs.
    pub async fn turn(&self, case: Case) -> BrokerTurn<'_> {
        if case == Case::Broker {
            BrokerTurn::Alone(self.0.write().await)
        } else {
            BrokerTurn::Shared(self.0.read().await)
        }
    }

    /// The broker back, once no case runs.
    pub fn into_inner(self) -> Broker {
        self.0.into_inner()
    }
}

/// A case's hold on the broker, for as long as the case runs.
pub enum BrokerTurn<'a> {
    /// Other cases run beside this one.
    Shared(RwLockReadGuard<'a, Broker>),
    /// No other case runs: the broker may be stopped.
    Alone(RwLockWriteGuard<'a, Broker>),
}

impl Deref for BrokerTurn<'_> {
    type Target = Broker;

    fn deref(&self) -> &Broker {
        match self {
            BrokerTurn::Shared(b) => b,
            BrokerTurn::Alone(b) => b,
        }
    }
}

impl BrokerTurn<'_> {
    /// Stops the broker for `down` and starts it again ([`Broker::stop_for`]); only a case
    /// that holds it alone may.
    pub async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        match self {
            BrokerTurn::Alone(b) => b.stop_for(down).await,
            BrokerTurn::Shared(_) => Err(
                "the broker is shared with cases running at once; only the broker case, which \
                 holds it alone, may stop it"
                    .into(),
            ),
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
