//! Free ports for the servers and runtimes the suites start, chosen where no outgoing
//! connection can take them.
//!
//! A port found by binding port 0 lies in the system's ephemeral range, the range it also
//! hands out as the local port of every outgoing connection. A process that binds its port
//! later, or again after a restart (a killed runtime's `/metrics`, a broker brought back on its
//! port), finds it taken if any connection opened meanwhile got it as its local port, and fails
//! with "address in use". A CI run showed what that leaves: a crash case whose member, killed
//! and held down for 8 s, was started 34 times more and never scraped again (37 starts of 3
//! slots, where 4 are usual; 3 lives scraped). So a port is picked at random below the
//! ephemeral range, where neither `connect` nor a bind of port 0 takes one, and checked by
//! binding it. Two suites running at once pick from the same range: each port handed out is
//! claimed by a file named for it in a directory every process shares (the claim of a process
//! that has ended is taken over), so no port goes out twice while its first owner lives.

use std::collections::BTreeSet;
use std::io::{Error, ErrorKind, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// The lowest port handed out: above the well-known and most fixed server ports.
const LOWEST: u16 = 15_000;

/// How many random picks before giving up.
const ATTEMPTS: usize = 500;

/// Where the system's ephemeral range starts when it does not say (Linux's default; other
/// systems start theirs higher).
const EPHEMERAL_DEFAULT: u16 = 32_768;

/// Where a system without `/proc` says nothing of a claim's owner, how long a claim holds.
const CLAIM_HOLDS: Duration = Duration::from_secs(24 * 3600);

/// Every port this process handed out: a port picked but not yet bound by its server looks
/// free, and must not go to a second one.
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A free TCP port on 127.0.0.1 that no outgoing connection can take (see the module's docs).
pub fn free_port() -> std::io::Result<u16> {
    free_ports(1)
}

/// The first of `count` consecutive free ports, each as [`free_port`] gives one.
pub fn free_ports(count: u16) -> std::io::Result<u16> {
    let below = ephemeral_start();
    let Some(highest_first) = below.checked_sub(count).filter(|h| *h > LOWEST) else {
        return Err(Error::new(
            ErrorKind::AddrNotAvailable,
            format!("no room for {count} ports between {LOWEST} and the ephemeral range ({below})"),
        ));
    };
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    for _ in 0..ATTEMPTS {
        let first = fastrand::u16(LOWEST..highest_first);
        let run = first..first + count;
        if run.clone().all(|p| !handed_out.contains(&p) && bindable(p)) && claim_all(run.clone()) {
            handed_out.extend(run);
            return Ok(first);
        }
    }
    Err(Error::new(
        ErrorKind::AddrNotAvailable,
        format!("no {count} consecutive free ports in {LOWEST}..{below} after {ATTEMPTS} picks"),
    ))
}

/// Claims every port of `run` for this process, or none of them.
fn claim_all(run: std::ops::Range<u16>) -> bool {
    let dir = claims();
    if std::fs::create_dir_all(&dir).is_err() {
        // Nowhere to claim: this process's own record still keeps its ports apart.
        return true;
    }
    let mut claimed = Vec::new();
    for port in run {
        let file = dir.join(port.to_string());
        if !claim(&file) {
            for file in claimed {
                let _ = std::fs::remove_file(file);
            }
            return false;
        }
        claimed.push(file);
    }
    true
}

/// The directory of the claims, shared by every process of the machine's user.
fn claims() -> PathBuf {
    std::env::temp_dir().join("pico-sinks-ports")
}

/// Claims `file`'s port: creates the file with this process's id, or takes it over from a
/// process that has ended.
fn claim(file: &Path) -> bool {
    let mine = std::process::id().to_string();
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file);
    match created {
        Ok(mut f) => f.write_all(mine.as_bytes()).is_ok(),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            !owner_lives(file) && std::fs::write(file, mine).is_ok()
        }
        Err(_) => false,
    }
}

/// Whether the process that claimed `file` still runs (where the system cannot tell, whether
/// the claim is younger than [`CLAIM_HOLDS`]). A claim without an owner yet is one being
/// written: it lives.
fn owner_lives(file: &Path) -> bool {
    let owner = std::fs::read_to_string(file).unwrap_or_default();
    let owner = owner.trim();
    if owner.is_empty() {
        return true;
    }
    if Path::new("/proc/self").exists() {
        return Path::new("/proc").join(owner).exists();
    }
    std::fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| SystemTime::now().duration_since(at).ok())
        .is_none_or(|age| age < CLAIM_HOLDS)
}

/// Whether 127.0.0.1:`port` can be bound now.
fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The first port of the system's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_DEFAULT)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::net::TcpStream;

    use super::*;

    #[test]
    fn ports_lie_below_the_ephemeral_range_are_free_and_go_out_once() {
        let below = ephemeral_start();
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        assert!(
            ports.iter().all(|p| (LOWEST..below).contains(p)),
            "{ports:?}"
        );
        assert_eq!(ports.iter().collect::<BTreeSet<_>>().len(), ports.len());
        let first = free_ports(3).unwrap();
        let held: Vec<TcpListener> = (first..first + 3)
            .map(|p| TcpListener::bind(("127.0.0.1", p)).unwrap())
            .collect();
        assert_eq!(held.len(), 3);
    }

    #[test]
    fn a_port_claimed_by_a_live_process_is_not_claimed_again_one_of_an_ended_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("20000");
        // This process's own claim, and one of process 1 (init: it lives).
        assert!(claim(&file));
        assert!(!claim(&file));
        std::fs::write(&file, "1").unwrap();
        assert!(!claim(&file));
        // A claim whose creator has not written its id yet.
        std::fs::write(&file, "").unwrap();
        assert!(!claim(&file));
        // A process id no process has (above the kernel's largest).
        std::fs::write(&file, "4194305").unwrap();
        assert!(claim(&file));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            std::process::id().to_string()
        );
    }

    /// The fault the choice avoids: an outgoing connection's local port is an ephemeral one,
    /// and a listener cannot bind it while the connection lives.
    #[test]
    fn a_port_an_outgoing_connection_took_cannot_be_listened_on() {
        let server = TcpListener::bind(("127.0.0.1", free_port().unwrap())).unwrap();
        let client = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let taken = client.local_addr().unwrap().port();
        assert!(taken >= ephemeral_start(), "outgoing local port {taken}");
        let refused = TcpListener::bind(("127.0.0.1", taken)).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::AddrInUse, "{refused}");
    }
}
