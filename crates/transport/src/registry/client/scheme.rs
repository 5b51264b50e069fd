//! Which scheme a registry is spoken to with. HTTPS, except: plain HTTP where the registries
//! file says `insecure-http`; and, for a loopback registry (localhost, 127.0.0.0/8, ::1) or any
//! registry under `--tls-verify=false`, plain HTTP when it does not speak TLS, as
//! go-containerregistry and skopeo do. That is found once per registry (an HTTPS request to
//! `/v2/`, then an HTTP one if it failed) and remembered.

use std::net::IpAddr;
use std::time::Duration;

use super::Client;
use crate::http::peers;

/// The longest wait of each probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `registry` (`host[:port]`) is this machine.
pub(super) fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => registry.rsplit_once(':').map_or(registry, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Client {
    /// `http` or `https` for `registry`.
    pub(super) fn scheme(&self, registry: &str) -> &'static str {
        let settings = self.settings(registry);
        if settings.insecure_http {
            return "http";
        }
        let tls_configured = settings.ca_file.is_some() || settings.cert_dir.is_some();
        let may_fall_back = (is_loopback(registry) || !self.config.tls_verify) && !tls_configured;
        if !may_fall_back || self.config.offline {
            return "https";
        }
        let known = self
            .schemes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(registry)
            .copied();
        if let Some(s) = known {
            return s;
        }
        // Probed without the lock held: other registries need not wait (a second probe of the
        // same one costs little).
        let found = self.probe(registry);
        self.schemes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(registry.to_string(), found);
        found
    }

    fn probe(&self, registry: &str) -> &'static str {
        let Ok(http) = self.http(registry) else {
            return "https";
        };
        let host = super::api_host(registry);
        // Each probe waits at most what is left of the host's budget; a silent one counts
        // against it (the real request then gets the rest), so a silent registry still fails
        // within the budget.
        let get = |scheme: &str| {
            let url = format!("{scheme}://{host}/v2/");
            let key = peers::host_of(&url);
            let wait = self.peers.check(&key).ok()?.min(PROBE_TIMEOUT);
            let started = std::time::Instant::now();
            let got = http.get(&url).timeout(wait).send();
            if got.is_ok() {
                self.peers.answered(&key);
            }
            if let Err(e) = &got {
                if peers::classify(e) == peers::Failure::Timeout {
                    let message = crate::http::error_chain(e);
                    self.peers
                        .record(&key, peers::Failure::Timeout, started.elapsed(), &message);
                }
            }
            Some(got)
        };
        match get("https") {
            Some(Ok(_)) | None => return "https",
            // It speaks TLS, with a certificate this machine does not trust: the error the
            // real request gives says what to do.
            Some(Err(e)) if crate::http::error_chain(&e).contains("certificate") => return "https",
            Some(Err(_)) => {}
        }
        // A registry's `/v2/` answers 200 or 401; a TLS server asked in plain HTTP says 400.
        match get("http") {
            Some(Ok(r)) if matches!(r.status().as_u16(), 200 | 401) => "http",
            _ => "https",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names() {
        for r in [
            "localhost:5000",
            "127.0.0.1:5055",
            "127.1.2.3",
            "[::1]:5000",
            "LOCALHOST",
        ] {
            assert!(is_loopback(r), "{r}");
        }
        for r in [
            "registry.example:5000",
            "10.0.0.1:5000",
            "[2001:db8::1]:5000",
            "docker.io",
        ] {
            assert!(!is_loopback(r), "{r}");
        }
    }
}
