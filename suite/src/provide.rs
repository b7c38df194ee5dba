//! Where our targets' servers come from on a machine: the environment (`PICO_<SINK>_URL`),
//! a Docker-compatible engine, a binary on the machine, a free port.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pico_conformance::provider::ProviderKind;

mod port;

pub use port::{free_port, free_ports};

/// The providers of a destination with a start recipe on this machine, in the order `auto`
/// tries them: a server the user names, a container, a native process.
pub const ANY_SERVER: [ProviderKind; 3] = [
    ProviderKind::External,
    ProviderKind::Docker,
    ProviderKind::Native,
];

/// The environment variable naming an external server for `sink` (`PICO_POSTGRES_URL`).
pub fn external_url_var(sink: &str) -> String {
    format!("PICO_{}_URL", sink.to_ascii_uppercase().replace('-', "_"))
}

/// The external server's URL for `sink`, or why there is none.
pub fn external_url(sink: &str) -> Result<String, String> {
    let var = external_url_var(sink);
    std::env::var(&var).map_err(|_| format!("{var} is not set"))
}

/// Where the Docker-compatible engine is, if one answers `/_ping`.
pub fn docker_engine() -> Result<String, String> {
    let host =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    let Some(path) = host.strip_prefix("unix://") else {
        return Err(format!("DOCKER_HOST={host}: only unix sockets are probed"));
    };
    ping_unix(Path::new(path))
        .map(|_| host.clone())
        .map_err(|e| format!("no Docker-compatible engine at {host} ({e})"))
}

#[cfg(unix)]
fn ping_unix(path: &Path) -> Result<(), String> {
    use std::os::unix::net::UnixStream;
    let mut s = UnixStream::connect(path).map_err(|e| e.to_string())?;
    let timeout = Some(Duration::from_secs(2));
    s.set_read_timeout(timeout).map_err(|e| e.to_string())?;
    s.write_all(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    if answer.ends_with("OK") {
        Ok(())
    } else {
        Err("engine did not answer OK to /_ping".into())
    }
}

#[cfg(not(unix))]
fn ping_unix(_: &Path) -> Result<(), String> {
    Err("unix sockets are not available on this platform".into())
}

/// The first of `names` found on `PATH` or in `extra_dirs`.
pub fn find_binary(names: &[&str], extra_dirs: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain(extra_dirs.iter().map(PathBuf::from))
        .collect();
    names.iter().find_map(|name| {
        dirs.iter()
            .map(|d| d.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// Provides through the first of external, docker, native that works; the error lists why each
/// could not.
pub async fn first_available<S, F, Fut>(provide: F) -> Result<S, String>
where
    F: Fn(ProviderKind) -> Fut,
    Fut: std::future::Future<Output = Result<S, String>>,
{
    let mut reasons = Vec::new();
    for kind in [
        ProviderKind::External,
        ProviderKind::Docker,
        ProviderKind::Native,
    ] {
        match provide(kind).await {
            Ok(s) => return Ok(s),
            Err(e) => reasons.push(format!("{kind}: {e}")),
        }
    }
    Err(reasons.join("; "))
}
