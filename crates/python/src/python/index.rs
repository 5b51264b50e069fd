//! A package index client: the simple repository API, PEP 691 JSON first, PEP 503 HTML as the
//! fallback, read through the session's [`Fetcher`] (whose logins, from the index URL's
//! userinfo or netrc, also open the wheels the index links to on its host). Links are kept
//! without userinfo. Only used to resolve `requirements.txt` pins; a locked build never asks it.

use std::io::Read;

use crate::digest::Digest;
use crate::http::{self, Fetcher, HttpError};

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

/// The index client: listings through a [`Fetcher`], which brings the logins (the index
/// URL's userinfo, netrc), the retries and the offline rule.
pub struct IndexClient<'f> {
    fetcher: &'f dyn Fetcher,
}

impl<'f> IndexClient<'f> {
    pub fn new(fetcher: &'f dyn Fetcher) -> IndexClient<'f> {
        IndexClient { fetcher }
    }

    /// The files of `project` (a normalized name) on the index at `index` (the simple API
    /// root, without userinfo).
    pub fn files(&self, index: &str, project: &str) -> Result<Vec<IndexFile>, IndexError> {
        let page = format!("{}/{project}/", index.trim_end_matches('/'));
        let shown = http::redact(&page);
        let http = |reason: String| IndexError::Http {
            url: shown.clone(),
            reason,
        };
        let opened = self
            .fetcher
            .open_page(
                &page,
                "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1",
            )
            .map_err(|e| match e {
                HttpError::Fetch { reason, .. } => http(reason),
                e => http(e.to_string()),
            })?;
        let Some(found) = opened else {
            return Err(IndexError::NotFound {
                url: http::redact(index),
                project: project.to_string(),
            });
        };
        let mut body = String::new();
        found
            .body
            .take(MAX_PAGE)
            .read_to_string(&mut body)
            .map_err(|e| http(e.to_string()))?;
        if found.content_type.contains("json") {
            parse_json(&body, &found.url).map_err(|reason| IndexError::Parse {
                url: shown.clone(),
                what: "JSON (PEP 691)",
                reason,
            })
        } else {
            Ok(parse_html(&body, &found.url))
        }
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
            url: http::redact(&absolute(page, url)),
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
            url: http::redact(&absolute(page, url)),
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
    fn relative_links() {
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
