//! A Kafka-protocol broker for the runtime's crash suite: external (`PICO_KAFKA_BROKERS`),
//! docker (`apache/kafka` in KRaft mode, one node, advertised on a mapped port), or native
//! **tansu** (a single binary, `PICO_TANSU_BIN` or `tansu` on `PATH`, SQLite storage in a
//! throwaway directory — not `memory://`, whose fetches from inside a batch are wrong).
//! The native and docker brokers can be stopped and started again on the same port with
//! their data, for the broker-outage case.

use std::process::Stdio;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use testcontainers_modules::testcontainers::{ContainerAsync, GenericImage};
use tokio::process::Command;

use crate::serve::reaper::Tracked;

use crate::provide::{external_url_var, find_binary, free_port};
use crate::serve::docker::{ContainerSpec, start};
use pico_conformance::provider::ProviderKind;
use pico_conformance::target::ServerInfo;

/// A running broker.
pub struct Broker {
    /// `host:port` for clients.
    pub brokers: String,
    info: ServerInfo,
    keep: Keep,
}

enum Keep {
    External,
    Docker(Box<ContainerAsync<GenericImage>>),
    Native(Box<Tansu>),
}

/// A tansu process and its storage.
struct Tansu {
    bin: std::path::PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Tracked>,
}

impl Tansu {
    fn spawn(&mut self) -> Result<(), String> {
        let listener = format!("tcp://127.0.0.1:{}", self.port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("tansu.log"))
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&self.bin)
            .args([
                "broker",
                "--listener-url",
                &listener,
                "--advertised-listener-url",
                &listener,
                "--storage-engine",
                "sqlite://tansu.db",
            ])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map(Tracked::new)
            .map_err(|e| format!("starting {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        Ok(())
    }
}

/// Metadata answers: the broker is up.
async fn wait_ready(brokers: &str, timeout: Duration) -> Result<(), String> {
    let started = std::time::Instant::now();
    let mut last = String::new();
    while started.elapsed() < timeout {
        let brokers = brokers.to_owned();
        let probe = tokio::task::spawn_blocking(move || {
            let consumer: BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &brokers)
                .create()
                .map_err(|e| e.to_string())?;
            consumer
                .fetch_metadata(None, Duration::from_secs(2))
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?;
        match probe {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "broker {brokers} not ready after {timeout:?}: {last}"
    ))
}

impl Broker {
    /// Starts or connects through `provider`.
    pub async fn provide(provider: ProviderKind) -> Result<Self, String> {
        let broker = match provider {
            ProviderKind::External => {
                let var = external_url_var("kafka").replace("_URL", "_BROKERS");
                let brokers = std::env::var(&var).map_err(|_| format!("{var} is not set"))?;
                Self {
                    brokers,
                    info: ServerInfo {
                        name: "Kafka-protocol broker (external)".into(),
                        version: "as configured".into(),
                    },
                    keep: Keep::External,
                }
            }
            ProviderKind::Docker => {
                let port = free_port().map_err(|e| e.to_string())?;
                let env = [
                    ("KAFKA_NODE_ID", "1".to_owned()),
                    ("KAFKA_PROCESS_ROLES", "broker,controller".to_owned()),
                    (
                        "KAFKA_LISTENERS",
                        "PLAINTEXT://:9092,CONTROLLER://:9093".to_owned(),
                    ),
                    (
                        "KAFKA_ADVERTISED_LISTENERS",
                        format!("PLAINTEXT://127.0.0.1:{port}"),
                    ),
                    ("KAFKA_CONTROLLER_LISTENER_NAMES", "CONTROLLER".to_owned()),
                    (
                        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP",
                        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT".to_owned(),
                    ),
                    (
                        "KAFKA_CONTROLLER_QUORUM_VOTERS",
                        "1@localhost:9093".to_owned(),
                    ),
                    ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1".to_owned()),
                    ("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0".to_owned()),
                ];
                let started = start(&ContainerSpec {
                    service: "kafka",
                    port: 9092,
                    env: env.into_iter().collect(),
                    host_port: Some(port),
                    ..ContainerSpec::default()
                })
                .await?;
                Self {
                    brokers: started.address,
                    info: ServerInfo {
                        name: "Apache Kafka (KRaft)".into(),
                        version: crate::images::image("kafka").unwrap_or_default(),
                    },
                    keep: Keep::Docker(Box::new(started.container)),
                }
            }
            ProviderKind::Native => {
                let bin = match std::env::var_os("PICO_TANSU_BIN") {
                    Some(p) => std::path::PathBuf::from(p),
                    None => find_binary(&["tansu"], &[]).ok_or(
                        "no tansu binary: set PICO_TANSU_BIN or put tansu on PATH (cargo install tansu)",
                    )?,
                };
                let version = std::process::Command::new(&bin)
                    .arg("--version")
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                    .unwrap_or_else(|e| format!("unknown ({e})"));
                let mut tansu = Tansu {
                    bin,
                    dir: tempfile::Builder::new()
                        .prefix("pico-tansu-")
                        .tempdir()
                        .map_err(|e| e.to_string())?,
                    port: free_port().map_err(|e| e.to_string())?,
                    child: None,
                };
                tansu.spawn()?;
                Self {
                    brokers: format!("127.0.0.1:{}", tansu.port),
                    info: ServerInfo {
                        name: "tansu (SQLite storage)".into(),
                        version,
                    },
                    keep: Keep::Native(Box::new(tansu)),
                }
            }
            ProviderKind::Embedded => return Err("no Kafka broker runs in-process".into()),
        };
        wait_ready(&broker.brokers, Duration::from_secs(60)).await?;
        Ok(broker)
    }

    /// Name and version.
    pub fn info(&self) -> ServerInfo {
        self.info.clone()
    }

    /// Whether [`Broker::stop_for`] can take it down (not an external broker).
    pub fn can_restart(&self) -> bool {
        !matches!(self.keep, Keep::External)
    }

    /// Kills the broker, waits `down`, starts it again on the same port with its data.
    pub async fn stop_for(&mut self, down: Duration) -> Result<(), String> {
        match &mut self.keep {
            Keep::External => return Err("an external broker cannot be stopped".into()),
            Keep::Docker(c) => {
                c.stop().await.map_err(|e| e.to_string())?;
                tokio::time::sleep(down).await;
                c.start().await.map_err(|e| e.to_string())?;
            }
            Keep::Native(t) => {
                if let Some(mut child) = t.child.take() {
                    child.kill().await.map_err(|e| e.to_string())?;
                }
                tokio::time::sleep(down).await;
                t.spawn()?;
            }
        }
        wait_ready(&self.brokers, Duration::from_secs(60)).await
    }

    /// Creates `topic` with `partitions` partitions. A broker that has just come back from an
    /// outage (or is busy with cases of other sinks) may time the request out: it is sent
    /// again for up to [`TOPIC_CREATE_PATIENCE`], and a topic that exists by then (the timed-out
    /// request went through) counts as created. Any other refusal is returned at once.
    pub async fn create_topic(&self, topic: &str, partitions: i32) -> Result<(), String> {
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &self.brokers)
            .create()
            .map_err(|e| e.to_string())?;
        let started = std::time::Instant::now();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let error = match create_once(&admin, topic, partitions).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let retried = attempts > 1;
            match code_of(&error) {
                Some(RDKafkaErrorCode::TopicAlreadyExists) if retried => {
                    tracing::info!(topic, attempts, "topic created by a timed-out request");
                    return Ok(());
                }
                Some(code) if transient(code) && started.elapsed() < TOPIC_CREATE_PATIENCE => {
                    tracing::warn!(topic, attempts, %error, "creating the topic again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                _ => {
                    return Err(format!(
                        "creating {topic}: {error} (attempt {attempts}, after {:.0} s)",
                        started.elapsed().as_secs_f64()
                    ));
                }
            }
        }
    }

    /// Stops what the provider started.
    pub async fn stop(self) -> Result<(), String> {
        match self.keep {
            Keep::External => Ok(()),
            Keep::Docker(c) => c.rm().await.map_err(|e| e.to_string()),
            Keep::Native(mut t) => match t.child.take() {
                Some(mut child) => child.kill().await.map_err(|e| e.to_string()),
                None => Ok(()),
            },
        }
    }
}

/// How long [`Broker::create_topic`] keeps trying a broker that times out.
pub const TOPIC_CREATE_PATIENCE: Duration = Duration::from_secs(90);

/// One create request; the refusal of the request or of the topic itself as a [`KafkaError`].
async fn create_once(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
    partitions: i32,
) -> Result<(), KafkaError> {
    let results = admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new()
                .operation_timeout(Some(Duration::from_secs(10)))
                .request_timeout(Some(Duration::from_secs(15))),
        )
        .await?;
    for r in results {
        r.map_err(|(_, code)| KafkaError::AdminOp(code))?;
    }
    Ok(())
}

/// The broker's code in `error` (rdkafka gives none for an admin operation's own error).
fn code_of(error: &KafkaError) -> Option<RDKafkaErrorCode> {
    match error {
        KafkaError::AdminOp(code) => Some(*code),
        other => other.rdkafka_error_code(),
    }
}

/// Whether a create refusal may pass when the broker is asked again.
fn transient(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::OperationTimedOut
            | RDKafkaErrorCode::RequestTimedOut
            | RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::NotController
            | RDKafkaErrorCode::LeaderNotAvailable
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_out_create_is_asked_again_and_a_refused_one_is_not() {
        let timed_out = KafkaError::AdminOp(RDKafkaErrorCode::OperationTimedOut);
        let code = code_of(&timed_out);
        assert_eq!(code, Some(RDKafkaErrorCode::OperationTimedOut));
        assert!(code.is_some_and(transient));
        for refused in [
            RDKafkaErrorCode::TopicAlreadyExists,
            RDKafkaErrorCode::InvalidPartitions,
            RDKafkaErrorCode::TopicAuthorizationFailed,
        ] {
            assert!(!transient(refused), "{refused:?} must not be retried");
        }
        let request = KafkaError::MetadataFetch(RDKafkaErrorCode::BrokerTransportFailure);
        assert!(code_of(&request).is_some_and(transient));
    }
}
