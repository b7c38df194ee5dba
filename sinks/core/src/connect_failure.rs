//! Failures to reach a server that no retry heals, told apart by the text clients give them.

/// What to change when reaching a server failed in a way no retry heals, judged from the text
/// of the error with its sources ([`crate::kit::error_chain`]): a host name that does not exist, or
/// TLS spoken on one side only or to a certificate the client does not trust. `None` for a
/// failure that may heal: a refused or reset connection, a timeout, a resolver that did not
/// answer ("Temporary failure in name resolution").
pub fn unhealable_connect_failure(text: &str) -> Option<&'static str> {
    // getaddrinfo's EAI_NONAME and EAI_NODATA (glibc, macOS, Windows wording).
    const UNKNOWN_HOST: [&str; 4] = [
        "Name or service not known",
        "nodename nor servname provided",
        "No such host is known",
        "No address associated with hostname",
    ];
    if UNKNOWN_HOST.iter().any(|t| text.contains(t)) {
        return Some("the host name does not resolve: check the host in the url");
    }
    // rustls reading a plain-text answer as a TLS record: an https URL to a port that does
    // not speak TLS.
    if text.contains("received corrupt message of type InvalidContentType") {
        return Some(
            "the server at this port does not speak TLS: connect without TLS (http://, \
             tls=false) or to the server's TLS port",
        );
    }
    if text.contains("invalid peer certificate") {
        return Some(
            "the server's TLS certificate is not trusted (or names another host): give the \
             client the CA that signed it, or connect with the host name the certificate names",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_hosts_and_tls_mismatches_are_told_from_failures_that_heal() {
        let unknown = "error sending request: client error (Connect): dns error: failed to \
                       lookup address information: Name or service not known";
        assert!(unhealable_connect_failure(unknown).is_some_and(|a| a.contains("host")));
        let plain = "client error (Connect): received corrupt message of type InvalidContentType";
        assert!(unhealable_connect_failure(plain).is_some_and(|a| a.contains("without TLS")));
        let cert = "invalid peer certificate: UnknownIssuer";
        assert!(unhealable_connect_failure(cert).is_some_and(|a| a.contains("CA")));
        for heals in [
            "failed to lookup address information: Temporary failure in name resolution",
            "tcp connect error: Connection refused (os error 111)",
            "connection reset by peer",
            "operation timed out",
        ] {
            assert_eq!(unhealable_connect_failure(heals), None, "{heals}");
        }
    }
}
