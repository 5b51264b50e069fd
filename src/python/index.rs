//! A package index client: the simple repository API, PEP 691 JSON first, PEP 503 HTML as the
//! fallback; credentials from the index URL's userinfo or netrc (`$NETRC`, else `~/.netrc`).
//! It also implements [`Fetcher`] so wheel downloads from a private index carry the same
//! credentials. Only used to resolve `requirements.txt` pins; a locked build never asks it.

use std::collections::BTreeMap;
use std::io::Read;

use base64::Engine as _;

use crate::digest::Digest;
use crate::http::{self, Fetcher, HttpError};
use crate::progress::Silent;

/// Largest index page read.
const MAX_PAGE: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("package index {url}: {reason}")]
    Http { url: String, reason: String },
    #[error("package index {url}: project `{project}` not found")]
    NotFound { url: String, project: String },
    #[error("package index {url}: cannot parse the {what} page: {reason}")]
    Parse {
        url: String,
        what: &'static str,
        reason: String,
    },
}

/// One file a project page lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexFile {
    pub filename: String,
    /// Absolute URL.
    pub url: String,
    pub sha256: Option<Digest>,
    pub size: Option<u64>,
    pub yanked: bool,
}

/// netrc entries: host → (login, password); `default` under the key "".
fn netrc() -> BTreeMap<String, (String, String)> {
    let path = std::env::var_os("NETRC")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".netrc")));
    let Some(text) = path.and_then(|p| fs_err::read_to_string(p).ok()) else {
        return BTreeMap::new();
    };
    parse_netrc(&text)
}

/// Parses netrc text (`machine H login L password P`, `default …`; `macdef` skipped).
pub fn parse_netrc(text: &str) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    let mut tokens = text.split_whitespace();
    let mut host: Option<String> = None;
    let (mut login, mut password) = (String::new(), String::new());
    let mut flush = |host: &mut Option<String>, login: &mut String, password: &mut String| {
        if let Some(h) = host.take() {
            out.insert(h, (std::mem::take(login), std::mem::take(password)));
        }
    };
    while let Some(t) = tokens.next() {
        match t {
            "machine" => {
                flush(&mut host, &mut login, &mut password);
                host = tokens.next().map(str::to_string);
            }
            "default" => {
                flush(&mut host, &mut login, &mut password);
                host = Some(String::new());
            }
            "login" => login = tokens.next().unwrap_or_default().to_string(),
            "password" => password = tokens.next().unwrap_or_default().to_string(),
            _ => {}
        }
    }
    flush(&mut host, &mut login, &mut password);
    out
}

/// Splits `https://user:pass@host/path` into the URL without userinfo and the credentials.
fn split_userinfo(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let (u, p) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            (
                format!("{scheme}://{host}{path}"),
                Some((u.to_string(), p.to_string())),
            )
        }
        None => (url.to_string(), None),
    }
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or(authority);
    host.split(':').next().unwrap_or(host)
}

/// The index client.
pub struct IndexClient {
    client: reqwest::blocking::Client,
    /// host → credentials (netrc, plus the index URL's userinfo, which wins).
    creds: BTreeMap<String, (String, String)>,
}

impl IndexClient {
    pub fn new(index_urls: &[&str]) -> Result<IndexClient, IndexError> {
        let client = http::client().map_err(|e| IndexError::Http {
            url: String::new(),
            reason: e.to_string(),
        })?;
        let mut creds = netrc();
        for u in index_urls {
            if let (_, Some(c)) = split_userinfo(u) {
                creds.insert(host_of(u).to_string(), c);
            }
        }
        Ok(IndexClient { client, creds })
    }

    /// GET through the HTTP layer (retries included), with the host's credentials.
    fn get(&self, url: &str, accept: &str) -> Result<reqwest::blocking::Response, HttpError> {
        let (clean, inline) = split_userinfo(url);
        let host = host_of(&clean);
        let auth = inline
            .or_else(|| self.creds.get(host).cloned())
            .or_else(|| self.creds.get("").cloned())
            .map(|(u, p)| {
                let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
                format!("Basic {token}")
            });
        let build = || {
            let req = self.client.get(&clean).header("Accept", accept);
            match &auth {
                Some(a) => req.header("Authorization", a),
                None => req,
            }
        };
        http::send(&clean, build, &http::Retry::default(), &Silent)
    }

    /// The files of `project` (a normalized name) on the index at `index` (the simple API root).
    pub fn files(&self, index: &str, project: &str) -> Result<Vec<IndexFile>, IndexError> {
        let page = format!("{}/{project}/", index.trim_end_matches('/'));
        let shown = split_userinfo(&page).0;
        let http = |reason: String| IndexError::Http {
            url: shown.clone(),
            reason,
        };
        let resp = self
            .get(
                &page,
                "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1",
            )
            .map_err(|e| match e {
                HttpError::Fetch { reason, .. } => http(reason),
                e => http(e.to_string()),
            })?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(IndexError::NotFound {
                url: split_userinfo(index).0,
                project: project.to_string(),
            });
        }
        if !status.is_success() {
            return Err(http(format!("HTTP status {status}")));
        }
        let final_url = resp.url().to_string();
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = String::new();
        resp.take(MAX_PAGE)
            .read_to_string(&mut body)
            .map_err(|e| http(e.to_string()))?;
        if ctype.contains("json") {
            parse_json(&body, &final_url).map_err(|reason| IndexError::Parse {
                url: shown.clone(),
                what: "JSON (PEP 691)",
                reason,
            })
        } else {
            Ok(parse_html(&body, &final_url))
        }
    }
}

impl Fetcher for IndexClient {
    fn open(&self, url: &str) -> Result<Option<Box<dyn Read + Send>>, HttpError> {
        if !http::is_remote(url)? {
            return http::open_file(url);
        }
        let resp = self.get(url, "*/*")?;
        http::body_of(url, resp)
    }
}

/// Resolves `href` against the page URL.
fn absolute(base: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let host_end = rest.find('/').unwrap_or(rest.len());
    let origin = format!("{scheme}://{}", &rest[..host_end]);
    if let Some(p) = href.strip_prefix("//") {
        return format!("{scheme}://{p}");
    }
    if href.starts_with('/') {
        return format!("{origin}{href}");
    }
    let dir = match base.rfind('/') {
        Some(i) if i >= origin.len() => &base[..=i],
        _ => return format!("{origin}/{href}"),
    };
    let mut parts: Vec<&str> = dir[origin.len()..]
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    for seg in href.split('/') {
        match seg {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            s => parts.push(s),
        }
    }
    format!("{origin}/{}", parts.join("/"))
}

fn parse_json(body: &str, page: &str) -> Result<Vec<IndexFile>, String> {
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
    let files = v["files"].as_array().ok_or("no `files` array")?;
    let mut out = Vec::new();
    for f in files {
        let filename = f["filename"].as_str().ok_or("a file without `filename`")?;
        let url = f["url"].as_str().ok_or("a file without `url`")?;
        let sha256 = f["hashes"]["sha256"]
            .as_str()
            .and_then(|h| format!("sha256:{h}").parse().ok());
        out.push(IndexFile {
            filename: filename.to_string(),
            url: absolute(page, url),
            sha256,
            size: f["size"].as_u64(),
            yanked: !matches!(
                f["yanked"],
                serde_json::Value::Null | serde_json::Value::Bool(false)
            ),
        });
    }
    Ok(out)
}

/// PEP 503 anchors: `<a href="URL#sha256=HEX" data-yanked>FILENAME</a>`.
fn parse_html(body: &str, page: &str) -> Vec<IndexFile> {
    let mut out = Vec::new();
    let lower = body.to_ascii_lowercase();
    let mut pos = 0;
    while let Some(i) = lower[pos..].find("<a ") {
        let start = pos + i;
        let Some(tag_end) = lower[start..].find('>').map(|j| start + j) else {
            break;
        };
        let Some(close) = lower[tag_end..].find("</a>").map(|j| tag_end + j) else {
            break;
        };
        let tag = &body[start..tag_end];
        let text = body[tag_end + 1..close].trim();
        pos = close + 4;
        let Some(href) = attr(tag, "href") else {
            continue;
        };
        let href = unescape(&href);
        let (url, frag) = href.split_once('#').unwrap_or((&href, ""));
        let sha256 = frag
            .strip_prefix("sha256=")
            .and_then(|h| format!("sha256:{h}").parse().ok());
        out.push(IndexFile {
            filename: unescape(text),
            url: absolute(page, url),
            sha256,
            size: None,
            yanked: tag.to_ascii_lowercase().contains("data-yanked"),
        });
    }
    out
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let i = lower.find(&format!("{name}="))? + name.len() + 1;
    let rest = &tag[i..];
    let quote = rest.chars().next()?;
    if quote == '"' || quote == '\'' {
        let end = rest[1..].find(quote)? + 1;
        Some(rest[1..end].to_string())
    } else {
        Some(rest.split(|c: char| c.is_whitespace()).next()?.to_string())
    }
}

fn unescape(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netrc_userinfo_and_urls() {
        let n =
            parse_netrc("machine pkgs.example login u password p\ndefault login d password q\n");
        assert_eq!(n["pkgs.example"], ("u".into(), "p".into()));
        assert_eq!(n[""], ("d".into(), "q".into()));
        assert_eq!(
            split_userinfo("https://a:b@h.example:8080/simple"),
            (
                "https://h.example:8080/simple".into(),
                Some(("a".into(), "b".into()))
            )
        );
        assert_eq!(host_of("https://a:b@h.example:8080/simple"), "h.example");
        assert_eq!(
            absolute("https://h/simple/x/", "../../files/x.whl"),
            "https://h/files/x.whl"
        );
        assert_eq!(
            absolute("https://h/simple/x/", "/f/x.whl"),
            "https://h/f/x.whl"
        );
        assert_eq!(
            absolute("https://h/simple/x/", "https://o/x.whl"),
            "https://o/x.whl"
        );
    }

    #[test]
    fn json_and_html_pages() {
        let hex = "a".repeat(64);
        let j = format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"x","files":[{{"filename":"x-1-py3-none-any.whl","url":"../../f/x-1-py3-none-any.whl","hashes":{{"sha256":"{hex}"}},"size":10,"yanked":false}},{{"filename":"x-0.tar.gz","url":"https://o/x-0.tar.gz","hashes":{{}},"yanked":"bad"}}]}}"#
        );
        let files = parse_json(&j, "https://h/simple/x/").unwrap();
        assert_eq!(files[0].url, "https://h/f/x-1-py3-none-any.whl");
        assert_eq!(files[0].size, Some(10));
        assert!(files[0].sha256.is_some() && !files[0].yanked);
        assert!(files[1].yanked && files[1].sha256.is_none());
        let h = format!(
            "<html><body><a href=\"../../f/x-1-py3-none-any.whl#sha256={hex}\">x-1-py3-none-any.whl</a>\n<A HREF='x-2.whl' data-yanked=\"\">x-2.whl</A></body></html>"
        );
        let files = parse_html(&h, "https://h/simple/x/");
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].filename, "x-1-py3-none-any.whl");
        assert!(files[0].sha256.is_some());
        assert_eq!(files[1].url, "https://h/simple/x/x-2.whl");
        assert!(files[1].yanked);
    }
}
