//! The one HTTP layer: the client every fetcher starts from (rustls with the system's trust
//! store, `SSL_CERT_FILE` / `SSL_CERT_DIR`, proxies from the environment), bounded waits,
//! retries with exponential backoff and `Retry-After`, URLs with their credentials removed for
//! messages, and the [`Fetcher`] trait with [`HttpFetcher`], its implementation for `http://`,
//! `https://` and `file://` URLs. The registry client (which adds per-registry CAs, client
//! certificates and its own redirect and auth handling), the apt archives, the wheel index and
//! the interpreter archives all start here. Nothing here prints: retries go to a
//! [`Reporter`].

use std::io::{self, Read};
use std::time::Duration;

use reqwest::StatusCode;

use crate::progress::{Reporter, Silent};

mod credentials;
pub mod peers;
mod retry;

pub use self::credentials::{check_login, parse_netrc, split_userinfo, Credentials, Login};
pub use self::retry::{retry_after, retryable, send, Retry};

/// Longest wait for a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a response, and (the blocking client applies it to each read of the body,
/// not to the whole transfer) for each read: a large file on a slow link is fine, a stalled
/// one is not. Both waits are capped by the time budget ([`peers::budget`]).
pub const READ_TIMEOUT: Duration = Duration::from_secs(120);
pub const USER_AGENT: &str = "ocibuild";
/// A body that brings fewer than [`STALL_MIN_BYTES`] in any [`STALL_WINDOW`] has stalled:
/// a server trickling a byte every few seconds passes every per-read wait, not this one.
pub const STALL_WINDOW: Duration = Duration::from_secs(60);
pub const STALL_MIN_BYTES: u64 = 16 * 1024;

/// A response body held to a minimum rate: at least `min` bytes in every `window` (counted
/// from the first read), else a `TimedOut` error that names the host.
pub struct MinRate<R> {
    inner: R,
    host: String,
    window: Duration,
    min: u64,
    since: Option<std::time::Instant>,
    got: u64,
}

impl<R: Read> MinRate<R> {
    /// `url`'s body held to [`STALL_MIN_BYTES`] per [`STALL_WINDOW`].
    pub fn new(inner: R, url: &str) -> MinRate<R> {
        MinRate::with_rate(inner, url, STALL_WINDOW, STALL_MIN_BYTES)
    }

    pub fn with_rate(inner: R, url: &str, window: Duration, min: u64) -> MinRate<R> {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| redact(url));
        MinRate {
            inner,
            host,
            window,
            min,
            since: None,
            got: 0,
        }
    }
}

impl<R: Read> Read for MinRate<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        let n = self.inner.read(buf)?;
        self.got += n as u64;
        if n > 0 && since.elapsed() >= self.window {
            if self.got < self.min {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} stalled: {} bytes in {} s (at least {} expected)",
                        self.host,
                        self.got,
                        self.window.as_secs(),
                        self.min
                    ),
                ));
            }
            self.since = Some(std::time::Instant::now());
            self.got = 0;
        }
        Ok(n)
    }
}

/// Everything the HTTP layer can fail with. URLs are shown without their credentials.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot set up the HTTP client: {reason}")]
    Client { reason: String },
    #[error("fetching {url}: {reason}")]
    Fetch { url: String, reason: String },
    #[error("offline: {url} needs the network; it is not in the store or the vendor directory")]
    Offline { url: String },
    #[error("reading {url}")]
    Read {
        url: String,
        #[source]
        source: io::Error,
    },
    /// The host cannot be reached, refused, or stayed silent past its budget (see [`peers`]).
    #[error("fetching {url}: {problem}; {hint}")]
    Unreachable {
        url: String,
        problem: String,
        hint: String,
    },
    #[error("{url} is larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
}

/// The client builder every client starts from: bounded waits and the user agent. TLS is
/// rustls over the system's trust store (and `SSL_CERT_FILE` / `SSL_CERT_DIR`); proxies come
/// from `HTTPS_PROXY` / `NO_PROXY`.
pub fn client_builder() -> reqwest::blocking::ClientBuilder {
    reqwest::blocking::Client::builder()
        .connect_timeout(peers::capped(CONNECT_TIMEOUT))
        .timeout(peers::capped(READ_TIMEOUT))
        .user_agent(USER_AGENT)
}

/// A client from [`client_builder`].
pub fn client() -> Result<reqwest::blocking::Client, HttpError> {
    client_builder().build().map_err(|e| HttpError::Client {
        reason: error_chain(&e),
    })
}

/// A request's error with its causes, each once (reqwest's messages repeat their source's).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        src = cause.source();
    }
    s
}

/// `url` without the `user:password@` of its authority, for messages, locks and reports.
pub fn redact(url: &str) -> String {
    split_userinfo(url).0
}

/// `text` (an error body, a message) with what may be a secret replaced by `***`: each of
/// `secrets`, the token after `Basic` or `Bearer`, and the `user:password@` of a URL in it.
pub fn redact_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 3) {
        out = out.replace(s.as_str(), "***");
    }
    let mut result = String::with_capacity(out.len());
    let mut masking = false;
    for w in out.split_inclusive(|c: char| c.is_whitespace()) {
        let bare = w.trim_end();
        if masking && bare.is_empty() {
            // `Basic  token` or a line break before the token: still the token to come.
            result.push_str(w);
            continue;
        }
        if masking {
            // The token ends at a quote, comma or bracket a JSON or header echo puts after it.
            let end = bare
                .find(['"', '\'', ',', ';', ']', '}', ')'])
                .unwrap_or(bare.len());
            result.push_str("***");
            result.push_str(&redact_urls(&w[end..]));
            masking = false;
            continue;
        }
        masking = ends_with_word(bare, "basic") || ends_with_word(bare, "bearer");
        result.push_str(&redact_urls(w));
    }
    result
}

/// Whether `s` ends with `word` (ASCII, any case) that does not continue a longer word.
fn ends_with_word(s: &str, word: &str) -> bool {
    let (s, w) = (s.as_bytes(), word.as_bytes());
    s.len() >= w.len()
        && s[s.len() - w.len()..].eq_ignore_ascii_case(w)
        && (s.len() == w.len() || !s[s.len() - w.len() - 1].is_ascii_alphanumeric())
}

/// Every `scheme://user:password@` in `text` as `scheme://***@`.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'' | ' ') || c.is_whitespace())
            .unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(at) => {
                out.push_str("***");
                rest = &tail[at..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Opens URLs for streaming. `Ok(None)` means "not there" (HTTP 404/410, a missing file), so
/// callers can fall back (InRelease → Release, Packages.xz → Packages.gz) or say which input
/// is missing.
pub trait Fetcher: Send + Sync {
    fn open(&self, url: &str) -> Result<Option<Body<'_>>, HttpError>;

    /// `url` as a page asked for with `accept` (a package index's listing): the body with the
    /// URL it came from after redirects (for resolving relative links) and its content type.
    /// By default [`Fetcher::open`]'s body, from `url`, with no content type.
    fn open_page(&self, url: &str, accept: &str) -> Result<Option<Page<'_>>, HttpError> {
        let _ = accept;
        Ok(self.open(url)?.map(|body| Page {
            url: redact(url),
            content_type: String::new(),
            body,
        }))
    }
}

/// A body a [`Fetcher`] opened; it may borrow the fetcher (to report its progress).
pub type Body<'a> = Box<dyn Read + Send + 'a>;

/// A page [`Fetcher::open_page`] opened.
pub struct Page<'a> {
    /// Where the body came from, after redirects, without credentials.
    pub url: String,
    /// The `Content-Type`, empty when unknown.
    pub content_type: String,
    pub body: Body<'a>,
}

/// A download's body telling a [`Reporter`] how far it is: started when opened, finished at
/// its end or when dropped before it.
struct Reported<'r, R> {
    inner: R,
    reporter: &'r dyn Reporter,
    name: String,
    open: bool,
}

impl<'r, R: Read> Reported<'r, R> {
    fn new(inner: R, reporter: &'r dyn Reporter, url: &str, size: Option<u64>) -> Self {
        let name = file_name_of(url);
        reporter.file_started(&name, size);
        Reported {
            inner,
            reporter,
            name,
            open: true,
        }
    }

    fn finish(&mut self) {
        if std::mem::take(&mut self.open) {
            self.reporter.file_finished(&self.name);
        }
    }
}

impl<R: Read> Read for Reported<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.finish();
        } else {
            self.reporter.file_progress(&self.name, n as u64);
        }
        Ok(n)
    }
}

impl<R> Drop for Reported<'_, R> {
    fn drop(&mut self) {
        if std::mem::take(&mut self.open) {
            self.reporter.file_finished(&self.name);
        }
    }
}

/// The name a download is reported by: its URL without credentials, query or fragment
/// (unique among concurrent downloads, where the last segment, `Packages.xz`, is not).
fn file_name_of(url: &str) -> String {
    let clean = redact(url);
    clean.split(['?', '#']).next().unwrap_or(&clean).to_string()
}

/// Reads a whole (small) file, at most `limit` bytes.
pub fn fetch_bytes(
    fetcher: &dyn Fetcher,
    url: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, HttpError> {
    let Some(r) = fetcher.open(url)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|source| HttpError::Read {
            url: redact(url),
            source,
        })?;
    if buf.len() as u64 > limit {
        return Err(HttpError::TooLarge {
            url: redact(url),
            limit,
        });
    }
    Ok(Some(buf))
}

/// Whether `url` goes to the network (`http://`, `https://`) rather than to disk (`file://`,
/// read with [`open_file`]); any other scheme is an error. The one scheme rule every
/// [`Fetcher`] follows.
pub fn is_remote(url: &str) -> Result<bool, HttpError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(true)
    } else if url.starts_with("file://") {
        Ok(false)
    } else {
        Err(HttpError::Fetch {
            url: redact(url),
            reason: "only http://, https:// and file:// URLs are supported".into(),
        })
    }
}

/// A `file://` URL's file; `Ok(None)` when it is missing.
pub fn open_file(url: &str) -> Result<Option<Body<'static>>, HttpError> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    match fs_err::File::open(path) {
        Ok(f) => Ok(Some(Box::new(f))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HttpError::Read {
            url: url.to_string(),
            source,
        }),
    }
}

/// A response as a [`Fetcher`] answers: the body, `None` for 404 and 410, an error otherwise.
pub fn body_of(
    url: &str,
    resp: reqwest::blocking::Response,
) -> Result<Option<Body<'static>>, HttpError> {
    let status = resp.status();
    if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(HttpError::Fetch {
            url: redact(url),
            reason: format!("HTTP status {status}"),
        });
    }
    Ok(Some(Box::new(MinRate::new(resp, url))))
}

/// The fetcher of archives, index pages, .debs, wheels and interpreter archives: [`client`]
/// with [`Retry::default`], plus `file://`. Requests carry the login [`Credentials`] give for
/// their URL (none unless [`HttpFetcher::with_credentials`]). Retries go to its reporter
/// ([`Silent`] unless [`HttpFetcher::with_reporter`]).
pub struct HttpFetcher<'r> {
    client: reqwest::blocking::Client,
    retry: Retry,
    reporter: &'r dyn Reporter,
    /// `build --offline`: `http(s)://` URLs fail with [`HttpError::Offline`] before any
    /// connection; `file://` (local files) still reads.
    offline: bool,
    credentials: Credentials,
    /// The hosts given up on, and their silence (see [`peers`]).
    peers: peers::Peers,
}

impl HttpFetcher<'static> {
    pub fn new() -> Result<HttpFetcher<'static>, HttpError> {
        Ok(HttpFetcher {
            client: client()?,
            retry: Retry::default(),
            reporter: &Silent,
            offline: false,
            credentials: Credentials::default(),
            peers: peers::Peers::default(),
        })
    }

    /// A fetcher that refuses the network (every `http(s)://` URL); `file://` still reads.
    pub fn offline() -> Result<HttpFetcher<'static>, HttpError> {
        Ok(HttpFetcher {
            offline: true,
            ..HttpFetcher::new()?
        })
    }
}

impl<'r> HttpFetcher<'r> {
    /// The same fetcher retrying as `retry` says.
    pub fn with_retry(self, retry: Retry) -> HttpFetcher<'r> {
        HttpFetcher { retry, ..self }
    }

    /// The same fetcher telling `reporter` of its retries.
    pub fn with_reporter(self, reporter: &dyn Reporter) -> HttpFetcher<'_> {
        HttpFetcher {
            client: self.client,
            retry: self.retry,
            reporter,
            offline: self.offline,
            credentials: self.credentials,
            peers: self.peers,
        }
    }

    /// The same fetcher sending `credentials`' logins.
    pub fn with_credentials(self, credentials: Credentials) -> HttpFetcher<'r> {
        HttpFetcher {
            credentials,
            ..self
        }
    }

    /// GET `url` (any `user:password@` in it is taken out and sent as its login) with the
    /// login for it and `accept`, retried as [`send`] does.
    fn get(&self, url: &str, accept: &str) -> Result<reqwest::blocking::Response, HttpError> {
        let (clean, inline) = split_userinfo(url);
        if self.offline {
            return Err(HttpError::Offline { url: clean });
        }
        let login = inline
            .as_ref()
            .or_else(|| self.credentials.login_for(&clean));
        let auth = login.and_then(|l| {
            let mut v = reqwest::header::HeaderValue::from_str(&l.basic()).ok()?;
            v.set_sensitive(true);
            Some(v)
        });
        let build = || {
            let req = self
                .client
                .get(&clean)
                .header(reqwest::header::ACCEPT, accept);
            match &auth {
                // reqwest drops it on a redirect to another host.
                Some(a) => req.header(reqwest::header::AUTHORIZATION, a.clone()),
                None => req,
            }
        };
        let resp = send(&clean, build, &self.retry, self.reporter, &self.peers)?;
        let status = resp.status();
        let hint = match (status, auth.is_some()) {
            (StatusCode::UNAUTHORIZED, false) => {
                "the server asks for a login: put it in the recipe's URL \
                 (https://user:password@host/…) or in netrc ($NETRC, else ~/.netrc)"
            }
            (StatusCode::UNAUTHORIZED, true) => "the login sent for this host was refused",
            (StatusCode::FORBIDDEN, true) => "the login sent for this host has no access to it",
            _ => return Ok(resp),
        };
        Err(HttpError::Fetch {
            url: clean,
            reason: format!("HTTP status {status}: {hint}"),
        })
    }
}

impl Fetcher for HttpFetcher<'_> {
    fn open(&self, url: &str) -> Result<Option<Body<'_>>, HttpError> {
        if !is_remote(url)? {
            return open_file(url);
        }
        let resp = self.get(url, "*/*")?;
        let size = resp.content_length();
        Ok(body_of(url, resp)?
            .map(|body| Box::new(Reported::new(body, self.reporter, url, size)) as Body<'_>))
    }

    fn open_page(&self, url: &str, accept: &str) -> Result<Option<Page<'_>>, HttpError> {
        if !is_remote(url)? {
            return Ok(open_file(url)?.map(|body| Page {
                url: url.to_string(),
                content_type: String::new(),
                body,
            }));
        }
        let resp = self.get(url, accept)?;
        let final_url = redact(resp.url().as_str());
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let size = resp.content_length();
        Ok(body_of(url, resp)?.map(|body| Page {
            url: final_url,
            content_type,
            body: Box::new(Reported::new(body, self.reporter, url, size)),
        }))
    }
}

/// Joins a base URL and a relative path with exactly one `/`.
pub fn join_url(base: &str, rel: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        rel.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trickling_body_is_a_stall() {
        /// One byte per read, `pause` apart.
        struct Trickle(std::time::Duration, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1 == 0 {
                    return Ok(0);
                }
                std::thread::sleep(self.0);
                self.1 -= 1;
                buf[0] = b'x';
                Ok(1)
            }
        }
        let window = Duration::from_millis(100);
        let mut slow = MinRate::with_rate(
            Trickle(Duration::from_millis(20), 1000),
            "https://user:pw@slow.example/x",
            window,
            64,
        );
        let e = io::copy(&mut slow, &mut io::sink()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let msg = e.to_string();
        assert!(msg.starts_with("slow.example stalled: "), "{msg}");
        assert!(!msg.contains("pw"), "{msg}");
        // A body at the rate, however long, and a short one, pass.
        let data = vec![7u8; 100_000];
        let mut ok = MinRate::with_rate(&data[..], "https://h/x", window, 64);
        assert_eq!(io::copy(&mut ok, &mut io::sink()).unwrap(), 100_000);
        let mut short = MinRate::with_rate(Trickle(Duration::ZERO, 3), "https://h/x", window, 64);
        assert_eq!(io::copy(&mut short, &mut io::sink()).unwrap(), 3);
    }

    #[test]
    fn file_urls_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        fs_err::write(&p, b"hello").unwrap();
        let f = HttpFetcher::new().unwrap();
        let url = format!("file://{}", p.display());
        assert_eq!(fetch_bytes(&f, &url, 10).unwrap().unwrap(), b"hello");
        assert!(matches!(
            fetch_bytes(&f, &url, 3),
            Err(HttpError::TooLarge { .. })
        ));
        let missing = format!("file://{}/nope", dir.path().display());
        assert!(fetch_bytes(&f, &missing, 10).unwrap().is_none());
        assert!(f.open("ftp://x/y").is_err());
        let off = HttpFetcher::offline().unwrap();
        assert_eq!(fetch_bytes(&off, &url, 10).unwrap().unwrap(), b"hello");
        let e = off.open("http://127.0.0.1:9/x").err().unwrap();
        assert!(
            e.to_string().starts_with("offline: http://127.0.0.1:9/x"),
            "{e}"
        );
        assert_eq!(
            join_url("http://h/debian/", "/dists/x"),
            "http://h/debian/dists/x"
        );
    }

    #[test]
    fn credentials_in_text_are_masked() {
        let secrets = ["s3cret".to_string(), "ab".to_string()];
        assert_eq!(
            redact_text(
                r#"{"h":"Authorization: Bearer abc.def","u":"https://u:s3cret@h/x"} basic: BASIC zz; Basically fine, ab"#,
                &secrets
            ),
            r#"{"h":"Authorization: Bearer ***","u":"https://***@h/x"} basic: BASIC ***; Basically fine, ab"#
        );
        assert_eq!(
            redact_text("Basic  dXNlcjpw\r\nnext", &[]),
            "Basic  ***\r\nnext"
        );
        assert_eq!(
            redact_urls("see http://a:b@h:1/p and ftp://x@y"),
            "see http://***@h:1/p and ftp://***@y"
        );
        assert_eq!(
            redact_urls("mail me@host, https://h/a@b"),
            "mail me@host, https://h/a@b"
        );
    }

    #[test]
    fn credentials_never_reach_a_message() {
        assert_eq!(
            redact("https://user:pa%40ss@host:8443/simple/x/?q=a@b"),
            "https://host:8443/simple/x/?q=a@b"
        );
        assert_eq!(redact("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact("file:///tmp/x"), "file:///tmp/x");
        let f = HttpFetcher::offline().unwrap();
        let e = f.open("https://u:secret@127.0.0.1:9/x").err().unwrap();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
