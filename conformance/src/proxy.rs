//! [`FaultProxy`]: a TCP proxy between a sink and its destination that can lose
//! acknowledgements, refuse connections, add latency, or cut requests and answers at random.
//!
//! Losing an acknowledgement: when the client sends bytes containing the trigger (or any bytes,
//! without one), the proxy forwards them, waits for the destination's first answer bytes — the
//! destination has processed the request by then — and cuts both sides without forwarding them.
//! The sink sees a broken connection; the destination has committed. (A destination that
//! answers before it applies the request — a task queue — may apply it later: scenarios wait
//! for it to settle before judging, see [`crate::target::Destination::settle`].)
//!
//! Random faults ([`FaultMode::Flaky`]) work on turns of the conversation, whatever the
//! protocol: bytes from the client after the destination last spoke start a request, bytes from
//! the destination after the client last spoke start an answer. Each request and each answer
//! is cut (the connection closed on both sides) with its own probability.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};
use tracing::debug;

use crate::fault::{FaultMode, FaultState, FaultStats, FaultSwitch};

struct Shared {
    upstream: SocketAddr,
    faults: FaultState,
    connections: Mutex<Vec<AbortHandle>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn hosts_and_ports_of_urls() {
        let hp = |u| host_port(u).ok();
        assert_eq!(
            hp("http://127.0.0.1:8123/x?y"),
            Some(("127.0.0.1".into(), 8123))
        );
        assert_eq!(
            hp("https://user:pw@example.com/a"),
            Some(("example.com".into(), 443))
        );
        assert_eq!(hp("http://[::1]:9000"), Some(("::1".into(), 9000)));
        assert_eq!(hp("ws://h"), Some(("h".into(), 80)));
        assert_eq!(hp("nonsense"), None);
    }
}

/// A running proxy on 127.0.0.1 in front of one upstream address.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy on a free port in front of `upstream`.
    pub async fn start(upstream: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            faults: FaultState::default(),
            connections: Mutex::new(Vec::new()),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Self {
            addr,
            shared,
            accept,
        })
    }

    /// The address sinks connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The destination behind the proxy.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// Cuts every open connection; returns how many were still open.
    fn cut_all(&self) -> u64 {
        let mut cut = 0;
        for handle in lock(&self.shared.connections).drain(..) {
            if !handle.is_finished() {
                cut += 1;
            }
            handle.abort();
        }
        cut
    }
}

impl FaultSwitch for FaultProxy {
    fn set(&self, mode: FaultMode) {
        let refuse = mode == FaultMode::Refuse;
        self.shared.faults.set(mode);
        if refuse {
            // Open (pooled) connections would bypass the outage: cut them too.
            let cut = self.cut_all();
            self.shared.faults.count(|s| s.refused += cut);
        }
    }

    fn stats(&self) -> FaultStats {
        self.shared.faults.stats()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = self.cut_all();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if shared.faults.mode() == FaultMode::Refuse {
            shared.faults.count(|s| s.refused += 1);
            drop(client);
            continue;
        }
        let task = tokio::spawn(connection(client, shared.clone()));
        let mut conns = lock(&shared.connections);
        conns.retain(|h| !h.is_finished());
        conns.push(task.abort_handle());
    }
}

async fn connection(client: TcpStream, shared: Arc<Shared>) {
    let Ok(server) = TcpStream::connect(shared.upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let turns = Turns::default();
    // Both directions run in this one task, so aborting it (an outage) stops both.
    let up = client_to_server(client_read, server_write, &shared, &turns);
    let down = server_to_client(server_read, client_write, &shared, &turns);
    tokio::pin!(up);
    tokio::pin!(down);
    let flow = tokio::select! {
        flow = &mut down => flow,
        flow = &mut up => match flow {
            Flow::Cut => Flow::Cut,
            Flow::Closed => down.await,
        },
    };
    if flow == Flow::Cut {
        debug!("connection cut by a fault");
    }
}

#[derive(PartialEq, Eq)]
enum Flow {
    Closed,
    Cut,
}

/// Who spoke last on a connection, and whether the next answer is to be cut.
#[derive(Default)]
struct Turns {
    /// The client spoke last (its bytes since are part of one request).
    client_spoke: AtomicBool,
    /// The answer to the current request is to be cut (a lost acknowledgement).
    cut_answer: AtomicBool,
}

async fn delay(shared: &Shared) {
    let millis = match shared.faults.mode() {
        FaultMode::Latency { millis } => millis,
        _ => 0,
    };
    if millis > 0 {
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }
}

async fn client_to_server(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: &Shared,
    turns: &Turns,
) -> Flow {
    let mut buf = vec![0u8; 64 * 1024];
    // The end of the previous chunk, so a trigger split across two reads is still seen.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        delay(shared).await;
        let new_request = !turns.client_spoke.swap(true, Ordering::SeqCst);
        if new_request && shared.faults.take_request_cut() {
            return Flow::Cut;
        }
        let mut cut_request = false;
        shared.faults.with_mode(|mode| match mode {
            FaultMode::LoseNextAck { trigger } => {
                let hit = match trigger {
                    None => true,
                    Some(t) => {
                        let mut window = std::mem::take(&mut tail);
                        window.extend_from_slice(&buf[..n]);
                        let found = contains(&window, t);
                        let keep = t.len().saturating_sub(1).min(window.len());
                        tail = window[window.len() - keep..].to_vec();
                        found
                    }
                };
                if hit {
                    turns.cut_answer.store(true, Ordering::SeqCst);
                    *mode = FaultMode::Pass;
                }
            }
            FaultMode::Flaky(flaky) if new_request => {
                if flaky.cut_request() {
                    cut_request = true;
                } else if flaky.cut_answer() {
                    turns.cut_answer.store(true, Ordering::SeqCst);
                }
            }
            _ => {}
        });
        if cut_request {
            shared.faults.count(|s| s.requests_cut += 1);
            return Flow::Cut;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        if new_request {
            shared.faults.count(|s| s.requests_sent += 1);
        }
    }
    let _ = to.shutdown().await;
    Flow::Closed
}

async fn server_to_client(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    shared: &Shared,
    turns: &Turns,
) -> Flow {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        turns.client_spoke.store(false, Ordering::SeqCst);
        if turns.cut_answer.load(Ordering::SeqCst) && !is_interim_http(&buf[..n]) {
            shared.faults.count(|s| s.acks_lost += 1);
            return Flow::Cut;
        }
        delay(shared).await;
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
    Flow::Closed
}

/// A chunk holding only an HTTP `1xx` interim answer (`100 Continue`): not the acknowledgement,
/// which follows it.
fn is_interim_http(chunk: &[u8]) -> bool {
    chunk.starts_with(b"HTTP/1.1 1")
        && chunk
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .is_some_and(|end| end + 4 == chunk.len())
}

/// The address of the host and port of `url` (`scheme://[user@]host[:port]/…`; the port
/// defaults to 80 for http, 443 for https): where a client of `url` connects.
pub async fn resolve_url(url: &str) -> Result<SocketAddr, String> {
    let (host, port) = host_port(url)?;
    tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("{url}: {e}"))?
        .next()
        .ok_or_else(|| format!("{url} does not resolve"))
}

/// The host and port of a URL.
fn host_port(url: &str) -> Result<(String, u16), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url}: not a URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let default_port = match scheme {
        "https" | "wss" => 443,
        _ => 80,
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse() {
            Ok(port) => (h, port),
            Err(_) => (authority, default_port),
        },
        _ => (authority, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("{url}: no host"));
    }
    Ok((host.to_owned(), port))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// The proxies a destination puts in front of its server, one per sink, kept alive as long as
/// the destination (a sink keeps connecting through its proxy after the scenario set it up).
#[derive(Default)]
pub struct FaultProxies(tokio::sync::Mutex<Vec<Arc<FaultProxy>>>);

impl FaultProxies {
    /// A new proxy in front of `upstream`.
    pub async fn in_front_of(&self, upstream: SocketAddr) -> Result<Arc<FaultProxy>, String> {
        let proxy = Arc::new(
            FaultProxy::start(upstream)
                .await
                .map_err(|e| format!("starting the fault proxy: {e}"))?,
        );
        self.0.lock().await.push(proxy.clone());
        Ok(proxy)
    }

    /// A new proxy in front of the host and port of `url` (`scheme://[user@]host[:port]/…`;
    /// the port defaults to 80 for http, 443 for https).
    pub async fn in_front_of_url(&self, url: &str) -> Result<Arc<FaultProxy>, String> {
        self.in_front_of(resolve_url(url).await?).await
    }

    /// Stops every proxy.
    pub async fn clear(&self) {
        self.0.lock().await.clear();
    }
}
