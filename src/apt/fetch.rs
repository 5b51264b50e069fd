//! Fetching archive files: the [`Fetcher`] trait, and [`HttpFetcher`], its implementation for
//! `http://`, `https://` (reqwest, blocking, rustls) and `file://` URLs.

use std::io::{self, Read};
use std::time::Duration;

use super::AptError;

/// Opens URLs for streaming. `Ok(None)` means "not there" (HTTP 404/410, a missing file), so
/// callers can fall back (InRelease → Release, Packages.xz → Packages.gz) or say which
/// package is missing.
pub trait Fetcher: Send + Sync {
    fn open(&self, url: &str) -> Result<Option<Box<dyn Read + Send>>, AptError>;
}

/// Reads a whole (small) file, at most `limit` bytes.
pub fn fetch_bytes(
    fetcher: &dyn Fetcher,
    url: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, AptError> {
    let Some(r) = fetcher.open(url)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|source| AptError::Read {
            url: url.to_string(),
            source,
        })?;
    if buf.len() as u64 > limit {
        return Err(AptError::TooLarge {
            url: url.to_string(),
            limit,
        });
    }
    Ok(Some(buf))
}

/// The real fetcher: reqwest's blocking client over rustls, plus `file://`.
pub struct HttpFetcher {
    client: reqwest::blocking::Client,
    /// `build --offline`: `http(s)://` URLs fail with [`AptError::Offline`] before any
    /// connection; `file://` (local files) still reads.
    offline: bool,
}

impl HttpFetcher {
    pub fn new() -> Result<HttpFetcher, AptError> {
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // The blocking client applies this to each read of the body too, not to the whole
            // transfer: a large .deb on a slow link is fine, a stalled one is not.
            .timeout(Duration::from_secs(120))
            .user_agent("ocibuild")
            .build()
            .map_err(|e| AptError::Fetch {
                url: String::new(),
                reason: format!("cannot create the HTTP client: {e}"),
            })?;
        Ok(HttpFetcher {
            client,
            offline: false,
        })
    }

    /// A fetcher that refuses the network (every `http(s)://` URL); `file://` still reads.
    pub fn offline() -> Result<HttpFetcher, AptError> {
        Ok(HttpFetcher {
            offline: true,
            ..HttpFetcher::new()?
        })
    }
}

impl Fetcher for HttpFetcher {
    fn open(&self, url: &str) -> Result<Option<Box<dyn Read + Send>>, AptError> {
        if let Some(path) = url.strip_prefix("file://") {
            return match fs_err::File::open(path) {
                Ok(f) => Ok(Some(Box::new(f))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(source) => Err(AptError::Read {
                    url: url.to_string(),
                    source,
                }),
            };
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(AptError::Fetch {
                url: url.to_string(),
                reason: "only http://, https:// and file:// URLs are supported".into(),
            });
        }
        if self.offline {
            return Err(AptError::Offline {
                url: url.to_string(),
            });
        }
        let resp = self.client.get(url).send().map_err(|e| AptError::Fetch {
            url: url.to_string(),
            reason: error_chain(&e),
        })?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(AptError::Fetch {
                url: url.to_string(),
                reason: format!("HTTP status {status}"),
            });
        }
        Ok(Some(Box::new(resp)))
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Joins an archive base URL and a relative path with exactly one `/`.
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
    fn file_urls_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        fs_err::write(&p, b"hello").unwrap();
        let f = HttpFetcher::new().unwrap();
        let url = format!("file://{}", p.display());
        assert_eq!(fetch_bytes(&f, &url, 10).unwrap().unwrap(), b"hello");
        assert!(matches!(
            fetch_bytes(&f, &url, 3),
            Err(AptError::TooLarge { .. })
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
}
