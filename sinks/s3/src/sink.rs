//! [`S3Sink`].

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::primitives::ByteStream;
use pico_sink::identity::{BatchId, Scope};
use pico_sink::kit::Envelope;
use pico_sink::{Batch, Claim, Description, Outcome, Scenario, Sink, SinkError, WriteReport};
use tracing::debug;

use crate::config::{S3SinkConfig, extension};
use crate::errors::{S3Failure, classify};

/// What the sink knows of one partition's objects.
#[derive(Debug, Clone, Default)]
struct Watermark {
    /// Highest `last` offset of any object seen.
    last: Option<u64>,
    /// The greatest key listed so far (LIST resumes after it).
    after_key: Option<String>,
}

impl Watermark {
    /// Takes in what another look at the same partition found (marks only grow).
    fn merge(&mut self, other: &Watermark) {
        self.last = self.last.max(other.last);
        self.after_key = self.after_key.clone().max(other.after_key.clone());
    }
}

/// Writes one object per batch; see the crate docs. One instance serves every partition: the
/// per-partition watermarks are cached behind a lock that is never held across a request.
pub struct S3Sink {
    config: S3SinkConfig,
    client: Client,
    /// The store, as errors name it: the endpoint's scheme, host and port, or what stands for
    /// it when the client is the caller's.
    server: String,
    marks: Mutex<HashMap<(String, u32), Watermark>>,
}

impl S3Sink {
    /// Builds a client from the configuration.
    pub fn new(config: S3SinkConfig) -> Result<Self, SinkError> {
        let (key, secret) = match &config.credentials {
            Some((key, secret)) => (key.clone(), secret.expose().to_owned()),
            None => (
                std::env::var("AWS_ACCESS_KEY_ID").map_err(|_| {
                    SinkError::fatal("no credentials: set them in the config or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
                })?,
                std::env::var("AWS_SECRET_ACCESS_KEY").map_err(|_| {
                    SinkError::fatal("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
                })?,
            ),
        };
        let mut builder = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(config.region.clone()))
            .credentials_provider(Credentials::new(key, secret, None, None, "pico-sink-s3"))
            .force_path_style(config.force_path_style)
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
            .timeout_config(
                aws_sdk_s3::config::timeout::TimeoutConfig::builder()
                    .operation_timeout(config.request_timeout)
                    .build(),
            );
        if let Some(endpoint) = &config.endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        let server = match &config.endpoint {
            Some(endpoint) => pico_sink::kit::url_origin(endpoint),
            None => format!("AWS S3 in {}", config.region),
        };
        Ok(Self::build(
            Client::from_conf(builder.build()),
            server,
            config,
        ))
    }

    /// Uses a client built elsewhere (e.g. with `aws-config`'s credential chain), from the
    /// [`aws_sdk_s3`](crate::aws_sdk_s3) this crate re-exports. Its endpoint, region and
    /// credentials are the client's: an `endpoint` or `credentials` in the configuration would
    /// not be used, and are refused (`S3SinkConfig::new(bucket, prefix)` leaves them out).
    pub fn with_client(client: Client, config: S3SinkConfig) -> Result<Self, SinkError> {
        let instead = "S3SinkConfig::new(bucket, prefix)";
        if let Some(endpoint) = &config.endpoint {
            pico_sink::kit::refuse_unused_setting(
                "endpoint",
                endpoint,
                "S3Sink::with_client",
                instead,
            )?;
        }
        if let Some((key, _)) = &config.credentials {
            pico_sink::kit::refuse_unused_setting(
                "credentials, for the access key",
                key,
                "S3Sink::with_client",
                instead,
            )?;
        }
        let server = "the endpoint of the client given to with_client".to_owned();
        Ok(Self::build(client, server, config))
    }

    /// A request named for messages, with the bucket and the store it went to.
    fn what(&self, request: &str) -> String {
        format!(
            "{request} (bucket {} at {})",
            self.config.bucket, self.server
        )
    }

    fn build(client: Client, server: String, config: S3SinkConfig) -> Self {
        Self {
            config,
            client,
            server,
            marks: Mutex::new(HashMap::new()),
        }
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u32), Watermark>> {
        self.marks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Raises a partition's cached watermark with what was just learned.
    fn remember(&self, topic: &str, partition: u32, seen: &Watermark) -> Option<u64> {
        let mut marks = self.marks();
        let mark = marks.entry((topic.to_owned(), partition)).or_default();
        mark.merge(seen);
        mark.last
    }

    fn object_key(&self, id: &BatchId) -> String {
        format!(
            "{}{}{}",
            self.config.key_prefix(),
            self.config.scope.s3_batch_key(id),
            extension(self.config.gzip)
        )
    }

    /// Refreshes the watermark of a partition by listing its objects after the last known key.
    async fn refresh(&self, topic: &str, partition: u32) -> Result<Option<u64>, SinkError> {
        let prefix = format!(
            "{}{}",
            self.config.key_prefix(),
            self.config.scope.s3_partition_prefix(topic, partition)
        );
        let mut mark = self
            .marks()
            .get(&(topic.to_owned(), partition))
            .cloned()
            .unwrap_or_default();
        let mut token = None;
        loop {
            let mut req = self
                .client
                .list_objects_v2()
                .bucket(&self.config.bucket)
                .prefix(&prefix);
            if let Some(after) = &mark.after_key {
                req = req.start_after(after);
            }
            if let Some(t) = token.take() {
                req = req.continuation_token(t);
            }
            let page = match req.send().await {
                Ok(p) => p,
                Err(e) => {
                    let status = e.raw_response().map(|r| r.status().as_u16());
                    return Err(match classify(&e, status, &self.what("LIST")) {
                        S3Failure::NoSuchBucket => SinkError::fatal(format!(
                            "bucket {} does not exist: create it or set create_bucket",
                            self.config.bucket
                        )),
                        S3Failure::AlreadyExists => SinkError::retryable("LIST answered 412"),
                        S3Failure::Other(e) => e,
                    });
                }
            };
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                let name = key.rsplit('/').next().unwrap_or_default();
                if let Some((_, last)) = Scope::parse_s3_range(name) {
                    mark.last = Some(mark.last.map_or(last, |l| l.max(last)));
                }
                if mark.after_key.as_deref().is_none_or(|a| key > a) {
                    mark.after_key = Some(key.to_owned());
                }
            }
            match page.next_continuation_token() {
                Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_owned()),
                _ => break,
            }
        }
        Ok(self.remember(topic, partition, &mark))
    }

    fn body(&self, batch: &Batch) -> Result<Vec<u8>, SinkError> {
        let mut lines = Vec::with_capacity(batch.len() * 128);
        for r in batch.records() {
            serde_json::to_writer(&mut lines, &Envelope::from_record(&self.config.scope, r))
                .map_err(|e| SinkError::fatal(format!("serializing {}", r.id)).with_source(e))?;
            lines.push(b'\n');
        }
        if !self.config.gzip {
            return Ok(lines);
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&lines)
            .and_then(|()| gz.finish())
            .map_err(|e| SinkError::fatal("gzip").with_source(e))
    }
}

#[async_trait]
impl Sink for S3Sink {
    async fn open(&self) -> Result<(), SinkError> {
        if !self.config.create_bucket {
            return Ok(());
        }
        match self
            .client
            .create_bucket()
            .bucket(&self.config.bucket)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let code = aws_sdk_s3::error::ProvideErrorMetadata::code(&e)
                    .unwrap_or_default()
                    .to_owned();
                if matches!(
                    code.as_str(),
                    "BucketAlreadyOwnedByYou" | "BucketAlreadyExists"
                ) {
                    Ok(())
                } else {
                    let status = e.raw_response().map(|r| r.status().as_u16());
                    Err(match classify(&e, status, &self.what("CreateBucket")) {
                        S3Failure::Other(err) => err,
                        _ => SinkError::retryable(format!("CreateBucket: {code}")),
                    })
                }
            }
        }
    }

    async fn consume(&self, batch: &Batch) -> Result<Outcome, SinkError> {
        let watermark = self.refresh(batch.topic(), batch.partition()).await?;
        let tail = match watermark {
            Some(w) => batch.after(w),
            None => Some(batch.clone()),
        };
        let Some(tail) = tail else {
            debug!(batch = %batch.id(), ?watermark, "already below the watermark");
            return Ok(WriteReport::already_present(batch.len()).into());
        };
        let skipped = (batch.len() - tail.len()) as u64;
        let key = self.object_key(tail.id());
        let body = self.body(&tail)?;
        let put = self
            .client
            .put_object()
            .bucket(&self.config.bucket)
            .key(&key)
            .if_none_match("*")
            .content_type(if self.config.gzip {
                "application/gzip"
            } else {
                "application/x-ndjson"
            })
            .body(ByteStream::from(body))
            .send()
            .await;
        let report = match put {
            Ok(_) => WriteReport {
                written: tail.len() as u64,
                already_present: skipped,
            },
            Err(e) => {
                let status = e.raw_response().map(|r| r.status().as_u16());
                match classify(&e, status, &self.what(&format!("PUT {key}"))) {
                    S3Failure::AlreadyExists => WriteReport::already_present(batch.len()),
                    S3Failure::NoSuchBucket => {
                        return Err(SinkError::fatal(format!(
                            "bucket {} does not exist: create it or set create_bucket",
                            self.config.bucket
                        )));
                    }
                    S3Failure::Other(err) => return Err(err),
                }
            }
        };
        self.remember(
            batch.topic(),
            batch.partition(),
            &Watermark {
                last: Some(tail.id().last),
                after_key: None,
            },
        );
        debug!(
            key,
            written = report.written,
            present = report.already_present,
            "object stored"
        );
        Ok(report.into())
    }

    fn describe(&self) -> Description {
        Description::new(
            "s3",
            "one object per batch, key [prefix/][ns/]topic/partition/first-last from the BatchId; \
             PutObject If-None-Match: * (412 = already written); LIST watermark, only offsets \
             above it are written",
            Claim::NoVisibleDuplicate,
        )
        .telling_already_present()
        .with_claim(
            Scenario::ZombieWriter,
            Description::measured("two writers can both LIST before either PUTs"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callers_client() -> Client {
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("eu-west-1"))
            .build();
        Client::from_conf(conf)
    }

    #[test]
    fn an_endpoint_or_credentials_beside_the_callers_client_are_refused() {
        assert!(S3Sink::with_client(callers_client(), S3SinkConfig::new("b", "p")).is_ok());
        let mut config = S3SinkConfig::new("b", "p");
        config.endpoint = Some("http://minio.internal:9000".into());
        let e = S3Sink::with_client(callers_client(), config).err().unwrap();
        println!("{e}");
        assert!(
            e.is_fatal() && e.to_string().contains("minio.internal"),
            "{e}"
        );
        let config = S3SinkConfig::new("b", "p").with_credentials("AKIAEXAMPLE", "hunter2");
        let e = S3Sink::with_client(callers_client(), config).err().unwrap();
        assert!(e.to_string().contains("AKIAEXAMPLE"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
