//! Retries: how often and how long between ([`Retry`]), which answers are worth another try,
//! `Retry-After`, and [`send`], which tries a request again within its host's time budget
//! ([`super::peers`]).

use std::time::{Duration, Instant, SystemTime};

use reqwest::StatusCode;

use super::{error_chain, peers, redact, HttpError};
use crate::progress::Reporter;

/// How often, and how long between, a request is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first wait; it doubles with each attempt, up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl Retry {
    /// The wait before attempt `attempt + 1` (`attempt` ≥ 1 failed so far).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// The wait a response asks for (`Retry-After`, bounded), else the backoff.
    fn delay(&self, resp: &reqwest::blocking::Response, attempt: u32) -> Duration {
        resp.headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, SystemTime::now()))
            .map(|d| d.min(self.max_retry_after))
            .unwrap_or_else(|| self.backoff(attempt))
    }
}

/// Whether a response is worth trying again: 429 and the server errors a proxy or an
/// overloaded server gives.
pub fn retryable(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// `Retry-After`: seconds, or an HTTP date (IMF-fixdate, RFC 850 or asctime), as the wait from
/// `now` (zero for a date in the past).
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Sends `build()`'s request, trying again after transport errors, 429 and 5xx (waiting
/// [`Retry::backoff`] or the response's `Retry-After`) up to `retry.max_attempts`; each retry
/// goes to `reporter`. The response returned may be any other status, or the last retryable
/// one. The host's time budget ([`peers`]) bounds it: a host that cannot be resolved or
/// refuses is not tried again (nor is any later request to it, in this command), a host whose
/// silence has used up its budget is not asked again, and no retry waits past the budget. Each
/// wait (connect, every read) is capped by the budget, never the whole transfer: a large body
/// from a host that answers takes as long as it takes.
pub fn send(
    url: &str,
    build: impl Fn() -> reqwest::blocking::RequestBuilder,
    retry: &Retry,
    reporter: &dyn Reporter,
    peers: &peers::Peers,
) -> Result<reqwest::blocking::Response, HttpError> {
    let shown = redact(url);
    let host = peers::host_of(url);
    let mut attempt = 0;
    loop {
        peers.check(&host).map_err(|down| HttpError::Unreachable {
            url: shown.clone(),
            problem: format!("not tried again in this command after: {}", down.message),
            hint: peers::hint(down.failure, &host),
        })?;
        attempt += 1;
        let last = attempt >= retry.max_attempts;
        // No deadline on the request itself: reqwest's would cover the whole transfer and cut a
        // large body from a host that answers.
        let started = Instant::now();
        let sent = build().send();
        if sent.is_ok() {
            peers.answered(&host);
        }
        match sent {
            Ok(resp) if retryable(resp.status()) && !last => {
                let delay = retry.delay(&resp, attempt);
                let reason = format!("HTTP {}", resp.status());
                drop(resp);
                reporter.retrying(&format!("GET {shown}"), attempt, delay, &reason);
                std::thread::sleep(delay);
            }
            Ok(resp) => return Ok(resp),
            Err(e) => {
                let failure = peers::classify(&e);
                let message = error_chain(&e);
                let delay = retry.backoff(attempt);
                // A timed-out request's pause before its next attempt is part of its silence:
                // the attempts and their pauses together stay within the budget.
                let timeout = failure == peers::Failure::Timeout;
                let pause = if timeout { delay } else { Duration::ZERO };
                let left = peers.record(&host, failure, started.elapsed() + pause, &message);
                let again = failure.retryable() || timeout;
                if last || !again || left.is_zero() || (!timeout && delay >= left) {
                    let tries = if attempt > 1 {
                        format!(" (after {attempt} attempts)")
                    } else {
                        String::new()
                    };
                    return Err(HttpError::Unreachable {
                        url: shown,
                        problem: format!("{message}{tries}"),
                        hint: peers::hint(failure, &host),
                    });
                }
                reporter.retrying(&format!("GET {shown}"), attempt, delay, &message);
                std::thread::sleep(delay);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{fetch_bytes, Fetcher, HttpFetcher};

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now),
            Some(Duration::from_secs(120))
        );
        // RFC 850 and asctime, which HTTP/1.1 recipients must accept too.
        assert_eq!(
            retry_after("Sunday, 06-Nov-94 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            retry_after("Sun Nov  6 08:50:37 1994", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(retry_after("soon", now), None);
        let r = Retry::default();
        assert_eq!(r.backoff(1), Duration::from_millis(500));
        assert_eq!(r.backoff(2), Duration::from_secs(1));
        assert_eq!(r.backoff(30), Duration::from_secs(8));
    }

    /// A server that answers each connection with the next of `replies` (whole HTTP/1.1
    /// responses), then closes it: the faults (503 with `Retry-After`, 429) that a real
    /// archive does not produce on demand.
    fn serve(replies: Vec<&'static str>) -> (String, std::thread::JoinHandle<usize>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let mut served = 0;
            for reply in replies {
                let (mut conn, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                    line.clear();
                }
                conn.write_all(reply.as_bytes()).unwrap();
                served += 1;
            }
            served
        });
        (url, handle)
    }

    const BUSY: &str =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    const SLOW_DOWN: &str =
        "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

    #[test]
    fn busy_servers_are_tried_again_then_given_up_on() {
        let quick = Retry {
            max_attempts: 3,
            backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            max_retry_after: Duration::from_millis(5),
        };
        let f = HttpFetcher::new().unwrap().with_retry(quick);
        let (url, server) = serve(vec![BUSY, SLOW_DOWN, OK]);
        assert_eq!(fetch_bytes(&f, &url, 10).unwrap().unwrap(), b"ok");
        assert_eq!(server.join().unwrap(), 3);
        // Past the attempts, the last answer is the error.
        let (url, server) = serve(vec![BUSY, BUSY, BUSY]);
        let e = f.open(&url).err().unwrap();
        assert!(e.to_string().contains("HTTP status 503"), "{e}");
        assert_eq!(server.join().unwrap(), 3);
        // A refused connection is not tried again, and neither is its host afterwards: the
        // next request to it fails at once with the first failure, a listener there or not.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = f.open(&format!("http://127.0.0.1:{port}/x")).err().unwrap();
        let msg = e.to_string();
        assert!(
            matches!(e, HttpError::Unreachable { .. })
                && !msg.contains("attempts")
                && msg.contains("--offline --vendor DIR"),
            "{msg}"
        );
        let again = std::net::TcpListener::bind(("127.0.0.1", port));
        let e = f.open(&format!("http://127.0.0.1:{port}/y")).err().unwrap();
        assert!(
            e.to_string().contains("not tried again in this command"),
            "{e}"
        );
        drop(again);
    }
}
