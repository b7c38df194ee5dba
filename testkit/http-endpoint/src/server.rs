//! The axum server.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::debug;

use crate::state::{Answer, Inner, KeyEntry, Stats};

/// Whether the endpoint honours `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPolicy {
    /// As the draft says: replays answered from the key table, 409 in flight, 422 on mismatch.
    Honour,
    /// Every request is stored.
    Ignore,
}

/// How long an endpoint remembers an answered key by default: 24 hours, as public APIs that
/// take `Idempotency-Key` commonly keep them.
pub const KEY_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// Endpoint settings.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Key policy.
    pub policy: KeyPolicy,
    /// Time spent "processing" between accepting a request and storing it (widens the in-flight
    /// window).
    pub processing_delay: Duration,
    /// Largest element accepted, in bytes of its JSON; larger makes the request 413.
    pub max_element_bytes: usize,
    /// Largest request body read; larger makes the request 413 before it is parsed.
    pub max_body_bytes: usize,
    /// How long an answered key is remembered ([`KeyPolicy::Honour`]); a request with a key
    /// older than this is processed as new, as the draft allows a resource to expire keys.
    pub key_retention: Duration,
}

impl EndpointConfig {
    /// Settings with a key policy, no delay, elements up to 1 MiB, bodies up to 64 MiB, keys
    /// kept [`KEY_RETENTION`].
    pub fn new(policy: KeyPolicy) -> Self {
        Self {
            policy,
            processing_delay: Duration::ZERO,
            max_element_bytes: 1 << 20,
            max_body_bytes: 64 << 20,
            key_retention: KEY_RETENTION,
        }
    }
}

#[derive(Clone)]
struct Shared {
    config: Arc<EndpointConfig>,
    inner: Arc<Mutex<Inner>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running endpoint on 127.0.0.1.
pub struct Endpoint {
    addr: SocketAddr,
    shared: Shared,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl Endpoint {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start(config: EndpointConfig) -> io::Result<Self> {
        Self::start_on("127.0.0.1:0".parse().map_err(io::Error::other)?, config).await
    }

    /// Starts on `addr`.
    pub async fn start_on(addr: SocketAddr, config: EndpointConfig) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let max_body = config.max_body_bytes;
        let shared = Shared {
            config: Arc::new(config),
            inner: Arc::default(),
        };
        let app = Router::new()
            .route("/ingest", post(ingest))
            .route("/records", get(records))
            .route("/stats", get(stats))
            .layer(DefaultBodyLimit::max(max_body))
            .with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://addr/ingest`.
    pub fn ingest_url(&self) -> String {
        format!("http://{}/ingest", self.addr)
    }

    /// `http://addr` (add `/records`, `/stats`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The key policy.
    pub fn policy(&self) -> KeyPolicy {
        self.shared.config.policy
    }

    /// Stored elements, parsed (served verbatim at `GET /records`).
    pub fn stored(&self) -> Vec<serde_json::Value> {
        self.shared
            .lock()
            .records
            .iter()
            .filter_map(|raw| serde_json::from_str(raw.get()).ok())
            .collect()
    }

    /// Request counters (also served at `GET /stats`).
    pub fn stats(&self) -> Stats {
        self.shared.lock().stats.clone()
    }

    /// Moves the key clock `by` ahead (as if that much time had passed for the keys) and
    /// forgets the answered keys it carries past [`EndpointConfig::key_retention`]; how many.
    pub fn age_keys(&self, by: Duration) -> u64 {
        let mut inner = self.shared.lock();
        inner.aged += by;
        inner.expire_keys(self.shared.config.key_retention)
    }

    /// Stops the server.
    pub async fn stop(mut self) -> io::Result<()> {
        self.shutdown_now().await
    }

    async fn shutdown_now(&mut self) -> io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn answer(status: StatusCode, body: String, replayed: bool) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

fn error(status: StatusCode, message: &str) -> Response {
    answer(
        status,
        serde_json::json!({ "error": message }).to_string(),
        false,
    )
}

/// Parses the body into elements, or the answer refusing it.
fn parse_elements(
    headers: &HeaderMap,
    body: &[u8],
    max_element_bytes: usize,
) -> Result<Vec<Box<RawValue>>, (StatusCode, String)> {
    let ndjson = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-ndjson"));
    let raw: Vec<Box<RawValue>> = if ndjson {
        body.split(|b| *b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .enumerate()
            .map(|(i, line)| {
                serde_json::from_slice(line).map_err(|e| {
                    (
                        StatusCode::BAD_REQUEST,
                        format!("line {i} is not JSON: {e}"),
                    )
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("body is not a JSON array: {e}"),
            )
        })?
    };
    raw.into_iter()
        .enumerate()
        .map(|(i, element)| {
            if element.get().len() > max_element_bytes {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "element {i} is {} bytes, the limit is {max_element_bytes}",
                        element.get().len()
                    ),
                ));
            }
            match serde_json::from_str::<serde_json::Value>(element.get()) {
                Ok(serde_json::Value::Object(_)) => Ok(element),
                _ => Err((
                    StatusCode::BAD_REQUEST,
                    format!("element {i} is not a JSON object"),
                )),
            }
        })
        .collect()
}

async fn ingest(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let fingerprint: [u8; 32] = Sha256::digest(&body).into();
    shared.lock().stats.posts += 1;

    if shared.config.policy == KeyPolicy::Honour {
        let Some(key) = key.as_deref() else {
            shared.lock().stats.refused += 1;
            return error(
                StatusCode::BAD_REQUEST,
                "Idempotency-Key header is required",
            );
        };
        let mut inner = shared.lock();
        inner.expire_key(key, shared.config.key_retention);
        match inner.keys.get(key).cloned() {
            Some(entry) if entry.fingerprint() != &fingerprint => {
                inner.stats.key_mismatches += 1;
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Idempotency-Key was already used with another payload",
                );
            }
            Some(KeyEntry::InFlight { .. }) => {
                inner.stats.in_flight_conflicts += 1;
                return error(
                    StatusCode::CONFLICT,
                    "a request with this Idempotency-Key is being processed",
                );
            }
            Some(KeyEntry::Done { answer: a, .. }) => {
                inner.stats.replayed += 1;
                debug!(key, "replayed answer");
                let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
                return answer(status, a.body, true);
            }
            None => {
                inner
                    .keys
                    .insert(key.to_owned(), KeyEntry::InFlight { fingerprint });
            }
        }
    }

    let parsed = parse_elements(&headers, &body, shared.config.max_element_bytes);
    if !shared.config.processing_delay.is_zero() {
        tokio::time::sleep(shared.config.processing_delay).await;
    }
    let mut inner = shared.lock();
    let (status, body) = match parsed {
        Ok(elements) => {
            let n = elements.len();
            inner.records.extend(elements);
            inner.stats.stored_requests += 1;
            (
                StatusCode::CREATED,
                serde_json::json!({ "stored": n }).to_string(),
            )
        }
        Err((status, message)) => {
            inner.stats.refused += 1;
            // A refused request is not remembered under its key: the client may fix it.
            if let Some(key) = key.as_deref() {
                inner.keys.remove(key);
            }
            return error(status, &message);
        }
    };
    if let (KeyPolicy::Honour, Some(key)) = (shared.config.policy, key) {
        inner.keys.insert(
            key,
            KeyEntry::Done {
                fingerprint,
                answer: Answer {
                    status: status.as_u16(),
                    body: body.clone(),
                },
                at: std::time::Instant::now(),
            },
        );
    }
    answer(status, body, false)
}

async fn records(State(shared): State<Shared>) -> Response {
    let body = serde_json::to_string(&shared.lock().records).unwrap_or_else(|_| "[]".into());
    answer(StatusCode::OK, body, false)
}

async fn stats(State(shared): State<Shared>) -> Response {
    let body = serde_json::to_string(&shared.lock().stats).unwrap_or_else(|_| "{}".into());
    answer(StatusCode::OK, body, false)
}
