//! What this command has learnt about the hosts it talks to, so that a silent or missing peer
//! fails fast and once:
//! - a time budget ([`budget`], 60 s unless the CLI sets another): the longest a host may
//!   keep a request waiting for an answer, all its attempts together, and the longest it may
//!   stay silent in a row over the command (the span from the start of the first wait that
//!   ended in a timeout to the end of the latest, per host, until the host answers: waits that
//!   overlap, parallel downloads timing out together, count once);
//! - a host that cannot be resolved or refuses connections, or has used up its budget, is
//!   remembered ([`check`]): every later request to it fails at once with the first failure,
//!   instead of each file being tried again with its own retries and lines.
//!
//! The registry client and every [`super::HttpFetcher`] keep a [`Peers`] (one per client:
//! a command has one of each); the budget is the process's, set once by the CLI.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default [`budget`]: a silent peer fails the command within a minute.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

/// The budget in milliseconds; 0 means [`DEFAULT_BUDGET`].
static BUDGET_MS: AtomicU64 = AtomicU64::new(0);

/// What a client has learnt of its hosts (`host:port`): the time spent in waits that timed
/// out since the host last answered, and why a host is given up on. Clones share it.
#[derive(Clone, Default)]
pub struct Peers(Arc<Mutex<BTreeMap<String, HostState>>>);

#[derive(Default)]
struct HostState {
    /// Since the host last answered: the start of the earliest wait that timed out and the end
    /// of the latest (its pause before the next attempt included).
    silent: Option<(Instant, Instant)>,
    down: Option<Down>,
}

impl HostState {
    fn silence(&self) -> Duration {
        self.silent.map_or(Duration::ZERO, |(from, to)| {
            to.saturating_duration_since(from)
        })
    }
}

/// A host given up on: its first decisive failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    pub failure: Failure,
    /// The failure's message, without credentials.
    pub message: String,
}

/// Sets the [`budget`] for this process (the CLI's `--net-timeout` / `OCIBUILD_NET_TIMEOUT`).
pub fn set_budget(budget: Duration) {
    let ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX).max(1);
    BUDGET_MS.store(ms, Ordering::Relaxed);
}

/// How long a host may keep this command waiting for an answer, all attempts included.
pub fn budget() -> Duration {
    match BUDGET_MS.load(Ordering::Relaxed) {
        0 => DEFAULT_BUDGET,
        ms => Duration::from_millis(ms),
    }
}

/// `wait` capped by the budget: a per-read or per-connect wait never outlasts it.
pub fn capped(wait: Duration) -> Duration {
    wait.min(budget())
}

/// The `host:port` a URL goes to (the key hosts are remembered by), without any login.
pub fn host_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port_or_known_default()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => super::redact(url),
        },
        Err(_) => super::redact(url),
    }
}

/// How a request failed, as far as retrying it and the hint go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The host name did not resolve (no DNS, no network, a wrong name).
    Resolve,
    /// Nothing listens there (or a firewall says so): connection refused / unreachable.
    Refused,
    /// No answer in time.
    Timeout,
    /// The TLS handshake or the certificate failed.
    Tls,
    Other,
}

impl Failure {
    /// Whether it is worth trying the same request again: a missing host or a refusal will
    /// not go away within seconds, and a timeout has used the budget up.
    pub fn retryable(self) -> bool {
        matches!(self, Failure::Other)
    }

    /// Whether the host is given up on for the rest of the command.
    fn gives_up_on_host(self) -> bool {
        matches!(self, Failure::Resolve | Failure::Refused)
    }
}

/// The [`Failure`] behind a transport error (reqwest's, or an I/O error under it).
pub fn classify(e: &(dyn std::error::Error + 'static)) -> Failure {
    let mut cur = Some(e);
    let mut text = String::new();
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::NetworkUnreachable
                | std::io::ErrorKind::HostUnreachable => return Failure::Refused,
                std::io::ErrorKind::TimedOut => return Failure::Timeout,
                _ => {}
            }
        }
        if let Some(r) = err.downcast_ref::<reqwest::Error>() {
            if r.is_timeout() {
                return Failure::Timeout;
            }
            // Its text is the URL (which could say `tls` or `ssl`); its sources say why.
            cur = err.source();
            continue;
        }
        text.push_str(&err.to_string().to_ascii_lowercase());
        text.push('\n');
        cur = err.source();
    }
    if text.contains("dns error")
        || text.contains("failed to lookup address")
        || text.contains("name or service not known")
        || text.contains("name does not resolve")
        || text.contains("temporary failure in name resolution")
    {
        Failure::Resolve
    } else if text.contains("connection refused") || text.contains("network is unreachable") {
        Failure::Refused
    } else if text.contains("timed out") || text.contains("deadline has elapsed") {
        Failure::Timeout
    } else if [
        "certificate",
        "tls",
        "handshake",
        "ssl",
        "corrupt message",
        "invalidcontenttype",
        "peer is incompatible",
        "peer misbehaved",
        "alert",
    ]
    .iter()
    .any(|w| text.contains(w))
    {
        Failure::Tls
    } else {
        Failure::Other
    }
}

impl Peers {
    /// The wait `host` is still allowed, or why it is given up on (its first decisive failure).
    pub fn check(&self, host: &str) -> Result<Duration, Down> {
        let hosts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match hosts.get(host) {
            Some(HostState {
                down: Some(why), ..
            }) => Err(why.clone()),
            Some(s) => Ok(budget().saturating_sub(s.silence())),
            None => Ok(budget()),
        }
    }

    /// Records a failed attempt on `host` after `waited`; `message` (without credentials) is what
    /// later requests to a host given up on are told. Returns the wait it has left (zero once it
    /// is given up on).
    pub fn record(
        &self,
        host: &str,
        failure: Failure,
        waited: Duration,
        message: &str,
    ) -> Duration {
        self.record_at(host, failure, waited, message, Instant::now())
    }

    /// [`Peers::record`] at `now`: the wait is taken to have ended then.
    fn record_at(
        &self,
        host: &str,
        failure: Failure,
        waited: Duration,
        message: &str,
        now: Instant,
    ) -> Duration {
        let mut hosts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = hosts.entry(host.to_string()).or_default();
        if failure == Failure::Timeout {
            let start = now.checked_sub(waited).unwrap_or(now);
            state.silent = Some(match state.silent {
                Some((from, to)) => (from.min(start), to.max(now)),
                None => (start, now),
            });
        }
        let used_up = state.silence() >= budget();
        if state.down.is_none() && (failure.gives_up_on_host() || used_up) {
            state.down = Some(Down {
                failure,
                message: message.to_string(),
            });
        }
        if state.down.is_some() {
            Duration::ZERO
        } else {
            budget().saturating_sub(state.silence())
        }
    }

    /// `host` answered (any status): its silence so far is forgiven. The budget bounds how long a
    /// host stays silent in a row, so a probe that timed out before the host answered costs the
    /// later requests nothing.
    pub fn answered(&self, host: &str) {
        let mut hosts = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(state) = hosts.get_mut(host) {
            state.silent = None;
        }
    }
}

/// What to do about a failure of this kind, for the end of its message.
pub fn hint(failure: Failure, host: &str) -> String {
    match failure {
        Failure::Resolve | Failure::Refused => format!(
            "check the network and that {host} is reachable (HTTPS_PROXY / NO_PROXY); to build \
             without a network, vendor the inputs where it is reachable (`ocibuild vendor \
             RECIPE --into DIR`) and build with `--offline --vendor DIR`"
        ),
        Failure::Timeout => format!(
            "{host} did not answer within {} s (all attempts together); check the host, or \
             give it longer with --net-timeout SECS (OCIBUILD_NET_TIMEOUT)",
            budget().as_secs_f64()
        ),
        Failure::Tls | Failure::Other => {
            format!("check the network (HTTPS_PROXY / NO_PROXY) and that {host} is reachable")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_refuse_are_given_up_on_and_silence_adds_up() {
        let peers = Peers::default();
        let refused = "peers-test-refused.invalid:80";
        assert_eq!(peers.check(refused), Ok(budget()));
        assert_eq!(
            peers.record(refused, Failure::Refused, Duration::ZERO, "refused!"),
            Duration::ZERO
        );
        let first = Down {
            failure: Failure::Refused,
            message: "refused!".into(),
        };
        assert_eq!(peers.check(refused), Err(first.clone()));
        // A later failure keeps the first message.
        peers.record(refused, Failure::Resolve, Duration::ZERO, "other");
        assert_eq!(peers.check(refused), Err(first));

        let silent = "peers-test-silent.invalid:80";
        let half = budget() / 2;
        let t0 = Instant::now() + budget();
        assert_eq!(
            peers.record_at(silent, Failure::Timeout, half, "silent", t0),
            budget().checked_sub(half).unwrap()
        );
        assert_eq!(peers.check(silent), Ok(budget().checked_sub(half).unwrap()));
        // Waits that overlap (parallel requests timing out together) count once.
        assert_eq!(
            peers.record_at(silent, Failure::Timeout, half, "silent", t0),
            budget().checked_sub(half).unwrap()
        );
        // One after the other, they add up.
        assert_eq!(
            peers.record_at(silent, Failure::Timeout, half, "silent", t0 + half),
            Duration::ZERO
        );
        assert_eq!(peers.check(silent).unwrap_err().failure, Failure::Timeout);
        // A host that answers after some silence gets its whole budget back.
        let slow = "peers-test-slow.invalid:80";
        peers.record(slow, Failure::Timeout, half, "slow");
        peers.answered(slow);
        assert_eq!(peers.check(slow), Ok(budget()));

        // Other failures are retried and do not count.
        let flaky = "peers-test-flaky.invalid:80";
        assert_eq!(peers.record(flaky, Failure::Other, half, "x"), budget());
        assert!(Failure::Other.retryable() && !Failure::Resolve.retryable());
    }

    #[test]
    fn failures_are_told_apart() {
        let io = |k| std::io::Error::new(k, "x");
        assert_eq!(
            classify(&io(std::io::ErrorKind::ConnectionRefused)),
            Failure::Refused
        );
        assert_eq!(
            classify(&io(std::io::ErrorKind::TimedOut)),
            Failure::Timeout
        );
        let text = |s: &str| std::io::Error::other(s.to_string());
        assert_eq!(
            classify(&text("dns error: failed to lookup address information")),
            Failure::Resolve
        );
        assert_eq!(
            classify(&text("invalid peer certificate: UnknownIssuer")),
            Failure::Tls
        );
        assert_eq!(classify(&text("connection reset")), Failure::Other);
        assert!(!hint(Failure::Resolve, "h.invalid:443").contains("tls-verify"));
        assert!(hint(Failure::Resolve, "h.invalid:443").contains("--offline --vendor DIR"));
        assert_eq!(host_of("https://u:p@h.example/x"), "h.example:443");
        assert_eq!(host_of("http://127.0.0.1:9/x"), "127.0.0.1:9");
    }
}
